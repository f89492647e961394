package organizations_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/ops/oauth"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/wire"
)

// Text an activity stores and later requests read (a user's e-mail address on every request of
// the user, a policy's notes on every decision of its organization, an OAuth identity in a
// lookup key, a client secret on every OAuth 2.0 login) is bounded, and a longer value is a 400
// naming the field and the limit. Before: an e-mail address of 300 bytes was stored (RFC 5321
// allows 254), and policy notes of 100 KB, OIDC claims of 4 KB and client secrets of 64 KB had
// no bound but the 2 MiB body (an OAuth identity over 2,704 bytes is a 500 on PostgreSQL, whose
// index refuses the key). The names, notes and e-mail addresses of invitations, session
// profiles and MFA policies were bounded already (wire.CheckText) and are checked here too.
func TestStoredTextBounds(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	uid := created.UserID
	p := root.MustSubmit("create_policy", "ACTIVITY_TYPE_CREATE_POLICY_V3", map[string]any{"policyName": "p",
		"effect": "EFFECT_ALLOW", "condition": "true", "notes": ""})
	policyID := p.Result("createPolicyResult", "policyId")
	long := func(n int) string { return strings.Repeat("a", n) }
	email := long(wire.MaxEmailBytes-len("@example.com")+1) + "@example.com"
	claims := func(iss, sub, aud string) map[string]any {
		return map[string]any{"userId": uid, "oauthProviders": []any{map[string]any{"providerName": "p",
			"oidcClaims": map[string]any{"iss": iss, "sub": sub, "aud": aud}}}}
	}
	const iss, sub, aud = "https://accounts.google.com", "110169484474386276334", "web-app.apps.googleusercontent.com"
	for _, tc := range []struct {
		name, op, typ string
		params        map[string]any
		field, limit  string
	}{
		{"a user's e-mail address", "create_users", "ACTIVITY_TYPE_CREATE_USERS_V4",
			map[string]any{"users": []any{userWith("userEmail", email)}},
			"parameters.users[0].userEmail", "at most 254 bytes"},
		{"a new e-mail address", "update_user_email", "ACTIVITY_TYPE_UPDATE_USER_EMAIL",
			map[string]any{"userId": uid, "userEmail": email}, "parameters.userEmail", "at most 254 bytes"},
		{"an invitation's e-mail address", "create_invitations", "ACTIVITY_TYPE_CREATE_INVITATIONS",
			map[string]any{"invitations": []any{map[string]any{"receiverUserName": "r", "receiverUserEmail": email,
				"receiverUserTags": []string{}, "accessType": "ACCESS_TYPE_API", "senderUserId": uid}}},
			"parameters.invitations[0].receiverUserEmail", "at most 254 bytes"},
		{"a policy's new notes", "update_policy", "ACTIVITY_TYPE_UPDATE_POLICY_V2",
			map[string]any{"policyId": policyID, "policyNotes": long(100_000)}, "parameters.policyNotes",
			"at most 8192 bytes"},
		{"an OIDC issuer", "create_oauth_providers", "ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2",
			claims("https://"+long(directory.MaxOIDCIssuerBytes), sub, aud),
			"parameters.oauthProviders[0].oidcClaims.iss", "at most 512 bytes"},
		{"an OIDC subject", "create_oauth_providers", "ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2",
			claims(iss, long(4096), aud), "parameters.oauthProviders[0].oidcClaims.sub", "at most 255 bytes"},
		{"an OIDC audience", "create_oauth_providers", "ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2",
			claims(iss, sub, long(directory.MaxOIDCAudienceBytes+1)),
			"parameters.oauthProviders[0].oidcClaims.aud", "at most 512 bytes"},
		{"an OAuth 2.0 client secret", "create_oauth2_credential", "ACTIVITY_TYPE_CREATE_OAUTH2_CREDENTIAL",
			map[string]any{"provider": "OAUTH2_PROVIDER_DISCORD", "clientId": "c",
				"encryptedClientSecret": servertest.EncryptToServer(t, h.Server.PublicKeys().ClientSecretsPublicKey,
					long(64<<10))},
			"parameters.encryptedClientSecret", "at most 4096 bytes"},
		// Bounded before, by the engine's check of free text.
		{"an invitation's name", "create_invitations", "ACTIVITY_TYPE_CREATE_INVITATIONS",
			map[string]any{"invitations": []any{map[string]any{"receiverUserName": long(257),
				"receiverUserEmail": "r@example.com", "receiverUserTags": []string{}, "accessType": "ACCESS_TYPE_API",
				"senderUserId": uid}}},
			"parameters.invitations[0].receiverUserName", "at most 256 bytes"},
		{"a session profile's name", "create_session_profile", "ACTIVITY_TYPE_CREATE_SESSION_PROFILE",
			map[string]any{"sessionProfileName": long(257), "scope": "true"},
			"parameters.sessionProfileName", "at most 256 bytes"},
		{"a session profile's notes", "create_session_profile", "ACTIVITY_TYPE_CREATE_SESSION_PROFILE",
			map[string]any{"sessionProfileName": "s", "scope": "true", "notes": long(8193)},
			"parameters.notes", "at most 8192 bytes"},
		{"an MFA policy's notes", "create_mfa_policy", "ACTIVITY_TYPE_CREATE_MFA_POLICY",
			map[string]any{"userId": uid, "mfaPolicyName": "m", "condition": "true", "order": 0, "notes": long(8193),
				"requiredAuthenticationMethods": []any{mfaStep(1)}},
			"parameters.notes", "at most 8192 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.Advance(time.Millisecond)
			r := root.Submit(tc.op, tc.typ, tc.params)
			servertest.WantError(t, r, http.StatusBadRequest, 3, tc.field)
			if !strings.Contains(r.Str("message"), tc.limit) {
				t.Fatalf("message %q does not name %q", r.Str("message"), tc.limit)
			}
		})
	}
	// At the limits, each is taken.
	h.Advance(time.Millisecond)
	atLimit := long(wire.MaxEmailBytes-len("@example.com")) + "@example.com"
	servertest.MustOK(t, root.Submit("update_user_email", "ACTIVITY_TYPE_UPDATE_USER_EMAIL",
		map[string]any{"userId": uid, "userEmail": atLimit}))
	servertest.MustOK(t, root.Submit("update_policy", "ACTIVITY_TYPE_UPDATE_POLICY_V2",
		map[string]any{"policyId": policyID, "policyNotes": long(wire.MaxTextBytes)}))
	servertest.MustOK(t, root.Submit("create_oauth_providers", "ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2",
		claims("https://"+long(directory.MaxOIDCIssuerBytes-len("https://")), long(directory.MaxOIDCSubjectBytes),
			long(directory.MaxOIDCAudienceBytes))))
	servertest.MustOK(t, root.Submit("create_oauth2_credential", "ACTIVITY_TYPE_CREATE_OAUTH2_CREDENTIAL",
		map[string]any{"provider": "OAUTH2_PROVIDER_DISCORD", "clientId": "c",
			"encryptedClientSecret": servertest.EncryptToServer(t, h.Server.PublicKeys().ClientSecretsPublicKey,
				long(oauth.MaxClientSecretBytes))}))
}
