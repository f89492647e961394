package main

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// configFlags is a flag set shaped like serve's: plain, repeatable, boolean and secret flags
// and --config.
func configFlags() (*flag.FlagSet, map[string]*string, *listFlag, *bool) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	vals := map[string]*string{}
	for _, n := range []string{"api-addr", "log-level", "smtp-password", "data-dir"} {
		vals[n] = fs.String(n, "default-"+n, "")
	}
	var list listFlag
	fs.Var(&list, "chain-rpc", "")
	dev := fs.Bool("dev", false, "")
	fs.String(configFlag, "", "")
	return fs, vals, &list, dev
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "latchkey.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The configuration file gives any flag by name; a flag on the command line beats the
// environment, which beats the file.
func TestConfigFilePrecedence(t *testing.T) {
	path := writeConfig(
		t,
		"# a comment\napi-addr: 0.0.0.0:9000\nlog-level: debug\ndata-dir: /from/file\ndev: true\nchain-rpc:\n  - eip155:1=https://a.example\n  - solana:mainnet=https://b.example\n",
	)
	t.Setenv("LATCHKEY_LOG_LEVEL", "warn")
	t.Setenv("LATCHKEY_DATA_DIR", "/from/env")
	fs, vals, list, dev := configFlags()
	if err := parseFlags(fs, []string{"--config", path, "--data-dir", "/from/flag"}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"api-addr": "0.0.0.0:9000", "log-level": "warn", "data-dir": "/from/flag", "smtp-password": "default-smtp-password"} {
		if got := *vals[name]; got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if !*dev || list.String() != "eip155:1=https://a.example,solana:mainnet=https://b.example" {
		t.Fatalf("dev %v, chain-rpc %q", *dev, list.String())
	}

	// LATCHKEY_CONFIG names the file as well as --config does.
	t.Setenv("LATCHKEY_CONFIG", path)
	fs, vals, _, _ = configFlags()
	if err := parseFlags(fs, nil); err != nil || *vals["api-addr"] != "0.0.0.0:9000" {
		t.Fatalf("LATCHKEY_CONFIG: %v %q", err, *vals["api-addr"])
	}
}

// What a configuration file may not say is refused, naming the file, the line and the key.
func TestConfigFileRefusals(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"unknown key, with a suggestion", "api-adr: x\n", `line 1: unknown key "api-adr"; did you mean "api-addr"?`},
		{"a secret", "api-addr: x\nsmtp-password: hunter2\n", `line 2: "smtp-password" is a secret: give it in LATCHKEY_SMTP_PASSWORD`},
		{"a key twice", "api-addr: a\napi-addr: b\n", `line 2: "api-addr" is given twice`},
		{"a list for a single value", "api-addr: [a, b]\n", "api-addr: takes one value, not a list"},
		{"a mapping value", "api-addr:\n  host: a\n", "api-addr: must be a value or a list of values"},
		{"no value", "api-addr:\n", `api-addr: has no value`},
		{"not a mapping", "- api-addr\n", "must be a mapping of flag names"},
		{"a value the flag refuses", "dev: perhaps\n", "dev: parse error"},
		{"another configuration file", "config: other.yaml\n", "cannot name another"},
		{"not YAML", "api-addr: [\n", "latchkey.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.text)
			fs, _, _, _ := configFlags()
			err := parseFlags(fs, []string{"--config", path})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("the secret is echoed: %v", err)
			}
		})
	}
	// An empty file configures nothing; a missing one is an error.
	fs, vals, _, _ := configFlags()
	if err := parseFlags(fs, []string{"--config", writeConfig(t, "")}); err != nil ||
		*vals["api-addr"] != "default-api-addr" {
		t.Fatalf("empty file: %v %q", err, *vals["api-addr"])
	}
	fs, _, _, _ = configFlags()
	if err := parseFlags(fs, []string{"--config", filepath.Join(t.TempDir(), "missing.yaml")}); err == nil ||
		!strings.Contains(err.Error(), "--config") {
		t.Fatalf("missing file: %v", err)
	}
}

// A secret flag is refused on the command line (every user sees it in ps) and read from the
// environment or a _FILE; a bad value from the environment is not echoed.
func TestSecretsOnlyFromTheEnvironment(t *testing.T) {
	fs, _, _, _ := configFlags()
	err := parseFlags(fs, []string{"--smtp-password", "hunter2"})
	if err == nil || !strings.Contains(err.Error(), "LATCHKEY_SMTP_PASSWORD_FILE") ||
		strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("--smtp-password on the command line: %v", err)
	}
	secret := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(secret, []byte("hunter2\n"), 0o600)
	t.Setenv("LATCHKEY_SMTP_PASSWORD_FILE", secret)
	fs, vals, _, _ := configFlags()
	if err := parseFlags(fs, nil); err != nil || *vals["smtp-password"] != "hunter2" {
		t.Fatalf("from a file: %v", err)
	}
}

// serve reads its configuration file before it opens anything: a bad file fails the command
// and leaves the data directory untouched.
func TestServeConfigFileRefusedBeforeStart(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	path := writeConfig(t, "data-dir: "+data+"\ndev: true\napi-addr: 127.0.0.1:0\nproxy-adr: 127.0.0.1:0\n")
	err := run(context.Background(), []string{"serve", "--config", path}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `did you mean "proxy-addr"?`) {
		t.Fatalf("serve with a mistyped key: %v", err)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("the data directory was created: %v", err)
	}
	path = writeConfig(
		t,
		"data-dir: "+data+"\ndev: true\napi-addr: 127.0.0.1:0\ntls-cert-file: /no/such/cert.pem\ntls-key-file: /no/such/key.pem\n",
	)
	err = run(context.Background(), []string{"serve", "--config", path}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "TLS for the api listener") {
		t.Fatalf("serve with a missing certificate: %v", err)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("the data directory was created: %v", err)
	}
}

// Every list flag accumulates: repeated, comma-separated, or a YAML list in the file.
func TestListFlagsAccumulate(t *testing.T) {
	fs, _, list, _ := configFlags()
	if err := parseFlags(fs, []string{"--chain-rpc", "a", "--chain-rpc", "b, c"}); err != nil ||
		list.String() != "a,b,c" {
		t.Fatalf("repeated: %v %q", err, list.String())
	}
	// serve's list flags are all of the one type, so each takes a YAML list.
	path := writeConfig(
		t,
		"webauthn-origins: [https://a.example, https://b.example]\ntrusted-proxies:\n  - 10.0.0.0/8\ndata-dir: x\n",
	)
	err := run(
		context.Background(),
		[]string{"serve", "--config", path, "--api-addr", "bad address"},
		io.Discard,
		io.Discard,
	)
	if err == nil || strings.Contains(err.Error(), "not a list") || strings.Contains(err.Error(), path) {
		t.Fatalf("serve's list flags from a YAML list: %v", err)
	}
}
