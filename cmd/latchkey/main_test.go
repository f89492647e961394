package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/stamp"
)

func TestEnvName(t *testing.T) {
	for in, want := range map[string]string{"data-dir": "LATCHKEY_DATA_DIR", "api-addr": "LATCHKEY_API_ADDR", "dev": "LATCHKEY_DEV"} {
		if got := EnvName(in); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseLimits(t *testing.T) {
	l, err := parseLimits("users=5, user-tags=unlimited")
	if err != nil || l.UsersPerOrg != 5 || l.UserTagsPerOrg != 0 || l.APIKeysPerUser != 10 {
		t.Fatalf("parseLimits = %+v, %v", l, err)
	}
	for _, bad := range []string{"users", "nope=3", "users=-1", "users=x"} {
		if _, err := parseLimits(bad); err == nil {
			t.Errorf("parseLimits(%q) accepted", bad)
		}
	}
}

// init, keys and version run in process; flags come from the environment when not given.
func TestInitKeysFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	mk := filepath.Join(dir, "mk")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LATCHKEY_DATA_DIR", dir)
	t.Setenv("LATCHKEY_MASTER_KEY_FILE", mk)
	_, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	var out, errb bytes.Buffer
	ctx := context.Background()
	if err := run(ctx, []string{"init", "--org-name", "Acme", "--user-name", "ops", "--api-public-key", pub}, &out, &errb); err != nil {
		t.Fatalf("init: %v\n%s", err, errb.String())
	}
	var created map[string]string
	if err := json.Unmarshal(out.Bytes(), &created); err != nil || created["organizationId"] == "" ||
		created["userId"] == "" ||
		created["apiKeyId"] == "" {
		t.Fatalf("init printed %q", out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"keys"}, &out, &errb); err != nil {
		t.Fatalf("keys: %v", err)
	}
	var keys map[string]string
	if err := json.Unmarshal(out.Bytes(), &keys); err != nil || len(keys["signerPublicKey"]) != 130 {
		t.Fatalf("keys printed %q", out.String())
	}
	// LATCHKEY_<FLAG>_FILE: the value comes from a file (a container or systemd secret).
	os.Unsetenv("LATCHKEY_DATA_DIR")
	secret := filepath.Join(t.TempDir(), "data_dir")
	if err := os.WriteFile(secret, []byte(dir+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LATCHKEY_DATA_DIR_FILE", secret)
	out.Reset()
	if err := run(ctx, []string{"keys"}, &out, &errb); err != nil ||
		!strings.Contains(out.String(), keys["signerPublicKey"]) {
		t.Fatalf("keys with LATCHKEY_DATA_DIR_FILE: %v %q", err, out.String())
	}
	t.Setenv("LATCHKEY_DATA_DIR_FILE", filepath.Join(t.TempDir(), "missing"))
	if err := run(ctx, []string{"keys"}, &out, &errb); err == nil ||
		!strings.Contains(err.Error(), "LATCHKEY_DATA_DIR_FILE") {
		t.Fatalf("a missing _FILE: %v", err)
	}
	t.Setenv("LATCHKEY_DATA_DIR_FILE", secret)
	out.Reset()
	if err := run(ctx, []string{"keyring", "rotate"}, &out, &errb); err != nil ||
		!strings.Contains(out.String(), `"activeVersion":2`) {
		t.Fatalf("keyring rotate: %v %q", err, out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"version"}, &out, &errb); err != nil || !strings.HasPrefix(out.String(), "latchkey ") ||
		!strings.Contains(out.String(), "commit ") || !strings.Contains(out.String(), "built ") {
		t.Fatalf("version: %v %q", err, out.String())
	}
}

func TestMissingMasterKeyIsAClearError(t *testing.T) {
	t.Setenv("LATCHKEY_MASTER_KEY", "")
	os.Unsetenv("LATCHKEY_MASTER_KEY")
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"keys", "--data-dir", t.TempDir()}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "no master key") {
		t.Fatalf("err = %v", err)
	}
	if err := run(context.Background(), []string{"frobnicate"}, &out, &errb); err == nil {
		t.Fatal("unknown command accepted")
	}
	if err := run(context.Background(), []string{"init", "--data-dir", t.TempDir(), "--dev"}, &out, &errb); err == nil ||
		!strings.Contains(err.Error(), "required") {
		t.Fatalf("init without names: %v", err)
	}
}

// proxy enable, update, show and disable work on the store a server uses.
func TestProxyCommand(t *testing.T) {
	dir := t.TempDir()
	mk := filepath.Join(dir, "mk")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	store := []string{"--data-dir", dir, "--master-key-file", mk}
	_, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	ctx := context.Background()
	runJSON := func(args ...string) map[string]any {
		t.Helper()
		var out, errb bytes.Buffer
		if err := run(ctx, append(args, store...), &out, &errb); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errb.String())
		}
		var v map[string]any
		if err := json.Unmarshal(out.Bytes(), &v); err != nil {
			t.Fatalf("%v printed %q", args, out.String())
		}
		return v
	}
	org := runJSON("init", "--org-name", "Acme", "--user-name", "ops", "--api-public-key", pub)["organizationId"].(string)

	en := runJSON(
		"proxy",
		"enable",
		"--org",
		org,
		"--allowed-origins",
		"https://app.example,http://localhost:3000",
		"--otp-length",
		"8",
		"--enabled-providers",
		"email,google",
	)
	cfgID, _ := en["configId"].(string)
	if cfgID == "" || len(en) != 1 {
		t.Fatalf("enable printed %v", en)
	}
	t.Setenv("LATCHKEY_SESSION_EXPIRATION_SECONDS", "3600")
	up := runJSON("proxy", "update", "--org", org, "--email-app-name", "Acme Wallet")
	s := up["settings"].(map[string]any)
	if up["configId"] != cfgID || s["otpLength"] != float64(8) || s["sessionExpirationSeconds"] != float64(3600) ||
		s["email"].(map[string]any)["appName"] != "Acme Wallet" || len(s["allowedOrigins"].([]any)) != 2 {
		t.Fatalf("update kept or set the wrong settings: %v", up)
	}
	os.Unsetenv("LATCHKEY_SESSION_EXPIRATION_SECONDS")
	sh := runJSON("proxy", "show", "--org", org)
	if sh["configId"] != cfgID || sh["proxyUserId"] == nil || strings.Contains(fmt.Sprint(sh), "sealed") {
		t.Fatalf("show: %v", sh)
	}
	dis := runJSON("proxy", "disable", "--org", org)
	if dis["settings"].(map[string]any)["enabled"] != false || dis["proxyUserId"] != nil {
		t.Fatalf("disable: %v", dis)
	}
	if again := runJSON("proxy", "enable", "--org", org); again["configId"] != cfgID {
		t.Fatalf("re-enable gave another config id: %v", again)
	}

	var out, errb bytes.Buffer
	for _, bad := range [][]string{
		{"proxy"}, {"proxy", "frobnicate", "--org", org}, {"proxy", "show"},
		{"proxy", "update", "--org", org, "--otp-length", "2"},
		{"proxy", "enable", "--org", org},
		{"proxy", "show", "--org", "00000000-0000-4000-8000-000000000000"},
	} {
		if err := run(ctx, append(bad, store...), &out, &errb); err == nil {
			t.Errorf("%v succeeded", bad)
		}
	}
}

