package client

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mr-tron/base58"

	"github.com/latchkey/latchkey/internal/chain/address"
	"github.com/latchkey/latchkey/internal/custody/hd"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/stamp"
)

// stdin is what the commands cli runs read for "-" (tests replace it).
var stdin io.Reader = os.Stdin

// cli runs a client command (keygen, request or export) in process, as latchkey would, and
// returns stdout.
func cli(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	c := Commands{Stdin: stdin, Stdout: &out, Stderr: &errb, ParseFlags: parseEnvFlags}
	ctx := context.Background()
	var err error
	switch args[0] {
	case "keygen":
		err = c.Keygen(ctx, args[1:])
	case "request":
		err = c.Request(ctx, args[1:])
	case "export":
		err = c.Export(ctx, args[1:])
	default:
		t.Fatalf("no client command %q", args[0])
	}
	return out.String(), err
}

// parseEnvFlags parses the command line, then takes each flag not given there from
// LATCHKEY_<FLAG> in the environment, as latchkey does.
func parseEnvFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return UsageError{"unexpected argument " + fs.Arg(0)}
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		v, ok := os.LookupEnv("LATCHKEY_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_")))
		if ok && !given[f.Name] && err == nil {
			err = f.Value.Set(v)
		}
	})
	return err
}

func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := cli(t, args...)
	if err != nil {
		t.Fatalf("latchkey %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// devServer is a real Latchkey (SQLite, --dev master key and demo organization) behind httptest.
func devServer(t *testing.T) (url string, dc *server.DevCredentials, credsPath string) {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	s, err := server.Open(
		ctx,
		server.Config{DataDir: dir, Dev: true, Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
	)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.API.Handler())
	t.Cleanup(func() { srv.Close(); s.Close() })
	dc, _, err = s.EnsureDevOrganization(ctx, srv.URL)
	if err != nil || dc == nil {
		t.Fatalf("dev organization: %v", err)
	}
	return srv.URL, dc, filepath.Join(dir, server.DevCredentialsFile)
}

func jsonPath(t *testing.T, raw string, path ...string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, raw)
	}
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, _ := strconv.Atoi(p)
			if i >= len(x) {
				return ""
			}
			v = x[i]
		default:
			return ""
		}
	}
	s, _ := v.(string)
	return s
}

