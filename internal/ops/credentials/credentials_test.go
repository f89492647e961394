package credentials_test

import (
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/stamp/stamptest"
)

func TestPasskeyRegistrationAndWebAuthnStamp(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	for _, format := range []string{"none", "packed"} {
		a, err := stamptest.New("localhost", "http://localhost:3000")
		if err != nil {
			t.Fatal(err)
		}
		challenge := []byte("registration-challenge-" + format)
		reg, err := a.Attest(challenge, format)
		if err != nil {
			t.Fatal(err)
		}
		r := root.Submit("create_authenticators", "ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2", map[string]any{
			"userId": created.UserID,
			"authenticators": []any{
				map[string]any{
					"authenticatorName": "laptop " + format,
					"challenge":         base64.RawURLEncoding.EncodeToString(challenge),
					"attestation":       reg,
				},
			},
		})
		servertest.MustOK(t, r)
		authID := r.Str("activity", "result", "createAuthenticatorsResult", "authenticatorIds", "0")
		g := root.Query("get_authenticator", map[string]any{"authenticatorId": authID})
		servertest.MustOK(t, g)
		if g.Str("authenticator", "credentialId") != a.CredentialID() ||
			g.Str("authenticator", "credential", "publicKey") != a.PublicKeyCompressed() ||
			g.Str("authenticator", "attestationType") != format {
			t.Fatalf("get_authenticator: %s", g.Raw)
		}
		// A request stamped by the passkey.
		passkey := &servertest.Client{H: h, Org: created.OrganizationID, Stamper: a}
		w := passkey.Query("whoami", nil)
		servertest.MustOK(t, w)
		if w.Str("userId") != created.UserID {
			t.Fatalf("whoami by passkey: %s", w.Raw)
		}
		servertest.MustOK(
			t,
			passkey.Submit(
				"create_user_tag",
				"ACTIVITY_TYPE_CREATE_USER_TAG",
				map[string]any{"userTagName": "by passkey " + format, "userIds": []string{}},
			),
		)
		// A stamp over other bytes does not verify.
		name, value, _ := a.Stamp([]byte(`{"organizationId":"` + created.OrganizationID + `"}`))
		bad := h.Post(
			"/public/v1/query/whoami",
			[]byte(`{"organizationId":"`+created.OrganizationID+`" }`),
			map[string]string{name: value},
		)
		servertest.WantError(t, bad, http.StatusUnauthorized, 16, "invalid stamp")
		servertest.MustOK(
			t,
			root.Submit(
				"delete_authenticators",
				"ACTIVITY_TYPE_DELETE_AUTHENTICATORS",
				map[string]any{"userId": created.UserID, "authenticatorIds": []string{authID}},
			),
		)
		servertest.WantError(
			t,
			passkey.Query("whoami", nil),
			http.StatusUnauthorized,
			16,
			"credential ID could not be found",
		)
	}
	// A registration whose challenge does not match is refused, naming the field.
	a, _ := stamptest.New("localhost", "http://localhost:3000")
	reg, _ := a.Attest([]byte("one"), "none")
	r := root.Submit("create_authenticators", "ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2", map[string]any{
		"userId": created.UserID, "authenticators": []any{map[string]any{"authenticatorName": "x", "challenge": base64.RawURLEncoding.EncodeToString([]byte("two")), "attestation": reg}}})
	servertest.WantError(t, r, http.StatusBadRequest, 3, "parameters.authenticators[0].attestation")
}