// The client commands run from the command line with latchkey's flag rules (flags from the
// environment; typos are usage errors, exit 2).
func TestClientCommandsAreWired(t *testing.T) {
	keyDir := filepath.Join(t.TempDir(), "keys")
	t.Setenv("LATCHKEY_KEY_DIR", keyDir)
	ctx := context.Background()
	var out, errb bytes.Buffer
	if err := run(ctx, []string{"keygen", "--name", "alice"}, &out, &errb); err != nil {
		t.Fatalf("keygen: %v\n%s", err, errb.String())
	}
	if _, err := os.Stat(filepath.Join(keyDir, "alice.json")); err != nil ||
		len(strings.TrimSpace(out.String())) != 66 {
		t.Fatalf("keygen printed %q; key file: %v", out.String(), err)
	}
	for _, args := range [][]string{
		{"keygen"},
		{"keygen", "--nmae", "x"},
		{"request", "--key", "alice"},
		{"export", "decrypt", "--embedded-key", "alice"},
		{"export"},
	} {
		err := run(ctx, args, &out, &errb)
		if err == nil || !isUsageError(err) {
			t.Errorf("latchkey %s: %v, want a usage error", strings.Join(args, " "), err)
		}
	}
	if err := run(ctx, []string{"keygen", "--nmae", "x"}, &out, &errb); err == nil ||
		!strings.Contains(err.Error(), "did you mean --name?") {
		t.Errorf("a mistyped flag: %v", err)
	}
}
