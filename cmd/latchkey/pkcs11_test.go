package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/custody/pkcs11/softhsmtest"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/stamp"
)

// A build without the pkcs11 tag (the static release binary) refuses --seal pkcs11, saying why.
func TestPKCS11SealNotBuilt(t *testing.T) {
	if custody.PKCS11Supported {
		t.Skip("built with -tags pkcs11: TestPKCS11Seal covers the seal")
	}
	err := run(
		context.Background(),
		[]string{
			"keys",
			"--data-dir",
			t.TempDir(),
			"--seal",
			"pkcs11",
			"--pkcs11-module",
			"/usr/lib/softhsm/libsofthsm2.so",
			"--pkcs11-token-label",
			"t",
			"--pkcs11-key-label",
			"k",
		},
		io.Discard,
		io.Discard,
	)
	if err == nil || !strings.Contains(err.Error(), "built without PKCS#11 support") {
		t.Fatalf("--seal pkcs11 without the pkcs11 tag: %v", err)
	}
}

// --seal pkcs11 against a real SoftHSM2 token: init makes a master key that exists only wrapped
// by an AES key on the token (generated there by --pkcs11-create-key), every start unwraps it, and
// the deployment signs across restarts. A wrong PIN, a missing key, module or PIN, the PIN on the
// command line, a file seal on a pkcs11 deployment (and the reverse) and an unreachable token are
// each refused with a clear message that never holds the PIN.
func TestPKCS11Seal(t *testing.T) {
	if !custody.PKCS11Supported {
		t.Skip("built without -tags pkcs11: the seal cannot load a module (go test -tags pkcs11 runs this test)")
	}
	const pin = "pin-1234"
	module := softhsmtest.NewToken(t, "latchkey", "so-5678", pin)
	t.Setenv("LATCHKEY_PKCS11_PIN", pin)
	ctx := context.Background()
	dir := t.TempDir()
	seal := []string{
		"--data-dir",
		dir,
		"--seal",
		"pkcs11",
		"--pkcs11-module",
		module,
		"--pkcs11-token-label",
		"latchkey",
		"--pkcs11-key-label",
		"latchkey-master",
	}
	priv, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	initArgs := []string{"init", "--org-name", "Acme", "--user-name", "ops", "--api-public-key", pub}

	// Without --pkcs11-create-key, a token without the key is refused.
	noKeyDir := t.TempDir()
	err := run(
		ctx,
		append(append(append([]string{}, initArgs...), seal...), "--data-dir", noKeyDir),
		io.Discard,
		io.Discard,
	)
	if err == nil || !strings.Contains(err.Error(), `holds no AES key labelled "latchkey-master"`) ||
		!strings.Contains(err.Error(), "--pkcs11-create-key") {
		t.Fatalf("init without a key on the token: %v", err)
	}

	created := initSealed(t, append(append(append([]string{}, initArgs[1:]...), seal...), "--pkcs11-create-key"), dir)
	var keys1, keys2 bytes.Buffer
	if err := run(ctx, append([]string{"keys"}, seal...), &keys1, io.Discard); err != nil {
		t.Fatal(err)
	}

	// Opened, restarted (unwrapped again by the token): the wallet made before signs after.
	signsAcrossRestart(t, server.Config{DataDir: dir, Seal: custody.SealPKCS11,
		PKCS11: custody.PKCS11{
			Module:     module,
			TokenLabel: "latchkey",
			KeyLabel:   "latchkey-master",
			PIN:        pin,
		}}, created["organizationId"], priv)
	// The PIN from a file, as a secret manager mounts it.
	pinFile := filepath.Join(t.TempDir(), "pin")
	os.WriteFile(pinFile, []byte(pin+"\n"), 0o600)
	t.Setenv("LATCHKEY_PKCS11_PIN", "")
	os.Unsetenv("LATCHKEY_PKCS11_PIN") // set, even empty, it would win over _FILE
	t.Setenv("LATCHKEY_PKCS11_PIN_FILE", pinFile)
	if err := run(ctx, append([]string{"keys"}, seal...), &keys2, io.Discard); err != nil ||
		keys1.String() != keys2.String() {
		t.Fatalf("server keys after restarts: %v\n%s\n%s", err, keys1.String(), keys2.String())
	}
	os.Unsetenv("LATCHKEY_PKCS11_PIN_FILE")
	t.Setenv("LATCHKEY_PKCS11_PIN", pin)

	mk := filepath.Join(t.TempDir(), "master.key")
	custody.GenerateMasterKeyFile(mk)
	flags := func(drop string, extra ...string) []string {
		args := []string{"keys"}
		for i := 0; i < len(seal); i += 2 {
			if seal[i] != drop {
				args = append(args, seal[i], seal[i+1])
			}
		}
		return append(args, extra...)
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"a wrong PIN", map[string]string{"LATCHKEY_PKCS11_PIN": "wrong-9999"}, flags(""), `the PIN for token "latchkey" is wrong (CKR_PIN_INCORRECT)`},
		{"no PIN", map[string]string{"LATCHKEY_PKCS11_PIN": ""}, flags(""), "LATCHKEY_PKCS11_PIN"},
		{"the PIN as a flag", nil, flags("", "--pkcs11-pin", "wrong-9999"), "--pkcs11-pin is a secret"},
		{"no key label", nil, flags("--pkcs11-key-label"), "--pkcs11-key-label is required"},
		{"another key label", nil, flags("--pkcs11-key-label", "--pkcs11-key-label", "other"), `holds no AES key labelled "other"`},
		{"no module", nil, flags("--pkcs11-module"), "--pkcs11-module is required"},
		{"a module that is not there", nil, flags("--pkcs11-module", "--pkcs11-module", "/nonexistent/libnothing.so"), `loading module "/nonexistent/libnothing.so"`},
		{"a relative module path", nil, flags("--pkcs11-module", "--pkcs11-module", "libsofthsm2.so"), "must be an absolute path"},
		{"no token", nil, flags("--pkcs11-token-label"), "--pkcs11-token-label (or --pkcs11-slot) is required"},
		{"another token", nil, flags("--pkcs11-token-label", "--pkcs11-token-label", "absent"), `no token labelled "absent"`},
		{"a file seal on a pkcs11 deployment", nil, []string{"keys", "--data-dir", dir, "--master-key-file", mk}, `held by a pkcs11 seal (key "latchkey-master" at token "latchkey")`},
		{"both a file and pkcs11", nil, flags("", "--master-key-file", mk), "give no --master-key-file"},
		{"a transit seal on a pkcs11 deployment", map[string]string{"LATCHKEY_TRANSIT_TOKEN": "t"}, []string{"keys", "--data-dir", dir, "--seal", "transit", "--transit-addr", "http://127.0.0.1:1", "--transit-key", "k"}, `seal is "pkcs11", not transit`},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			err := run(ctx, c.args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "wrong-9999") || strings.Contains(err.Error(), pin) {
				t.Fatalf("the PIN is echoed: %v", err)
			}
		})
	}

	// A deployment sealed by a file refuses --seal pkcs11.
	fileDir := t.TempDir()
	if err := run(ctx, []string{"init", "--org-name", "F", "--user-name", "u", "--api-public-key", pub, "--data-dir", fileDir, "--master-key-file", mk}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, flags("--data-dir", "--data-dir", fileDir), io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "has no pkcs11 seal record") {
		t.Fatalf("--seal pkcs11 on a file deployment: %v", err)
	}

	// The token replaced by another of the same label: without the key the start fails; with a
	// new key of the same label, that key does not open the master key.
	softhsmtest.NewToken(t, "latchkey", "so-5678", pin)
	if err := run(ctx, append([]string{"keys"}, seal...), io.Discard, io.Discard); err == nil ||
		!strings.Contains(
			err.Error(),
			"unsealing the master key through pkcs11",
		) || !strings.Contains(err.Error(), "opens only with the key that wrapped it") {
		t.Fatalf("the key gone: %v", err)
	}
	if err := run(ctx, append(append(append([]string{}, initArgs...), seal...), "--data-dir", t.TempDir(), "--pkcs11-create-key"), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, append([]string{"keys"}, seal...), io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "does not open this deployment's master key") {
		t.Fatalf("another key of the same label: %v", err)
	}
	// The token unreachable (no token in the module's configuration): the start fails, naming it.
	empty := filepath.Join(t.TempDir(), "softhsm2.conf")
	os.MkdirAll(filepath.Join(filepath.Dir(empty), "tokens"), 0o700)
	os.WriteFile(empty, []byte("directories.tokendir = "+filepath.Join(filepath.Dir(empty), "tokens")+"\n"), 0o600)
	t.Setenv("SOFTHSM2_CONF", empty)
	if err := run(ctx, append([]string{"keys"}, seal...), io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), `no token labelled "latchkey"`) {
		t.Fatalf("the token unreachable: %v", err)
	}
}