// A first session with the client: keygen, a stamped request that creates a wallet, an export decrypted to
// the mnemonic, against a real server; then the errors a user meets.
func TestClientAgainstServer(t *testing.T) {
	apiURL, dc, creds := devServer(t)
	keyDir := filepath.Join(t.TempDir(), "keys")
	t.Setenv("LATCHKEY_KEY_DIR", keyDir) // the key directory comes from the environment

	// keygen: prints the public key, writes <name>.json 0600 in a 0700 directory.
	pub := strings.TrimSpace(mustCLI(t, "keygen", "--name", "alice"))
	if len(pub) != 66 || (pub[:2] != "02" && pub[:2] != "03") {
		t.Fatalf("keygen printed %q, want a compressed P-256 key", pub)
	}
	fi, err := os.Stat(filepath.Join(keyDir, "alice.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	if di, _ := os.Stat(keyDir); di.Mode().Perm() != 0o700 {
		t.Fatalf("key directory mode %v", di.Mode().Perm())
	}
	if _, err := cli(t, "keygen", "--name", "alice"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("keygen over an existing key: %v", err)
	}

	// Register alice for the dev root user, stamped with the dev credentials' key.
	body := `{"type":"ACTIVITY_TYPE_CREATE_API_KEYS_V2","parameters":{"userId":"` + dc.UserID +
		`","apiKeys":[{"apiKeyName":"cli","publicKey":"` + pub + `","curveType":"API_KEY_CURVE_P256"}]}}`
	out := mustCLI(t, "request", "--api-url", apiURL, "--key", creds, "--path", "/public/v1/submit/create_api_keys",
		"--organization-id", dc.OrganizationID, "--body", body)
	if jsonPath(t, out, "activity", "status") != "ACTIVITY_STATUS_COMPLETED" {
		t.Fatalf("create_api_keys: %s", out)
	}

	// alice creates a wallet (timestampMs filled in by the client).
	out = mustCLI(
		t,
		"request",
		"--api-url",
		apiURL,
		"--key",
		"alice",
		"--path",
		"/public/v1/submit/create_wallet",
		"--organization-id",
		dc.OrganizationID,
		"--body",
		`{"type":"ACTIVITY_TYPE_CREATE_WALLET","parameters":{"walletName":"cli",
		"accounts":[{"curve":"CURVE_SECP256K1","pathFormat":"PATH_FORMAT_BIP32","path":"m/44'/60'/0'/0/0","addressFormat":"ADDRESS_FORMAT_ETHEREUM"}],
		"mnemonicLength":12}}`,
	)
	walletID := jsonPath(t, out, "activity", "result", "createWalletResult", "walletId")
	ethAddr := jsonPath(t, out, "activity", "result", "createWalletResult", "addresses", "0")
	if walletID == "" || !strings.HasPrefix(ethAddr, "0x") {
		t.Fatalf("create_wallet: %s", out)
	}
	// A query stamped by alice, body from stdin.
	stdin = strings.NewReader(`{"walletId":"` + walletID + `"}`)
	t.Cleanup(func() { stdin = os.Stdin })
	out = mustCLI(t, "request", "--api-url", apiURL, "--key", "alice", "--path", "/public/v1/query/get_wallet",
		"--organization-id", dc.OrganizationID, "--body", "-")
	if jsonPath(t, out, "wallet", "walletName") != "cli" {
		t.Fatalf("get_wallet: %s", out)
	}

	// Export to a keygen'ed P-256 key (body from a file), decrypt to the mnemonic.
	var recv publicRecord
	if err := json.Unmarshal([]byte(mustCLI(t, "keygen", "--name", "recv", "--json")), &recv); err != nil ||
		len(recv.UncompressedPublicKey) != 130 {
		t.Fatalf("keygen --json: %+v %v", recv, err)
	}
	bodyFile := filepath.Join(t.TempDir(), "export.json")
	os.WriteFile(
		bodyFile,
		[]byte(
			`{"type":"ACTIVITY_TYPE_EXPORT_WALLET","parameters":{"walletId":"`+walletID+`","targetPublicKey":"`+recv.UncompressedPublicKey+`"}}`,
		),
		0o600,
	)
	exportResp := mustCLI(
		t,
		"request",
		"--api-url",
		apiURL,
		"--key",
		"alice",
		"--path",
		"/public/v1/submit/export_wallet",
		"--organization-id",
		dc.OrganizationID,
		"--body",
		"@"+bodyFile,
	)
	bundle := jsonPath(t, exportResp, "activity", "result", "exportWalletResult", "exportBundle")
	if bundle == "" {
		t.Fatalf("export_wallet: %s", exportResp)
	}
	mnemonic := strings.TrimSpace(mustCLI(t, "export", "decrypt", "--api-url", apiURL, "--bundle", bundle,
		"--embedded-key", "recv", "--organization-id", dc.OrganizationID))
	if n := len(strings.Fields(mnemonic)); n != 12 {
		t.Fatalf("export decrypt printed %d words: %q", n, mnemonic)
	}
	seed, err := hd.MnemonicToSeed(mnemonic, "")
	if err != nil {
		t.Fatal(err)
	}
	k, _ := hd.DeriveKeyFromPath(hd.CurveSecp256k1, seed, "m/44'/60'/0'/0/0")
	if got, _ := address.Derive("ADDRESS_FORMAT_ETHEREUM", "CURVE_SECP256K1", k.PublicKey()); got != ethAddr {
		t.Fatalf("the exported mnemonic derives %s, want %s", got, ethAddr)
	}
	// The whole response on stdin works too, with the signer key given.
	wk := mustCLI(
		t,
		"request",
		"--api-url",
		apiURL,
		"--key",
		"alice",
		"--path",
		"/public/v1/query/whoami",
		"--organization-id",
		dc.OrganizationID,
	)
	if jsonPath(t, wk, "organizationId") != dc.OrganizationID {
		t.Fatalf("whoami: %s", wk)
	}
	resp, err := http.Get(apiURL + "/.well-known/latchkey.json")
	if err != nil {
		t.Fatal(err)
	}
	var keys server.PublicKeys
	json.NewDecoder(resp.Body).Decode(&keys)
	resp.Body.Close()
	stdin = strings.NewReader(exportResp)
	if got := strings.TrimSpace(mustCLI(t, "export", "decrypt", "--api-url", "http://127.0.0.1:1", "--signer-public-key", strings.ToUpper(keys.SignerPublicKey),
		"--embedded-key", "recv", "--organization-id", dc.OrganizationID)); got != mnemonic {
		t.Fatalf("export decrypt from a response on stdin: %q", got)
	}

	// Errors.
	mustCLI(t, "keygen", "--name", "edkey", "--curve", "ed25519")
	_, otherSigner, _ := stamp.GenerateKey(stamp.CurveP256)
	stale := strconv.FormatInt(time.Now().Add(-2*time.Hour).UnixMilli(), 10)
	closed := closedURL(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing key", []string{"request", "--api-url", apiURL, "--key", "nobody", "--path", "/public/v1/query/whoami"},
			[]string{`no key named "nobody"`, keyDir, "latchkey keygen --name nobody"}},
		{"missing key file", []string{"request", "--api-url", apiURL, "--key", "/nonexistent/k.json", "--path", "/public/v1/query/whoami"},
			[]string{"/nonexistent/k.json does not exist"}},
		{"unreachable server", []string{"request", "--api-url", closed, "--key", "alice", "--path", "/public/v1/query/whoami"},
			[]string{"cannot reach " + closed}},
		{"refused: stale timestamp", []string{"request", "--api-url", apiURL, "--key", "alice", "--path", "/public/v1/submit/create_user_tag",
			"--organization-id", dc.OrganizationID, "--body", `{"type":"ACTIVITY_TYPE_CREATE_USER_TAG","timestampMs":"` + stale + `","parameters":{"userTagName":"t","userIds":[]}}`},
			[]string{"HTTP 400: code 3: timestampMs: request is stale", "INVALID_TIMESTAMP", "request "}},
		{"refused: unknown key", []string{"request", "--api-url", apiURL, "--key", "recv", "--path", "/public/v1/query/whoami", "--organization-id", dc.OrganizationID},
			[]string{"HTTP 401: code 16: "}},
		{"refused: unknown path", []string{"request", "--api-url", apiURL, "--key", "alice", "--path", "/public/v1/query/nope", "--organization-id", dc.OrganizationID},
			[]string{"HTTP 404: code 5: "}},
		{"export: unreachable signer source", []string{"export", "decrypt", "--api-url", closed, "--bundle", bundle, "--embedded-key", "recv", "--organization-id", dc.OrganizationID},
			[]string{"fetching the signer key: cannot reach " + closed}},
		{"export: another signer", []string{"export", "decrypt", "--signer-public-key", otherSigner, "--bundle", bundle, "--embedded-key", "recv", "--organization-id", dc.OrganizationID},
			[]string{"is not the expected"}},
		{"export: another organization", []string{"export", "decrypt", "--api-url", apiURL, "--bundle", bundle, "--embedded-key", "recv", "--organization-id", "org-x"},
			[]string{"not org-x"}},
		{"export: another key", []string{"export", "decrypt", "--api-url", apiURL, "--bundle", bundle, "--embedded-key", "alice", "--organization-id", dc.OrganizationID},
			[]string{`export decrypt with key "alice": `}},
		{"export: not a P-256 key", []string{"export", "decrypt", "--api-url", apiURL, "--bundle", bundle, "--embedded-key", "edkey", "--organization-id", dc.OrganizationID},
			[]string{"API_KEY_CURVE_ED25519 key", "keygen --curve p256"}},
		{"export: missing embedded key", []string{"export", "decrypt", "--api-url", apiURL, "--bundle", bundle, "--embedded-key", "gone", "--organization-id", dc.OrganizationID},
			[]string{`no key named "gone"`}},
		{"export: not a bundle", []string{"export", "decrypt", "--api-url", apiURL, "--bundle", `{"a":1}`, "--embedded-key", "recv", "--organization-id", dc.OrganizationID},
			[]string{"holds no export bundle"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := cli(t, tc.args...)
			if err == nil {
				t.Fatalf("succeeded: %s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if out != "" {
				t.Errorf("printed %q on failure", out)
			}
		})
	}
}

// closedURL is the URL of a port nothing listens on.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func TestKeygen(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		curve  string
		stored stamp.Curve
		pubLen int
	}{
		{"p256", stamp.CurveP256, 66},
		{"secp256k1", stamp.CurveSecp256k1, 66},
		{"ed25519", stamp.CurveEd25519, 64},
		{"API_KEY_CURVE_ED25519", stamp.CurveEd25519, 64},
	} {
		t.Run(tc.curve, func(t *testing.T) {
			name := "k-" + strings.ToLower(tc.curve)
			out := mustCLI(t, "keygen", "--key-dir", dir, "--name", name, "--curve", tc.curve, "--json")
			if strings.Contains(out, "privateKey") {
				t.Fatalf("keygen --json printed the private key: %s", out)
			}
			var rec publicRecord
			if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.Name != name ||
				rec.Curve != string(tc.stored) ||
				len(rec.PublicKey) != tc.pubLen {
				t.Fatalf("keygen --json: %s (%v)", out, err)
			}
			k, err := loadKey(dir, name)
			if err != nil || k.PublicKey != rec.PublicKey {
				t.Fatalf("loadKey: %+v %v", k, err)
			}
			st, err := k.stamper()
			if err != nil {
				t.Fatal(err)
			}
			if got := st.(stamp.PublicKeyer).PublicKey(); got != rec.PublicKey {
				t.Fatalf("stamper public key %s, want %s", got, rec.PublicKey)
			}
			// --force replaces it with a new key.
			again := strings.TrimSpace(
				mustCLI(t, "keygen", "--key-dir", dir, "--name", name, "--curve", tc.curve, "--force"),
			)
			if again == rec.PublicKey || len(again) != tc.pubLen {
				t.Fatalf("--force: %q", again)
			}
		})
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no name", []string{"keygen", "--key-dir", dir}, "--name is required"},
		{"path in name", []string{"keygen", "--key-dir", dir, "--name", "../evil"}, "key name"},
		{"hidden name", []string{"keygen", "--key-dir", dir, "--name", ".x"}, "key name"},
		{"bad curve", []string{"keygen", "--key-dir", dir, "--name", "x", "--curve", "rsa"}, "--curve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := cli(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// A tampered key file is refused.
	os.WriteFile(
		filepath.Join(dir, "bad.json"),
		[]byte(
			`{"name":"bad","curve":"API_KEY_CURVE_P256","publicKey":"02aa","privateKey":"`+strings.Repeat(
				"11",
				32,
			)+`"}`,
		),
		0o600,
	)
	if _, err := loadKey(dir, "bad"); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("tampered key: %v", err)
	}
}

