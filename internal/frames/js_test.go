package frames_test

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/stamp"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

// The frames' JavaScript is tested by node's own runner (jstest/*.test.mjs), on fixtures made
// here by Latchkey's Go code: export bundles, import bundles and a credential bundle from
// internal/custody, which the JS must open, verify or refuse. What the JS produces for the
// server (encrypted import bundles, a stamp) is written to an output directory and checked here
// by the Go code that would receive it: custody's import and internal/stamp's verifier.

// fixtures is what the JS tests read from $LATCHKEY_FRAMES_FIXTURES.
type fixtures struct {
	SignerKeys      []string          `json:"signerKeys"`
	OtherSignerKeys []string          `json:"otherSignerKeys"`
	OrganizationID  string            `json:"organizationId"`
	UserID          string            `json:"userId"`
	Receiver        receiver          `json:"receiver"`
	ExportWallet    string            `json:"exportWallet"`
	Mnemonic        string            `json:"mnemonic"`
	ExportOtherOrg  string            `json:"exportOtherOrg"`
	ExportOtherSig  string            `json:"exportOtherSigner"`
	ExportKeys      []string          `json:"exportKeys"` // one per vector key, in order
	ImportTargets   map[string]string `json:"importTargets"`
	ImportOtherSig  string            `json:"importOtherSigner"`
	ImportOtherUser string            `json:"importOtherUser"`
	Credential      credential        `json:"credential"`
	ImportMnemonic  string            `json:"importMnemonic"`
}

type receiver struct {
	PrivateKey string `json:"privateKey"` // 32-byte scalar, hex
	PublicKey  string `json:"publicKey"`  // uncompressed hex
}

type credential struct {
	Receiver  receiver `json:"receiver"`
	Bundle    string   `json:"bundle"`
	PublicKey string   `json:"publicKey"` // the credential's compressed public key
}

// What the JS tests write to $LATCHKEY_FRAMES_OUT.
type importOut struct {
	// Bundles maps "wallet" and each KeyFormat to the extracted encrypted bundle.
	Bundles map[string]string `json:"bundles"`
}

type authOut struct {
	Body   string `json:"body"`
	Header string `json:"header"`
}

// importKeyVector is the vector key each import format is typed with (vectors_test.go) and the
// curve it is imported on.
var importKeyVector = map[string]struct {
	vector int
	curve  string
}{
	"HEXADECIMAL":         {1, "CURVE_SECP256K1"},
	"SOLANA":              {0, "CURVE_ED25519"},
	"BITCOIN_MAINNET_WIF": {1, "CURVE_SECP256K1"},
	"BITCOIN_TESTNET_WIF": {2, "CURVE_SECP256K1"},
	"SUI_BECH32":          {2, "CURVE_ED25519"},
}

const testMnemonic = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"

func newCustodian(t *testing.T, seed byte) *custody.Custodian {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "k.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mk := make([]byte, 32)
	for i := range mk {
		mk[i] = seed
	}
	master, err := custody.ParseMasterKey(mk)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := custody.OpenKeyring(ctx, st, master)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := custody.LoadServerKeys(ctx, st, kr)
	if err != nil {
		t.Fatal(err)
	}
	return custody.NewCustodian(kr, keys)
}

func newReceiver(t *testing.T) (receiver, *ecdh.PrivateKey) {
	t.Helper()
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return receiver{PrivateKey: hex.EncodeToString(k.Bytes()), PublicKey: hex.EncodeToString(k.PublicKey().Bytes())}, k
}

// sealedKey imports raw as an Ed25519 private key and returns it sealed, as an imported key is
// kept, so it can be exported again.
func sealedKey(t *testing.T, c *custody.Custodian, raw []byte, n int) ([]byte, custody.Binding) {
	t.Helper()
	tb := custody.Binding{OrgID: testOrg, Kind: "import_target", ID: "seed-" + string(rune('a'+n))}
	ib, sealedTarget, err := c.NewImportTarget(tb, testOrg, testUser)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := custody.SealToImportBundle(ib, raw, testOrg, testUser, c.Keys().PublicKey(custody.Signer))
	if err != nil {
		t.Fatal(err)
	}
	kb := custody.Binding{OrgID: testOrg, Kind: "private_key", ID: "k-" + string(rune('a'+n))}
	d, err := c.ImportPrivateKey(enc, sealedTarget, tb, kb, "CURVE_ED25519")
	if err != nil {
		t.Fatal(err)
	}
	return d.SealedKey, kb
}

