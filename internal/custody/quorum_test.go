package custody

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientSecretFromTurnkeyCrypto: @turnkey/crypto's encryptOauth2ClientSecret, given the
// ClientSecrets key as its override, makes an envelope SealClientSecret opens; anything else is
// refused. Needs node and the e2e suite's node_modules (skipped without them).
func TestClientSecretFromTurnkeyCrypto(t *testing.T) {
	c := testCustodian(t)
	mod, _ := filepath.Abs("../../e2e/node_modules/@turnkey/crypto")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(mod); err != nil || serr != nil {
		t.Skip("needs node and e2e/node_modules (npm ci in e2e)")
	}
	script := `require(process.env.M).encryptOauth2ClientSecret(process.argv[1], process.argv[2]).then(s => process.stdout.write(s))`
	cmd := exec.Command(node, "-e", script, "s3cr3t-value", c.keys.PublicKey(ClientSecrets))
	cmd.Env = append(os.Environ(), "M="+mod)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v: %s", err, out)
	}
	env := strings.TrimSpace(string(out))
	b := Binding{OrgID: "o", Kind: "oauth2_credential", ID: "c1"}
	sealed, err := c.SealClientSecret(env, b)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := c.WithClientSecret(sealed, b, func(s string) error { got = s; return nil }); err != nil ||
		got != "s3cr3t-value" {
		t.Fatalf("opened %q, %v", got, err)
	}
	if err := c.WithClientSecret(sealed, Binding{OrgID: "o", Kind: "oauth2_credential", ID: "c2"}, func(string) error { return nil }); err == nil {
		t.Fatal("a sealed secret opened under another binding")
	}
	// Encrypted to another key, or tampered: refused.
	cmd = exec.Command(node, "-e", script, "x", c.keys.PublicKey(OTP))
	cmd.Env = append(os.Environ(), "M="+mod)
	other, _ := cmd.Output()
	for _, bad := range []string{string(other), env[:len(env)-2] + "00", "zz", ""} {
		if _, err := c.SealClientSecret(bad, b); err == nil {
			t.Errorf("envelope %q accepted", bad)
		}
	}
}

func FuzzOpenQuorumEnvelope(f *testing.F) {
	f.Add(strings.Repeat("00", 12+65+4+16))
	f.Add("0x1234")
	c := testCustodian(f)
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := c.keys.openQuorumEnvelope(ClientSecrets, s); err == nil {
			t.Fatalf("random envelope %q opened", s)
		}
	})
}