func TestPrepareBody(t *testing.T) {
	now := time.UnixMilli(1700000000123)
	for _, tc := range []struct {
		name, body, path, org, want string
	}{
		{"submit adds timestamp and org", `{"type":"T", "parameters":{}}`, "/public/v1/submit/x", "o1",
			`{"type":"T","parameters":{},"timestampMs":"1700000000123","organizationId":"o1"}`},
		{"submit keeps its timestamp", `{"timestampMs":"5","organizationId":"o2"}`, "/public/v1/submit/x", "o1", `{"timestampMs":"5","organizationId":"o2"}`},
		{"query: no timestamp", `{}`, "/public/v1/query/whoami", "o1", `{"organizationId":"o1"}`},
		{"empty body", ``, "/public/v1/submit/x", "", `{"timestampMs":"1700000000123"}`},
		{"no org given", `{"a":1}`, "/public/v1/query/x", "", `{"a":1}`},
		{"not an object", `[1, 2]`, "/public/v1/submit/x", "o", `[1,2]`},
		{"proxy path", `{"otpType":"OTP_TYPE_EMAIL"}`, "/v1/otp_init", "", `{"otpType":"OTP_TYPE_EMAIL"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := prepareBody([]byte(tc.body), tc.path, tc.org, now)
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s (%v), want %s", got, err, tc.want)
			}
		})
	}
	if _, err := prepareBody([]byte(`{"a":`), "/public/v1/submit/x", "", now); err == nil {
		t.Fatal("invalid JSON accepted")
	}
}

// --proxy sends the body unstamped to the auth proxy with its configuration id.
func TestRequestProxy(t *testing.T) {
	var got *http.Request
	var gotBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		gotBody, _ = io.ReadAll(r.Body)
		if r.URL.Path == "/v1/refused" {
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"code":7,"message":"origin not allowed","details":[]}`))
			return
		}
		if r.URL.Path == "/v1/slow" {
			time.Sleep(500 * time.Millisecond)
		}
		if r.URL.Path == "/v1/broken" {
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte(`upstream down`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"otpId":"abc"}`))
	}))
	defer srv.Close()
	out := mustCLI(t, "request", "--proxy", "--api-url", srv.URL, "--config-id", "cfg-1", "--path", "/v1/otp_init",
		"--body", `{"otpType":"OTP_TYPE_EMAIL", "contact":"a@example.com"}`)
	if got.Method != http.MethodPost || got.URL.Path != "/v1/otp_init" ||
		got.Header.Get("X-Auth-Proxy-Config-ID") != "cfg-1" ||
		got.Header.Get("Content-Type") != "application/json" ||
		got.Header.Get("X-Stamp") != "" {
		t.Fatalf("request: %s %s %v", got.Method, got.URL, got.Header)
	}
	if string(gotBody) != `{"otpType":"OTP_TYPE_EMAIL","contact":"a@example.com"}` {
		t.Fatalf("body %s", gotBody)
	}
	if jsonPath(t, out, "otpId") != "abc" || !strings.Contains(out, "\n  \"otpId\"") {
		t.Fatalf("printed %q", out)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"refused", []string{"--config-id", "c", "--path", "/v1/refused"}, "HTTP 403: code 7: origin not allowed"},
		{"not JSON", []string{"--config-id", "c", "--path", "/v1/broken"}, "HTTP 502 Bad Gateway: upstream down"},
		{"no config id", []string{"--path", "/v1/otp_init"}, "--config-id"},
		{"timeout", []string{"--config-id", "c", "--path", "/v1/slow", "--timeout", "50ms"}, "no answer from " + srv.URL + " in time"},
		{"key with proxy", []string{"--config-id", "c", "--key", "k", "--path", "/v1/otp_init"}, "not stamped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"request", "--proxy", "--api-url", srv.URL}, tc.args...)
			if _, err := cli(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestFormatExported(t *testing.T) {
	seed := bytes.Repeat([]byte{7}, 32)
	priv := ed25519.NewKeyFromSeed(seed)
	for _, tc := range []struct {
		name, format string
		plain        []byte
		want         string
	}{
		{"mnemonic", "", []byte("abandon ability able about above absent absorb abstract absurd abuse access accident"),
			"abandon ability able about above absent absorb abstract absurd abuse access accident"},
		{"mnemonic ignores key format", "SOLANA", []byte("すべて あいこくしん"), "すべて あいこくしん"},
		{"hex", "HEXADECIMAL", seed, hex.EncodeToString(seed)},
		{"default hex", "", []byte{0xab, 0x01}, "ab01"},
		{"solana", "solana", seed, base58.Encode(priv)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := formatExported(tc.plain, tc.format)
			if err != nil || got != tc.want {
				t.Fatalf("got %q (%v), want %q", got, err, tc.want)
			}
		})
	}
	if _, err := formatExported([]byte{1, 2, 3}, "SOLANA"); err == nil {
		t.Fatal("SOLANA accepted a 3-byte key")
	}
}

func TestResolveKeyDir(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	for _, tc := range []struct{ flag, xdg, want string }{
		{"/k", "/x", "/k"},
		{"", "/x", "/x/latchkey/keys"},
		{"", "", "/home/u/.config/latchkey/keys"},
		{"", "relative", "/home/u/.config/latchkey/keys"}, // XDG paths must be absolute
	} {
		t.Setenv("XDG_CONFIG_HOME", tc.xdg)
		if got, err := resolveKeyDir(tc.flag); err != nil || got != tc.want {
			t.Errorf("resolveKeyDir(%q) with XDG_CONFIG_HOME=%q = %q, %v; want %q", tc.flag, tc.xdg, got, err, tc.want)
		}
	}
}
