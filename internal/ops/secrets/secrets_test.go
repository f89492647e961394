package secrets_test

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/servertest"
)

const suite = "TRANSPORT_ENCRYPTION_SUITE_ENCLAVE_ENCRYPT_V1"

// targetPublic reads the target key out of a ServerTargetMsgV1 as a client would.
func targetPublic(t *testing.T, msg string) string {
	t.Helper()
	var env struct{ Data string }
	if err := json.Unmarshal([]byte(msg), &env); err != nil {
		t.Fatal(err)
	}
	raw, _ := hex.DecodeString(env.Data)
	var d struct{ TargetPublic string }
	if err := json.Unmarshal(raw, &d); err != nil || d.TargetPublic == "" {
		t.Fatalf("target message %s: %v", msg, err)
	}
	return d.TargetPublic
}

func TestSecretsImportExportList(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	signer := h.Server.PublicKeys().SignerPublicKey
	initTargets := func(n int) []string {
		r := root.Submit(
			"init_import_secrets",
			"ACTIVITY_TYPE_INIT_IMPORT_SECRETS",
			map[string]any{"encryptionSuite": suite, "numSecrets": n},
		)
		servertest.MustOK(t, r)
		var out []string
		for _, m := range r.Body["activity"].(map[string]any)["result"].(map[string]any)["initImportSecretsResult"].(map[string]any)["enclaveTargetMessages"].([]any) {
			out = append(out, m.(string))
		}
		if len(out) != n {
			t.Fatalf("want %d targets: %s", n, r.Raw)
		}
		return out
	}
	seal := func(msg, plaintext string) map[string]any {
		payload, err := custody.SealToImportBundle(
			msg,
			[]byte(plaintext),
			created.OrganizationID,
			created.UserID,
			signer,
		)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]any{
			"secretPayload":   payload,
			"targetPublicKey": targetPublic(t, msg),
			"encryptionSuite": suite,
		}
	}
	targets := initTargets(3)
	a := seal(targets[0], "sk_live_abc")
	a["name"], a["staticProperties"] = "stripe", []any{map[string]any{"key": "env", "value": "prod"}}
	b := seal(targets[1], "second secret")

	// A batch with one bad payload fails whole: nothing is stored, and its good target stays usable.
	bad := seal(targets[2], "x")
	bad["secretPayload"] = `{"encappedPublic":"04","ciphertext":"00"}`
	servertest.WantError(
		t,
		root.Submit("import_secrets", "ACTIVITY_TYPE_IMPORT_SECRETS", map[string]any{"secrets": []any{a, bad}}),
		http.StatusBadRequest,
		3,
		"parameters.secrets[1].secretPayload",
	)
	l := root.Query("list_secrets", nil)
	servertest.MustOK(t, l)
	if n := len(l.Body["secrets"].([]any)); n != 0 {
		t.Fatalf("failed import left secrets: %s", l.Raw)
	}

	r := root.Submit("import_secrets", "ACTIVITY_TYPE_IMPORT_SECRETS", map[string]any{"secrets": []any{a, b}})
	servertest.MustOK(t, r)
	stripeID := r.Str("activity", "result", "importSecretsResult", "secretIds", "0")
	secondID := r.Str("activity", "result", "importSecretsResult", "secretIds", "1")
	// Each target takes one secret.
	servertest.WantError(
		t,
		root.Submit(
			"import_secrets",
			"ACTIVITY_TYPE_IMPORT_SECRETS",
			map[string]any{"secrets": []any{seal(targets[0], "again")}},
		),
		http.StatusBadRequest,
		3,
		"parameters.secrets[0].targetPublicKey",
	)
	// Names are unique within the organization.
	dup := seal(targets[2], "other")
	dup["name"] = "stripe"
	servertest.WantError(
		t,
		root.Submit("import_secrets", "ACTIVITY_TYPE_IMPORT_SECRETS", map[string]any{"secrets": []any{dup}}),
		http.StatusConflict,
		6,
		"stripe",
	)

	// Metadata only, paginated (one import shares one creation time, so the order within it is by id).
	l = root.Query("list_secrets", nil)
	servertest.MustOK(t, l)
	first, second := "0", "1"
	if l.Str("secrets", "0", "secretId") != stripeID {
		first, second = "1", "0"
	}
	if l.Str("secrets", first, "secretId") != stripeID || l.Str("secrets", second, "secretId") != secondID ||
		l.Str("secrets", first, "name") != "stripe" ||
		l.Str("secrets", first, "staticProperties", "0", "value") != "prod" ||
		l.Str("secrets", first, "createdAtUnixMs") == "" {
		t.Fatalf("list_secrets: %s", l.Raw)
	}
	top, next := l.Str("secrets", "0", "secretId"), l.Str("secrets", "1", "secretId")
	l = root.Query("list_secrets", map[string]any{"paginationOptions": map[string]any{"limit": "1", "after": top}})
	servertest.MustOK(t, l)
	if n := len(l.Body["secrets"].([]any)); n != 1 || l.Str("secrets", "0", "secretId") != next {
		t.Fatalf("list_secrets page 2: %s", l.Raw)
	}
	// A later import lists first.
	h.Advance(time.Second)
	r = root.Submit(
		"import_secrets",
		"ACTIVITY_TYPE_IMPORT_SECRETS",
		map[string]any{"secrets": []any{seal(initTargets(1)[0], "third")}},
	)
	servertest.MustOK(t, r)
	l = root.Query("list_secrets", nil)
	if l.Str("secrets", "0", "secretId") != r.Str("activity", "result", "importSecretsResult", "secretIds", "0") {
		t.Fatalf("newest not first: %s", l.Raw)
	}

	// Export to a client key and open it as decryptExportBundle does.
	recvPriv, recvPub := h.NewKey()
	e := root.Submit("export_secrets", "ACTIVITY_TYPE_EXPORT_SECRETS", map[string]any{"secrets": []any{
		map[string]any{"secretId": stripeID, "targetPublicKey": recvPub, "encryptionSuite": suite},
		map[string]any{"secretId": secondID, "targetPublicKey": recvPub, "encryptionSuite": suite}}})
	servertest.MustOK(t, e)
	for i, want := range []string{"sk_live_abc", "second secret"} {
		plain, err := custody.OpenExportBundle(
			e.Str("activity", "result", "exportSecretsResult", "secretPayloads", string(rune('0'+i))),
			recvPriv,
			created.OrganizationID,
			signer,
		)
		if err != nil || string(plain) != want {
			t.Fatalf("secret %d: %q, %v", i, plain, err)
		}
	}

	// Bad input names its field.
	servertest.WantError(
		t,
		root.Submit(
			"init_import_secrets",
			"ACTIVITY_TYPE_INIT_IMPORT_SECRETS",
			map[string]any{"encryptionSuite": suite, "numSecrets": 0},
		),
		http.StatusBadRequest,
		3,
		"parameters.numSecrets",
	)
	servertest.WantError(
		t,
		root.Submit(
			"init_import_secrets",
			"ACTIVITY_TYPE_INIT_IMPORT_SECRETS",
			map[string]any{"encryptionSuite": "NOPE", "numSecrets": 1},
		),
		http.StatusBadRequest,
		3,
		"parameters.encryptionSuite",
	)
	servertest.WantError(
		t,
		root.Submit("export_secrets", "ACTIVITY_TYPE_EXPORT_SECRETS", map[string]any{"secrets": []any{
			map[string]any{
				"secretId":        stripeID,
				"targetPublicKey": "zz",
				"encryptionSuite": suite,
			}}}),
		http.StatusBadRequest,
		3,
		"parameters.secrets[0].targetPublicKey",
	)
	servertest.WantError(
		t,
		root.Submit("export_secrets", "ACTIVITY_TYPE_EXPORT_SECRETS", map[string]any{"secrets": []any{
			map[string]any{
				"secretId":        "nope",
				"targetPublicKey": recvPub,
				"encryptionSuite": suite,
			}}}),
		http.StatusNotFound,
		5,
		"secret not found",
	)
	props := seal(targets[2], "p")
	props["staticProperties"] = []any{map[string]any{"key": "a"}, map[string]any{"key": "a"}}
	servertest.WantError(
		t,
		root.Submit("import_secrets", "ACTIVITY_TYPE_IMPORT_SECRETS", map[string]any{"secrets": []any{props}}),
		http.StatusBadRequest,
		3,
		"parameters.secrets[0].staticProperties[1].key",
	)

	// Deleting is all or nothing; a deleted secret's name is free again.
	servertest.WantError(
		t,
		root.Submit(
			"delete_secrets",
			"ACTIVITY_TYPE_DELETE_SECRETS",
			map[string]any{"secretIds": []string{stripeID, "nope"}},
		),
		http.StatusNotFound,
		5,
		"parameters.secretIds[1]",
	)
	servertest.MustOK(
		t,
		root.Submit("delete_secrets", "ACTIVITY_TYPE_DELETE_SECRETS", map[string]any{"secretIds": []string{stripeID}}),
	)
	servertest.WantError(
		t,
		root.Submit("export_secrets", "ACTIVITY_TYPE_EXPORT_SECRETS", map[string]any{"secrets": []any{
			map[string]any{
				"secretId":        stripeID,
				"targetPublicKey": recvPub,
				"encryptionSuite": suite,
			}}}),
		http.StatusNotFound,
		5,
		"secret not found",
	)
	h.Advance(time.Second) // a byte-identical init would be the same activity, with the used target
	again := seal(initTargets(1)[0], "new value")
	again["name"] = "stripe"
	servertest.MustOK(
		t,
		root.Submit("import_secrets", "ACTIVITY_TYPE_IMPORT_SECRETS", map[string]any{"secrets": []any{again}}),
	)

	// Another organization cannot see or export them.
	other, _ := h.RootOrg("Other")
	e = other.Submit("export_secrets", "ACTIVITY_TYPE_EXPORT_SECRETS", map[string]any{"secrets": []any{
		map[string]any{"secretId": secondID, "targetPublicKey": recvPub, "encryptionSuite": suite}}})
	servertest.WantError(t, e, http.StatusNotFound, 5, "secret not found")
}