func TestReadOnlySession(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	r := root.Submit("create_read_only_session", "ACTIVITY_TYPE_CREATE_READ_ONLY_SESSION", map[string]any{})
	servertest.MustOK(t, r)
	tok := r.Str("activity", "result", "createReadOnlySessionResult", "session")
	if tok == "" || r.Str("activity", "result", "createReadOnlySessionResult", "sessionExpiry") == "" {
		t.Fatalf("no session: %s", r.Raw)
	}
	body := []byte(`{"organizationId":"` + created.OrganizationID + `"}`)
	w := h.Post("/public/v1/query/whoami", body, map[string]string{"X-Session": tok})
	servertest.MustOK(t, w)
	if w.Str("userId") != created.UserID {
		t.Fatalf("whoami by session: %s", w.Raw)
	}
	// Read-only: no submits.
	sub := root.SubmitBody("ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "x", "userIds": []string{}})
	servertest.WantError(
		t,
		h.Post("/public/v1/submit/create_user_tag", sub, map[string]string{"X-Session": tok}),
		http.StatusForbidden,
		7,
		"read-only session",
	)
	// Tampered and expired tokens are refused.
	// (Change a character well inside the signature: the last one carries unused bits.)
	i := len(tok) - 10
	flipped := byte('A')
	if tok[i] == 'A' {
		flipped = 'B'
	}
	servertest.WantError(
		t,
		h.Post("/public/v1/query/whoami", body, map[string]string{"X-Session": tok[:i] + string(flipped) + tok[i+1:]}),
		http.StatusUnauthorized,
		16,
		"invalid X-Session",
	)
	h.Advance(2 * time.Hour)
	servertest.WantError(
		t,
		h.Post("/public/v1/query/whoami", body, map[string]string{"X-Session": tok}),
		http.StatusUnauthorized,
		16,
		"expired",
	)
}

// A user manages his own API keys, not another's; a read-write session's bundle decrypts to a
// key that stamps as the user until it expires.
func TestAPIKeysAndReadWriteSessions(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	bobID, bob := h.NewUser(root, "bob", "bob@example.com")
	_, k2 := h.NewKey()
	r := bob.Submit(
		"create_api_keys",
		"ACTIVITY_TYPE_CREATE_API_KEYS_V2",
		map[string]any{
			"userId": bobID,
			"apiKeys": []any{
				map[string]any{"apiKeyName": "second", "publicKey": k2, "curveType": "API_KEY_CURVE_P256"},
			},
		},
	)
	servertest.MustOK(t, r)
	keyID := r.Str("activity", "result", "createApiKeysResult", "apiKeyIds", "0")
	servertest.WantError(
		t,
		bob.Submit(
			"create_api_keys",
			"ACTIVITY_TYPE_CREATE_API_KEYS_V2",
			map[string]any{
				"userId": created.UserID,
				"apiKeys": []any{
					map[string]any{"apiKeyName": "evil", "publicKey": k2, "curveType": "API_KEY_CURVE_P256"},
				},
			},
		),
		http.StatusForbidden,
		7,
		"policy engine denied request implicitly",
	)
	keys := root.Query("get_api_keys", map[string]any{"userId": bobID})
	servertest.MustOK(t, keys)
	if n := len(keys.Body["apiKeys"].([]any)); n != 2 {
		t.Fatalf("bob has %d keys: %s", n, keys.Raw)
	}
	servertest.MustOK(
		t,
		bob.Submit(
			"delete_api_keys",
			"ACTIVITY_TYPE_DELETE_API_KEYS",
			map[string]any{"userId": bobID, "apiKeyIds": []string{keyID}},
		),
	)

	// A read-write session: decrypt the bundle, call with the key inside.
	recvPriv, recvPub := h.NewKey()
	r = bob.Submit(
		"create_read_write_session",
		"ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2",
		map[string]any{"targetPublicKey": recvPub, "expirationSeconds": "60"},
	)
	servertest.MustOK(t, r)
	res := r.Body["activity"].(map[string]any)["result"].(map[string]any)["createReadWriteSessionResultV2"].(map[string]any)
	scalar, err := custody.DecryptCredentialBundle(res["credentialBundle"].(string), recvPriv)
	if err != nil {
		t.Fatal(err)
	}
	sess := h.Client(created.OrganizationID, hex.EncodeToString(scalar))
	w := sess.Query("whoami", nil)
	servertest.MustOK(t, w)
	if w.Str("userId") != bobID {
		t.Fatalf("session whoami: %s", w.Raw)
	}
	// It expires.
	h.Advance(61 * time.Second)
	servertest.WantError(
		t,
		sess.Query("whoami", nil),
		http.StatusUnauthorized,
		16,
		"Unauthenticated desc = expired api key publicKey",
	)

}

// create_api_keys: a bad key or curve is a 400 naming it; the same bytes twice are one key; a key
// reads back by id and with its user's keys; an organization cannot read another's key.
func TestAPIKeyRefusalsResubmissionAndOwnership(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	_, pub := h.NewKey()
	key := func(name, pub, curve string) map[string]any {
		return map[string]any{
			"userId":  created.UserID,
			"apiKeys": []any{map[string]any{"apiKeyName": name, "publicKey": pub, "curveType": curve}},
		}
	}
	for _, tc := range []struct {
		name   string
		params map[string]any
		field  string
	}{
		{"not hex", key("k", "zz", "API_KEY_CURVE_P256"), "parameters.apiKeys[0]"},
		{"unknown curve", key("k", pub, "API_KEY_CURVE_RSA"), "parameters.apiKeys[0]"},
		{"no name", key("", pub, "API_KEY_CURVE_P256"), "parameters.apiKeys[0].apiKeyName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.Advance(time.Millisecond)
			servertest.WantError(
				t,
				root.Submit("create_api_keys", "ACTIVITY_TYPE_CREATE_API_KEYS_V2", tc.params),
				http.StatusBadRequest,
				3,
				tc.field,
			)
		})
	}

	h.Advance(time.Millisecond)
	keyID := root.SubmitTwice("create_api_keys", "ACTIVITY_TYPE_CREATE_API_KEYS_V2", key("second", pub, "API_KEY_CURVE_P256")).
		Result("createApiKeysResult", "apiKeyIds", "0")
	if n := root.MustQuery("get_api_keys", map[string]any{"userId": created.UserID}).Len("apiKeys"); n != 2 {
		t.Fatalf("%d keys, want the root key and one more", n)
	}
	if g := root.MustQuery("get_api_key", map[string]any{"apiKeyId": keyID}); g.Str(
		"apiKey",
		"apiKeyName",
	) != "second" ||
		g.Str("apiKey", "credential", "publicKey") != pub {
		t.Fatalf("get_api_key: %s", g.Raw)
	}
	// The same public key again, under another request, is refused.
	h.Advance(time.Millisecond)
	if r := root.Submit("create_api_keys", "ACTIVITY_TYPE_CREATE_API_KEYS_V2", key("third", pub, "API_KEY_CURVE_P256")); r.Status == http.StatusOK {
		t.Fatalf("a public key registered twice: %s", r.Raw)
	}
	if l := root.MustQuery("get_authenticators", map[string]any{"userId": created.UserID}); l.Len(
		"authenticators",
	) != 0 {
		t.Fatalf("get_authenticators of a user without passkeys: %s", l.Raw)
	}

	other, _ := h.RootOrg("Other")
	servertest.WantError(
		t,
		other.Query("get_api_key", map[string]any{"apiKeyId": keyID}),
		http.StatusNotFound,
		5,
		"API key not found",
	)
	servertest.WantError(
		t,
		other.Submit(
			"delete_api_keys",
			"ACTIVITY_TYPE_DELETE_API_KEYS",
			map[string]any{"userId": created.UserID, "apiKeyIds": []string{keyID}},
		),
		http.StatusBadRequest,
		3,
		"parameters.userId: no user",
	)
}