func TestFramesJS(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("LATCHKEY_REQUIRE_NODE") == "1" {
			t.Fatal("LATCHKEY_REQUIRE_NODE=1 but node is not installed: the frames' JavaScript tests need node 20")
		}
		t.Skip("node is not installed: the frames' JavaScript tests (jstest/) did not run")
	}
	w := newWorld(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	fb, _ := json.MarshalIndent(w.fx, "", "  ")
	fxFile := filepath.Join(dir, "fixtures.json")
	if err := os.WriteFile(fxFile, fb, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "--test", "jstest/")
	cmd.Env = append(os.Environ(), "LATCHKEY_FRAMES_FIXTURES="+fxFile, "LATCHKEY_FRAMES_OUT="+out)
	res, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test jstest/: %v\n%s", err, res)
	}
	if testing.Verbose() {
		t.Logf("%s", res)
	}
	w.checkImports(t, out)
	w.checkStamp(t, out)
}

// world is the server side of the JS tests: two deployments (this one, and another whose
// bundles must be refused), the fixtures made from them and what checks the JS output.
type world struct {
	c, other *custody.Custodian
	fx       fixtures
	vectors  keyVectors
	// targets are the sealed import targets of fx.ImportTargets, by name.
	targets map[string][]byte
	// receiver is the key of fx.Receiver, with which Go reads back what was imported.
	receiver *ecdh.PrivateKey
}

const testOrg, testUser = "3f1b7a52-9c1e-4d0a-8f7e-2a6c5b4d3e21", "8a0c9e4f-5b2d-4c1a-9e3f-7d6b5a4c3b12"

func targetBinding(name string) custody.Binding {
	return custody.Binding{OrgID: testOrg, Kind: "import_target", ID: "js-" + name}
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{c: newCustodian(t, 7), other: newCustodian(t, 9), targets: map[string][]byte{}}
	b, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &w.vectors); err != nil {
		t.Fatal(err)
	}
	signer := w.c.Keys().PublicKey(custody.Signer)
	w.fx = fixtures{SignerKeys: []string{signer}, OtherSignerKeys: []string{w.other.Keys().PublicKey(custody.Signer)},
		OrganizationID: testOrg, UserID: testUser, Mnemonic: testMnemonic, ImportTargets: map[string]string{},
		ImportMnemonic: "  abandon abandon abandon abandon\nabandon abandon abandon abandon abandon abandon\tabandon about \n"}
	w.fx.Receiver, w.receiver = newReceiver(t)

	// Export bundles: the wallet (a known mnemonic, imported then exported) for this
	// organization, for another, and from another deployment; each vector key.
	wb := custody.Binding{OrgID: testOrg, Kind: "wallet", ID: "w1"}
	sealedMnemonic := importMnemonic(t, w.c, wb)
	if w.fx.ExportWallet, err = w.c.ExportMnemonic(sealedMnemonic, wb, "", w.fx.Receiver.PublicKey, testOrg); err != nil {
		t.Fatal(err)
	}
	w.fx.ExportOtherOrg, err = w.c.ExportMnemonic(sealedMnemonic, wb, "", w.fx.Receiver.PublicKey, "another-org")
	if err != nil {
		t.Fatal(err)
	}
	w.fx.ExportOtherSig, err = w.other.ExportMnemonic(importMnemonic(t, w.other, wb), wb, "", w.fx.Receiver.PublicKey,
		testOrg)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range w.vectors.Keys {
		raw, _ := hex.DecodeString(v.Hex)
		sk, kb := sealedKey(t, w.c, raw, i)
		bundle, err := w.c.ExportKey(sk, kb, w.fx.Receiver.PublicKey, testOrg)
		if err != nil {
			t.Fatal(err)
		}
		w.fx.ExportKeys = append(w.fx.ExportKeys, bundle)
	}

	// Import bundles: one per thing the JS imports (each target is used once), one for
	// another user, one from another deployment.
	for _, name := range []string{"wallet", "HEXADECIMAL", "SOLANA", "BITCOIN_MAINNET_WIF", "BITCOIN_TESTNET_WIF",
		"SUI_BECH32"} {
		bundle, sealed, err := w.c.NewImportTarget(targetBinding(name), testOrg, testUser)
		if err != nil {
			t.Fatal(err)
		}
		w.fx.ImportTargets[name], w.targets[name] = bundle, sealed
	}
	if w.fx.ImportOtherUser, _, err = w.c.NewImportTarget(targetBinding("o"), testOrg, "another-user"); err != nil {
		t.Fatal(err)
	}
	if w.fx.ImportOtherSig, _, err = w.other.NewImportTarget(targetBinding("o"), testOrg, testUser); err != nil {
		t.Fatal(err)
	}

	// A credential bundle, as email_auth makes one, for an embedded key the JS adopts.
	w.fx.Credential.Receiver, _ = newReceiver(t)
	if w.fx.Credential.PublicKey, w.fx.Credential.Bundle, err = custody.NewSessionCredential(
		w.fx.Credential.Receiver.PublicKey,
	); err != nil {
		t.Fatal(err)
	}
	return w
}

