package organizations_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/ops/allowlists"
	"github.com/latchkey/latchkey/internal/ops/mfa"
	"github.com/latchkey/latchkey/internal/ops/organizations"
	"github.com/latchkey/latchkey/internal/ops/secrets"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/webhooks"
)

// rep is n copies of item, each made by item(i).
func rep(n int, item func(i int) any) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = item(i)
	}
	return out
}

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
	}
	return out
}

func user(i int) any {
	return map[string]any{"userName": fmt.Sprint("u", i), "apiKeys": []any{}, "authenticators": []any{},
		"oauthProviders": []any{}, "userTags": []any{}}
}

func userWith(member string, items any) map[string]any {
	u := user(0).(map[string]any)
	u[member] = items
	return u
}

func apiKey(pub string) func(int) any {
	return func(i int) any {
		return map[string]any{"apiKeyName": fmt.Sprint("k", i), "publicKey": pub, "curveType": "API_KEY_CURVE_P256"}
	}
}

func authenticator(transports int) func(int) any {
	return func(i int) any {
		return map[string]any{"authenticatorName": fmt.Sprint("a", i), "challenge": "Y2hhbGxlbmdl",
			"attestation": map[string]any{"credentialId": "AA", "clientDataJson": "e30", "attestationObject": "oA",
				"transports": rep(transports, func(int) any { return "AUTHENTICATOR_TRANSPORT_USB" })}}
	}
}

func provider(i int) any {
	return map[string]any{"providerName": fmt.Sprint("p", i), "oidcToken": "a.b.c"}
}

