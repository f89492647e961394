package custody

import (
	"bytes"
	"testing"

	"github.com/latchkey/latchkey/internal/stamp"
)

func TestServerHeldAPIKeyStampsAsAClient(t *testing.T) {
	c := testCustodian(t)
	b := Binding{OrgID: "org", Kind: "auth_proxy_config", ID: "cfg-1"}
	pub, sealed, err := c.NewAPIKey(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(pub) != 66 || (pub[:2] != "02" && pub[:2] != "03") {
		t.Fatalf("public key %q is not a compressed P-256 point", pub)
	}
	body := []byte(`{"type":"ACTIVITY_TYPE_INIT_OTP_V3","organizationId":"org"}`)
	name, value, err := c.StampWithAPIKey(sealed, b, body)
	if err != nil || name != stamp.HeaderAPIKey {
		t.Fatalf("stamp: %q, %v", name, err)
	}
	proof, err := stamp.VerifyAPIKey(value, body)
	if err != nil {
		t.Fatalf("the stamp does not verify as a client's: %v", err)
	}
	if proof.PublicKey != pub || proof.Curve != stamp.CurveP256 || proof.Scheme != stamp.SchemeP256 {
		t.Fatalf("proof %+v, want key %s", proof, pub)
	}
	if _, err := stamp.VerifyAPIKey(value, append(body, ' ')); err == nil {
		t.Fatal("stamp verified over other bytes")
	}
	// The sealed key opens only under its own binding, and holds no plaintext public key bytes.
	if _, _, err := c.StampWithAPIKey(sealed, Binding{OrgID: "org", Kind: "auth_proxy_config", ID: "cfg-2"}, body); err == nil {
		t.Fatal("stamped under another binding")
	}
	if bytes.Contains(sealed, []byte(pub)) {
		t.Fatal("sealed value carries the public key")
	}
}