// importMnemonic imports testMnemonic into c as the wallet wb, returning it sealed.
func importMnemonic(t *testing.T, c *custody.Custodian, wb custody.Binding) []byte {
	t.Helper()
	tb := custody.Binding{OrgID: testOrg, Kind: "import_target", ID: "wallet-seed"}
	ib, sealedTarget, err := c.NewImportTarget(tb, testOrg, testUser)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := custody.SealToImportBundle(
		ib,
		[]byte(testMnemonic),
		testOrg,
		testUser,
		c.Keys().PublicKey(custody.Signer),
	)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := c.ImportMnemonic(enc, sealedTarget, tb, wb)
	if err != nil {
		t.Fatal(err)
	}
	return sealed
}

// checkImports: what the import frame encrypted opens with the server's targets, to what was
// typed.
func (w *world) checkImports(t *testing.T, out string) {
	t.Helper()
	var got importOut
	readJSON(t, filepath.Join(out, "import.json"), &got)
	wb := custody.Binding{OrgID: testOrg, Kind: "wallet", ID: "w-js"}
	sealedWallet, err := w.c.ImportMnemonic(got.Bundles["wallet"], w.targets["wallet"], targetBinding("wallet"), wb)
	if err != nil {
		t.Fatalf("the wallet the import frame encrypted: %v", err)
	}
	back, err := w.c.ExportMnemonic(sealedWallet, wb, "", hex.EncodeToString(w.receiver.PublicKey().Bytes()), testOrg)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := custody.OpenExportBundle(back, hex.EncodeToString(w.receiver.Bytes()), testOrg,
		w.c.Keys().PublicKey(custody.Signer))
	if err != nil || string(plain) != testMnemonic {
		t.Fatalf("the imported mnemonic: %q %v", plain, err)
	}
	for format, kv := range importKeyVector {
		d, err := w.c.ImportPrivateKey(got.Bundles[format], w.targets[format], targetBinding(format),
			custody.Binding{OrgID: testOrg, Kind: "private_key", ID: "js-" + format}, kv.curve)
		if err != nil {
			t.Fatalf("the %s key the import frame encrypted: %v", format, err)
		}
		want := w.vectors.Keys[kv.vector].Secp256k1PublicKey
		if kv.curve == "CURVE_ED25519" {
			want = w.vectors.Keys[kv.vector].Ed25519PublicKey
		}
		if pub := hex.EncodeToString(d.PublicKey); pub != want {
			t.Fatalf("the %s key imported as %s, want %s", format, pub, want)
		}
	}
}

// checkStamp: the auth frame's stamp verifies with Latchkey's X-Stamp verifier, by the
// credential's key, in the exact form Turnkey's stampers write.
func (w *world) checkStamp(t *testing.T, out string) {
	t.Helper()
	var ao authOut
	readJSON(t, filepath.Join(out, "auth.json"), &ao)
	proof, err := stamp.VerifyAPIKey(ao.Header, []byte(ao.Body))
	if err != nil {
		t.Fatalf("the auth frame's stamp: %v", err)
	}
	if proof.PublicKey != w.fx.Credential.PublicKey || proof.Scheme != stamp.SchemeP256 {
		t.Fatalf("stamped by %s (%s), want the credential %s", proof.PublicKey, proof.Scheme, w.fx.Credential.PublicKey)
	}
	checkStampForm(t, ao.Header)
}

// checkStampForm: unpadded base64url of {"publicKey","scheme","signature"} in that order,
// lowercase hex (docs/wire.md §1), as Turnkey's stampers write it.
func checkStampForm(t *testing.T, header string) {
	t.Helper()
	if strings.ContainsAny(header, "+/=") {
		t.Fatalf("the stamp is not unpadded base64url: %s", header)
	}
	raw, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil || len(m) != 3 {
		t.Fatalf("stamp JSON %s: %v", raw, err)
	}
	if !strings.HasPrefix(string(raw), `{"publicKey":"`) || !strings.Contains(string(raw), `","scheme":"`) ||
		!strings.Contains(string(raw), `","signature":"`) {
		t.Fatalf("stamp member order: %s", raw)
	}
	if len(m["publicKey"]) != 66 || m["publicKey"] != strings.ToLower(m["publicKey"]) ||
		m["signature"] != strings.ToLower(m["signature"]) {
		t.Fatalf("stamp hex: %s", raw)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the JS tests wrote no %s: %v", filepath.Base(path), err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", filepath.Base(path), err)
	}
}