// Every list a request of these operations carries is bounded: one item over the limit is
// refused with a 400 naming the field and the limit, before any item is looked up, verified or
// written (the ids below name nothing: the count is checked first). Issue 23, section 2.
func TestPerRequestLimits(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Limits")
	_, pub := h.NewKey()
	uid := created.UserID
	over := func(limit int) int { return limit + 1 }
	many := func(limit int) string { return fmt.Sprintf("%d ", limit+1) }
	for _, tc := range []struct {
		name, op, typ string
		params        map[string]any
		field, msg    string
	}{
		{"users of create_users", "create_users", "ACTIVITY_TYPE_CREATE_USERS_V4",
			map[string]any{"users": rep(over(organizations.MaxUsersPerRequest), user)},
			"parameters.users", many(organizations.MaxUsersPerRequest)},
		{"API keys of a user to create", "create_users", "ACTIVITY_TYPE_CREATE_USERS_V4",
			map[string]any{"users": []any{
				userWith("apiKeys", rep(over(organizations.MaxAPIKeysPerRequest), apiKey(pub))),
			}},
			"parameters.users[0].apiKeys", many(organizations.MaxAPIKeysPerRequest)},
		{"authenticators of a user to create", "create_users", "ACTIVITY_TYPE_CREATE_USERS_V4",
			map[string]any{"users": []any{userWith("authenticators",
				rep(over(organizations.MaxAuthenticatorsPerRequest), authenticator(1)))}},
			"parameters.users[0].authenticators", many(organizations.MaxAuthenticatorsPerRequest)},
		{"transports of an authenticator", "create_users", "ACTIVITY_TYPE_CREATE_USERS_V4",
			map[string]any{"users": []any{userWith("authenticators",
				rep(1, authenticator(over(organizations.MaxTransportsPerAuthenticator))))}},
			"parameters.users[0].authenticators[0].attestation.transports",
			many(organizations.MaxTransportsPerAuthenticator)},
		{"OAuth providers of a user to create", "create_users", "ACTIVITY_TYPE_CREATE_USERS_V4",
			map[string]any{"users": []any{userWith("oauthProviders",
				rep(over(organizations.MaxOAuthProvidersPerRequest), provider))}},
			"parameters.users[0].oauthProviders", many(organizations.MaxOAuthProvidersPerRequest)},
		{"tags of a user to create", "create_users", "ACTIVITY_TYPE_CREATE_USERS_V4",
			map[string]any{"users": []any{userWith("userTags", ids(over(organizations.MaxTagsPerRequest)))}},
			"parameters.users[0].userTags", many(organizations.MaxTagsPerRequest)},
		// One tag listed 4,000 times took 3 min 41 s: each mention appended the user to the tag
		// again and wrote the whole tag back.
		{"one tag listed twice", "create_users", "ACTIVITY_TYPE_CREATE_USERS_V4",
			map[string]any{"users": []any{userWith("userTags", []string{ids(1)[0], ids(1)[0]})}},
			"parameters.users[0].userTags[1]", "listed twice"},
		{"API-only users", "create_api_only_users", "ACTIVITY_TYPE_CREATE_API_ONLY_USERS",
			map[string]any{"apiOnlyUsers": rep(over(organizations.MaxUsersPerRequest), func(i int) any {
				return map[string]any{"userName": fmt.Sprint("u", i), "userTags": []any{}, "apiKeys": []any{}}
			})},
			"parameters.apiOnlyUsers", many(organizations.MaxUsersPerRequest)},
		{"root users", "create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8",
			map[string]any{"subOrganizationName": "s", "rootQuorumThreshold": 1,
				"rootUsers": rep(over(organizations.MaxUsersPerRequest), func(i int) any {
					u := user(i).(map[string]any)
					delete(u, "userTags")
					return u
				})},
			"parameters.rootUsers", many(organizations.MaxUsersPerRequest)},
		{"root quorum", "update_root_quorum", "ACTIVITY_TYPE_UPDATE_ROOT_QUORUM",
			map[string]any{"threshold": 1, "userIds": ids(over(organizations.MaxUsersPerRequest))},
			"parameters.userIds", many(organizations.MaxUsersPerRequest)},
		{"tags of update_user", "update_user", "ACTIVITY_TYPE_UPDATE_USER",
			map[string]any{"userId": uid, "userTagIds": ids(over(organizations.MaxTagsPerRequest))},
			"parameters.userTagIds", many(organizations.MaxTagsPerRequest)},
		{"delete_users", "delete_users", "ACTIVITY_TYPE_DELETE_USERS",
			map[string]any{"userIds": ids(over(organizations.MaxIDsPerRequest))},
			"parameters.userIds", many(organizations.MaxIDsPerRequest)},
		{"delete_users, an id twice", "delete_users", "ACTIVITY_TYPE_DELETE_USERS",
			map[string]any{"userIds": []string{ids(1)[0], ids(1)[0]}}, "parameters.userIds[1]", "listed twice"},
		{"members of a new tag", "create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG",
			map[string]any{"userTagName": "t", "userIds": ids(over(organizations.MaxIDsPerRequest))},
			"parameters.userIds", many(organizations.MaxIDsPerRequest)},
		{"members added to a tag", "update_user_tag", "ACTIVITY_TYPE_UPDATE_USER_TAG",
			map[string]any{"userTagId": ids(1)[0], "addUserIds": ids(over(organizations.MaxIDsPerRequest)),
				"removeUserIds": []string{}},
			"parameters.addUserIds", many(organizations.MaxIDsPerRequest)},
		{"members removed from a tag", "update_user_tag", "ACTIVITY_TYPE_UPDATE_USER_TAG",
			map[string]any{"userTagId": ids(1)[0], "addUserIds": []string{},
				"removeUserIds": ids(over(organizations.MaxIDsPerRequest))},
			"parameters.removeUserIds", many(organizations.MaxIDsPerRequest)},
		{"delete_user_tags", "delete_user_tags", "ACTIVITY_TYPE_DELETE_USER_TAGS",
			map[string]any{"userTagIds": ids(over(organizations.MaxIDsPerRequest))},
			"parameters.userTagIds", many(organizations.MaxIDsPerRequest)},
		{"create_api_keys", "create_api_keys", "ACTIVITY_TYPE_CREATE_API_KEYS_V2",
			map[string]any{"userId": uid, "apiKeys": rep(over(organizations.MaxAPIKeysPerRequest), apiKey(pub))},
			"parameters.apiKeys", many(organizations.MaxAPIKeysPerRequest)},
		{"delete_api_keys", "delete_api_keys", "ACTIVITY_TYPE_DELETE_API_KEYS",
			map[string]any{"userId": uid, "apiKeyIds": ids(over(organizations.MaxIDsPerRequest))},
			"parameters.apiKeyIds", many(organizations.MaxIDsPerRequest)},
		{"create_authenticators", "create_authenticators", "ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2",
			map[string]any{"userId": uid,
				"authenticators": rep(over(organizations.MaxAuthenticatorsPerRequest), authenticator(1))},
			"parameters.authenticators", many(organizations.MaxAuthenticatorsPerRequest)},
		{"create_authenticators transports", "create_authenticators", "ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2",
			map[string]any{"userId": uid,
				"authenticators": rep(1, authenticator(over(organizations.MaxTransportsPerAuthenticator)))},
			"parameters.authenticators[0].attestation.transports", many(organizations.MaxTransportsPerAuthenticator)},
		{"delete_authenticators", "delete_authenticators", "ACTIVITY_TYPE_DELETE_AUTHENTICATORS",
			map[string]any{"userId": uid, "authenticatorIds": ids(over(organizations.MaxIDsPerRequest))},
			"parameters.authenticatorIds", many(organizations.MaxIDsPerRequest)},
		{"create_oauth_providers", "create_oauth_providers", "ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2",
			map[string]any{"userId": uid,
				"oauthProviders": rep(over(organizations.MaxOAuthProvidersPerRequest), provider)},
			"parameters.oauthProviders", many(organizations.MaxOAuthProvidersPerRequest)},
		{"delete_oauth_providers", "delete_oauth_providers", "ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS",
			map[string]any{"userId": uid, "providerIds": ids(over(organizations.MaxIDsPerRequest))},
			"parameters.providerIds", many(organizations.MaxIDsPerRequest)},
		{"create_invitations", "create_invitations", "ACTIVITY_TYPE_CREATE_INVITATIONS",
			map[string]any{"invitations": rep(over(organizations.MaxInvitationsPerRequest), invitation(uid, 0))},
			"parameters.invitations", many(organizations.MaxInvitationsPerRequest)},
		{"tags of an invitation", "create_invitations", "ACTIVITY_TYPE_CREATE_INVITATIONS",
			map[string]any{"invitations": rep(1, invitation(uid, over(organizations.MaxTagsPerRequest)))},
			"parameters.invitations[0].receiverUserTags", many(organizations.MaxTagsPerRequest)},
		{"import_secrets", "import_secrets", "ACTIVITY_TYPE_IMPORT_SECRETS",
			map[string]any{"secrets": rep(over(secrets.MaxSecretsPerRequest), secret)},
			"parameters.secrets", many(secrets.MaxSecretsPerRequest)},
		{"export_secrets", "export_secrets", "ACTIVITY_TYPE_EXPORT_SECRETS",
			map[string]any{"secrets": rep(over(secrets.MaxSecretsPerRequest), func(i int) any {
				return map[string]any{"secretId": ids(1)[0], "targetPublicKey": "04",
					"encryptionSuite": "TRANSPORT_ENCRYPTION_SUITE_ENCLAVE_ENCRYPT_V1"}
			})},
			"parameters.secrets", many(secrets.MaxSecretsPerRequest)},
		{"delete_secrets", "delete_secrets", "ACTIVITY_TYPE_DELETE_SECRETS",
			map[string]any{"secretIds": ids(over(organizations.MaxIDsPerRequest))},
			"parameters.secretIds", many(organizations.MaxIDsPerRequest)},
		{"an allowlist rule's label", "set_ip_allowlist", "ACTIVITY_TYPE_SET_IP_ALLOWLIST",
			map[string]any{"rules": []any{map[string]any{"cidr": "10.0.0.0/8",
				"label": strings.Repeat("l", allowlists.MaxRuleLabelBytes+1)}}},
			"parameters.rules[0].label", fmt.Sprintf("at most %d bytes", allowlists.MaxRuleLabelBytes)},
		{"allowlist rules", "set_ip_allowlist", "ACTIVITY_TYPE_SET_IP_ALLOWLIST",
			map[string]any{"rules": rep(over(allowlists.MaxRules), func(int) any {
				return map[string]any{"cidr": "10.0.0.0/8"}
			})},
			"parameters.rules", fmt.Sprintf("at most %d rules", allowlists.MaxRules)},
		// Bounded before issue 23; listed here so that every list's limit is tested in one place.
		{"MFA steps", "create_mfa_policy", "ACTIVITY_TYPE_CREATE_MFA_POLICY",
			mfaPolicy(uid, rep(over(mfa.MaxSteps), func(int) any { return mfaStep(1) })),
			"parameters.requiredAuthenticationMethods", fmt.Sprintf("at most %d steps", mfa.MaxSteps)},
		{"methods of an MFA step", "create_mfa_policy", "ACTIVITY_TYPE_CREATE_MFA_POLICY",
			mfaPolicy(uid, []any{mfaStep(over(mfa.MaxMethodsPerStep))}),
			"parameters.requiredAuthenticationMethods[0].any", fmt.Sprintf("1 to %d methods", mfa.MaxMethodsPerStep)},
		{"webhook subscriptions", "create_webhook_endpoint", "ACTIVITY_TYPE_CREATE_WEBHOOK_ENDPOINT",
			map[string]any{"url": "https://hooks.example/x", "name": "n",
				"subscriptions": rep(over(webhooks.MaxSubscriptionsPerEndpoint), func(int) any {
					return map[string]any{"eventType": "ACTIVITY_UPDATES"}
				})},
			"parameters.subscriptions", many(webhooks.MaxSubscriptionsPerEndpoint)},
		{"a webhook URL", "create_webhook_endpoint", "ACTIVITY_TYPE_CREATE_WEBHOOK_ENDPOINT",
			map[string]any{"url": "https://hooks.example/" + strings.Repeat("x", webhooks.MaxURLBytes), "name": "n"},
			"parameters.url", fmt.Sprintf("at most %d bytes", webhooks.MaxURLBytes)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := root.Submit(tc.op, tc.typ, tc.params)
			servertest.WantError(t, r, http.StatusBadRequest, 3, tc.field)
			if !strings.Contains(r.Str("message"), tc.msg) {
				t.Fatalf("message %q does not name %q", r.Str("message"), tc.msg)
			}
			t.Logf("%v", time.Since(start))
		})
	}
}

func invitation(sender string, tags int) func(int) any {
	return func(i int) any {
		return map[string]any{"receiverUserName": fmt.Sprint("r", i), "receiverUserEmail": "r@example.com",
			"receiverUserTags": ids(tags), "accessType": "ACCESS_TYPE_API", "senderUserId": sender}
	}
}

func secret(int) any {
	return map[string]any{"secretPayload": "{}", "targetPublicKey": "04",
		"encryptionSuite": "TRANSPORT_ENCRYPTION_SUITE_ENCLAVE_ENCRYPT_V1"}
}

func mfaPolicy(uid string, steps []any) map[string]any {
	return map[string]any{"userId": uid, "mfaPolicyName": "m", "condition": "true", "order": 0,
		"requiredAuthenticationMethods": steps}
}

func mfaStep(methods int) any {
	return map[string]any{"any": rep(methods, func(int) any {
		return map[string]any{"type": "AUTHENTICATION_TYPE_API_KEY"}
	})}
}
