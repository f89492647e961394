package client

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mr-tron/base58"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/stamp"
)

// Commands runs the client commands for a program's command line.
type Commands struct {
	Stdin          io.Reader // what a flag value "-" reads
	Stdout, Stderr io.Writer
	// ParseFlags parses a command's arguments into its flag set: the command line and whatever
	// else the program takes flags from (its environment). nil: the command line alone.
	ParseFlags func(fs *flag.FlagSet, args []string) error
}

// UsageError is a mistake in the command line (a missing or invalid flag), as opposed to a
// failure of the command itself.
type UsageError struct{ Msg string }

func (u UsageError) Error() string { return u.Msg }

func (c Commands) parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(c.Stderr)
	if c.ParseFlags == nil {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return UsageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
		}
		return nil
	}
	return c.ParseFlags(fs, args)
}

const (
	defaultAPIURL   = "http://127.0.0.1:8080"
	defaultProxyURL = "http://127.0.0.1:8090"
	// ProxyConfigHeader names the auth proxy configuration a request is for.
	proxyConfigHeader = "X-Auth-Proxy-Config-ID"
)

// ---- the key directory ----

// keyFile is one API key pair in the key directory, <name>.json (mode 0600).
type keyFile struct {
	Name       string `json:"name"`
	Curve      string `json:"curve"`
	PublicKey  string `json:"publicKey"`
	PrivateKey string `json:"privateKey"`
}

// publicRecord is what keygen --json prints: never the private key.
type publicRecord struct {
	Name      string `json:"name"`
	Curve     string `json:"curve"`
	PublicKey string `json:"publicKey"`
	// UncompressedPublicKey is set for P-256 keys: the form export activities take as
	// targetPublicKey.
	UncompressedPublicKey string `json:"uncompressedPublicKey,omitempty"`
	Path                  string `json:"path"`
}

var keyNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func checkKeyName(name string) error {
	if name == "" {
		return UsageError{"--name is required"}
	}
	if !keyNameRE.MatchString(name) {
		return UsageError{
			fmt.Sprintf(
				"key name %q: use up to 64 letters, digits, '-', '_' and '.', starting with a letter or digit",
				name,
			),
		}
	}
	return nil
}

// resolveKeyDir is --key-dir, or $XDG_CONFIG_HOME/latchkey/keys, or ~/.config/latchkey/keys.
func resolveKeyDir(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "latchkey", "keys"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", errors.New("no key directory: set --key-dir (or LATCHKEY_KEY_DIR, XDG_CONFIG_HOME or HOME)")
	}
	return filepath.Join(home, ".config", "latchkey", "keys"), nil
}

const keyDirHelp = "directory of API key files (default $XDG_CONFIG_HOME/latchkey/keys or ~/.config/latchkey/keys)"

// parseCurve accepts p256, secp256k1, ed25519 or the API_KEY_CURVE_* spelling.
func parseCurve(s string) (stamp.Curve, error) {
	switch strings.ToLower(strings.TrimPrefix(strings.ToUpper(s), "API_KEY_CURVE_")) {
	case "p256", "p-256":
		return stamp.CurveP256, nil
	case "secp256k1":
		return stamp.CurveSecp256k1, nil
	case "ed25519":
		return stamp.CurveEd25519, nil
	}
	return "", UsageError{fmt.Sprintf("--curve %q: use p256, secp256k1 or ed25519", s)}
}

func (k *keyFile) public(path string) publicRecord {
	r := publicRecord{Name: k.Name, Curve: k.Curve, PublicKey: k.PublicKey, Path: path}
	if k.Curve == string(stamp.CurveP256) {
		if u, err := custody.ParseP256PublicKeyHex(k.PublicKey); err == nil {
			r.UncompressedPublicKey = hex.EncodeToString(u)
		}
	}
	return r
}

// writeKeyFile writes k to dir/<name>.json with mode 0600 (the directory 0700), refusing to
// replace an existing key unless force.
func writeKeyFile(dir string, k *keyFile, force bool) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("key directory: %w", err)
	}
	path := filepath.Join(dir, k.Name+".json")
	b, err := json.MarshalIndent(k, "", "  ")
	if err != nil {
		return "", err
	}
	b = append(b, '\n')
	if !force {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("a key named %q already exists (%s); pass --force to replace it", k.Name, path)
		}
		if err != nil {
			return "", err
		}
		if _, err := f.Write(b); err != nil {
			f.Close()
			os.Remove(path)
			return "", err
		}
		return path, f.Close()
	}
	f, err := os.CreateTemp(dir, "."+k.Name+".*.tmp") // created 0600
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(tmp)
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return path, nil
}

// loadKey reads the key named ref from dir. A ref holding a path separator or ending in .json
// is read as a file instead, in the key directory's format or in the format of serve --dev's
// dev-credentials.json (apiPublicKey, apiPrivateKey, curve).
func loadKey(dir, ref string) (*keyFile, error) {
	if ref == "" {
		return nil, UsageError{"--key is required: the name of a key made with latchkey keygen"}
	}
	var path string
	if isKeyPath(ref) {
		path = ref
	} else {
		if err := checkKeyName(ref); err != nil {
			return nil, err
		}
		path = filepath.Join(dir, ref+".json")
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if path == ref {
			return nil, fmt.Errorf("key file %s does not exist", path)
		}
		return nil, fmt.Errorf("no key named %q in %s (create it with: latchkey keygen --name %s)", ref, dir, ref)
	}
	if err != nil {
		return nil, fmt.Errorf("reading key %q: %w", ref, err)
	}
	var raw struct {
		keyFile
		APIPublicKey  string `json:"apiPublicKey"`
		APIPrivateKey string `json:"apiPrivateKey"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("key file %s is not JSON: %w", path, err)
	}
	k := raw.keyFile
	if k.PrivateKey == "" {
		k.PrivateKey, k.PublicKey = raw.APIPrivateKey, raw.APIPublicKey
	}
	if k.Name == "" {
		k.Name = strings.TrimSuffix(filepath.Base(path), ".json")
	}
	if k.Curve == "" {
		k.Curve = string(stamp.CurveP256)
	}
	if k.PrivateKey == "" {
		return nil, fmt.Errorf("key file %s holds no private key", path)
	}
	curve, err := parseCurve(k.Curve)
	if err != nil {
		return nil, fmt.Errorf("key file %s: unknown curve %q", path, k.Curve)
	}
	k.Curve = string(curve)
	pub, err := stamp.PublicKeyHex(curve, k.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %v", path, err)
	}
	if k.PublicKey != "" && !strings.EqualFold(k.PublicKey, pub) {
		return nil, fmt.Errorf("key file %s: publicKey does not match the private key", path)
	}
	k.PublicKey = pub
	return &k, nil
}

// isKeyPath says whether a key reference is a file path rather than a name.
func isKeyPath(ref string) bool {
	return strings.ContainsRune(ref, '/') || strings.ContainsRune(ref, filepath.Separator) ||
		strings.HasSuffix(ref, ".json")
}

// loadKeyRef loads a key by name from the key directory (--key-dir or its default) or by path.
func loadKeyRef(keyDirFlag, ref string) (*keyFile, error) {
	dir := keyDirFlag
	if ref != "" && !isKeyPath(ref) {
		var err error
		if dir, err = resolveKeyDir(dir); err != nil {
			return nil, err
		}
	}
	return loadKey(dir, ref)
}

func (k *keyFile) stamper() (stamp.Stamper, error) {
	switch stamp.Curve(k.Curve) {
	case stamp.CurveP256:
		return stamp.NewP256Stamper(k.PrivateKey)
	case stamp.CurveSecp256k1:
		return stamp.NewSecp256k1Stamper(k.PrivateKey)
	case stamp.CurveEd25519:
		return stamp.NewEd25519Stamper(k.PrivateKey)
	}
	return nil, fmt.Errorf("key %q: unknown curve %q", k.Name, k.Curve)
}

// ---- keygen ----

// Keygen creates an API key pair in the key directory and prints its public key (latchkey
// keygen).
func (c Commands) Keygen(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("keygen", flag.ContinueOnError)
	name := fs.String("name", "", "name of the key (required): letters, digits, '-', '_', '.'")
	curveName := fs.String("curve", "p256", "p256, secp256k1 or ed25519")
	keyDir := fs.String("key-dir", "", keyDirHelp)
	force := fs.Bool("force", false, "replace an existing key of that name")
	asJSON := fs.Bool(
		"json",
		false,
		"print {name, curve, publicKey, uncompressedPublicKey, path} (never the private key)",
	)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if err := checkKeyName(*name); err != nil {
		return err
	}
	curve, err := parseCurve(*curveName)
	if err != nil {
		return err
	}
	dir, err := resolveKeyDir(*keyDir)
	if err != nil {
		return err
	}
	priv, pub, err := stamp.GenerateKey(curve)
	if err != nil {
		return err
	}
	k := &keyFile{Name: *name, Curve: string(curve), PublicKey: pub, PrivateKey: priv}
	path, err := writeKeyFile(dir, k, *force)
	if err != nil {
		return err
	}
	if *asJSON {
		b, _ := json.MarshalIndent(k.public(path), "", "  ")
		fmt.Fprintln(c.Stdout, string(b))
		return nil
	}
	fmt.Fprintln(c.Stdout, pub)
	return nil
}

// ---- request ----

// readInput reads a flag value that is text, @file or - (stdin).
func readInput(stdin io.Reader, flagName, v string) ([]byte, error) {
	switch {
	case v == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("--%s -: reading stdin: %w", flagName, err)
		}
		return b, nil
	case strings.HasPrefix(v, "@"):
		b, err := os.ReadFile(v[1:])
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", flagName, err)
		}
		return b, nil
	}
	return []byte(v), nil
}

// prepareBody compacts body (which must be JSON) and, when it is an object, adds timestampMs
// (the current time in ms, as a string) on /public/v1/submit/ paths and organizationId when
// given, each only if absent. Keys keep their order; added keys come last.
func prepareBody(body []byte, path, orgID string, now time.Time) ([]byte, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		body = []byte("{}")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, body); err != nil {
		return nil, UsageError{fmt.Sprintf("--body is not JSON: %v", err)}
	}
	out := buf.Bytes()
	var obj map[string]json.RawMessage
	if out[0] != '{' || json.Unmarshal(out, &obj) != nil {
		return out, nil
	}
	var add [][2]string
	if _, ok := obj["timestampMs"]; !ok && strings.HasPrefix(path, "/public/v1/submit/") {
		add = append(add, [2]string{"timestampMs", strconv.FormatInt(now.UnixMilli(), 10)})
	}
	if _, ok := obj["organizationId"]; !ok && orgID != "" {
		add = append(add, [2]string{"organizationId", orgID})
	}
	if len(add) == 0 {
		return out, nil
	}
	res := append([]byte(nil), out[:len(out)-1]...) // drop the closing brace
	for i, kv := range add {
		if len(obj) > 0 || i > 0 {
			res = append(res, ',')
		}
		k, _ := json.Marshal(kv[0])
		v, _ := json.Marshal(kv[1])
		res = append(append(append(res, k...), ':'), v...)
	}
	return append(res, '}'), nil
}

// joinURL appends path to a base URL.
func joinURL(base, path string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", UsageError{fmt.Sprintf("--api-url %q: want http(s)://host[:port]", base)}
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return strings.TrimRight(base, "/") + path, nil
}

// httpError is a non-2xx answer: the gRPC-gateway status body when there is one.
type httpError struct {
	status      int
	code        int
	message     string
	turnkeyCode string
	requestID   string
	raw         string
}

func (e *httpError) Error() string {
	var s string
	if e.message != "" || e.code != 0 {
		s = fmt.Sprintf("HTTP %d: code %d: %s", e.status, e.code, e.message)
	} else {
		s = fmt.Sprintf("HTTP %d %s", e.status, http.StatusText(e.status))
		if e.raw != "" {
			s += ": " + e.raw
		}
	}
	var extra []string
	if e.turnkeyCode != "" {
		extra = append(extra, e.turnkeyCode)
	}
	if e.requestID != "" {
		extra = append(extra, "request "+e.requestID)
	}
	if len(extra) > 0 {
		s += " [" + strings.Join(extra, ", ") + "]"
	}
	return s
}

func newHTTPError(resp *http.Response, body []byte) error {
	e := &httpError{status: resp.StatusCode, requestID: resp.Header.Get("X-Request-Id")}
	var st struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Details []struct {
			TurnkeyErrorCode string `json:"turnkeyErrorCode"`
		} `json:"details"`
	}
	if json.Unmarshal(body, &st) == nil && (st.Message != "" || st.Code != 0) {
		e.code, e.message = st.Code, st.Message
		for _, d := range st.Details {
			if d.TurnkeyErrorCode != "" {
				e.turnkeyCode = d.TurnkeyErrorCode
				break
			}
		}
		return e
	}
	raw := strings.TrimSpace(string(body))
	if len(raw) > 200 {
		raw = strings.ToValidUTF8(raw[:200], "") + "…"
	}
	e.raw = raw
	return e
}

// unreachable turns a transport failure into an error naming the server.
func unreachable(base string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("no answer from %s in time: %v", base, ue.Err)
		}
		err = ue.Err
	}
	return fmt.Errorf("cannot reach %s: %v", base, err)
}

// send performs one HTTP request and returns the body of a 2xx answer.
func send(
	ctx context.Context,
	client *http.Client,
	method, base, target string,
	body []byte,
	headers map[string]string,
) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, unreachable(base, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", base, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, newHTTPError(resp, out)
	}
	return out, nil
}

func printJSON(w io.Writer, b []byte) {
	var buf bytes.Buffer
	if json.Indent(&buf, b, "", "  ") == nil {
		buf.WriteByte('\n')
		w.Write(buf.Bytes())
		return
	}
	w.Write(b)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		fmt.Fprintln(w)
	}
}

// Request stamps a request with a key and sends it to the activity API, or sends it unstamped
// to an auth proxy (latchkey request).
func (c Commands) Request(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("request", flag.ContinueOnError)
	apiURL := fs.String(
		"api-url",
		"",
		"base URL of the activity API (default "+defaultAPIURL+"; with --proxy, of the auth proxy, default "+defaultProxyURL+")",
	)
	keyRef := fs.String(
		"key",
		"",
		"name of the API key to stamp with (from the key directory), or a key file path (a keygen file or serve --dev's dev-credentials.json)",
	)
	keyDir := fs.String("key-dir", "", keyDirHelp)
	path := fs.String(
		"path",
		"",
		"request path, e.g. /public/v1/query/whoami or /public/v1/submit/create_wallet (with --proxy: /v1/otp_init)",
	)
	bodyArg := fs.String("body", "{}", "JSON body: text, @file, or - for stdin")
	orgID := fs.String("organization-id", "", "added as organizationId when the body has none")
	proxy := fs.Bool("proxy", false, "send to an auth proxy: no stamp, header "+proxyConfigHeader+" from --config-id")
	configID := fs.String("config-id", "", "with --proxy: the auth proxy configuration id (required)")
	timeout := fs.Duration("timeout", 60*time.Second, "HTTP timeout")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return UsageError{"--path is required, e.g. /public/v1/query/whoami"}
	}
	if !strings.HasPrefix(*path, "/") {
		*path = "/" + *path
	}
	base := *apiURL
	if base == "" {
		base = defaultAPIURL
		if *proxy {
			base = defaultProxyURL
		}
	}
	target, err := joinURL(base, *path)
	if err != nil {
		return err
	}
	headers := map[string]string{"Content-Type": "application/json", "Accept": "application/json"}
	var st stamp.Stamper
	if *proxy {
		if *configID == "" {
			return UsageError{"--proxy needs --config-id (the auth proxy configuration id)"}
		}
		if *keyRef != "" {
			return UsageError{"--key is not used with --proxy: auth proxy requests are not stamped"}
		}
		headers[proxyConfigHeader] = *configID
	} else {
		if *configID != "" {
			return UsageError{"--config-id is only used with --proxy"}
		}
		if *keyRef == "" {
			return UsageError{"--key is required: the name of a key made with latchkey keygen"}
		}
		k, err := loadKeyRef(*keyDir, *keyRef)
		if err != nil {
			return err
		}
		if st, err = k.stamper(); err != nil {
			return err
		}
	}
	raw, err := readInput(c.Stdin, "body", *bodyArg)
	if err != nil {
		return err
	}
	body, err := prepareBody(raw, *path, *orgID, time.Now())
	if err != nil {
		return err
	}
	if st != nil {
		name, value, err := st.Stamp(body)
		if err != nil {
			return fmt.Errorf("stamping: %w", err)
		}
		headers[name] = value
	}
	out, err := send(ctx, &http.Client{Timeout: *timeout}, http.MethodPost, base, target, body, headers)
	if err != nil {
		return err
	}
	printJSON(c.Stdout, out)
	return nil
}

// ---- export decrypt ----

// bundleFrom returns the export bundle in b: b itself when it is one, or the exportBundle found
// in an activity response (what `latchkey request` prints for export_wallet, export_private_key
// and export_wallet_account).
func bundleFrom(b []byte) (string, error) {
	b = bytes.TrimSpace(b)
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "", fmt.Errorf("--bundle is not JSON (want an export bundle or an export activity's response): %v", err)
	}
	if m, ok := v.(map[string]any); ok {
		if _, ok := m["enclaveQuorumPublic"]; ok {
			return string(b), nil
		}
	}
	if s := findString(v, "exportBundle"); s != "" {
		return s, nil
	}
	return "", errors.New("--bundle holds no export bundle (no enclaveQuorumPublic, no exportBundle)")
}

func findString(v any, key string) string {
	switch x := v.(type) {
	case map[string]any:
		if s, ok := x[key].(string); ok && s != "" {
			return s
		}
		for _, e := range x {
			if s := findString(e, key); s != "" {
				return s
			}
		}
	case []any:
		for _, e := range x {
			if s := findString(e, key); s != "" {
				return s
			}
		}
	}
	return ""
}

// fetchSignerKey reads signerPublicKey from {base}/.well-known/latchkey.json.
func fetchSignerKey(ctx context.Context, base string, timeout time.Duration) (string, error) {
	target, err := joinURL(base, "/.well-known/latchkey.json")
	if err != nil {
		return "", err
	}
	b, err := send(
		ctx,
		&http.Client{Timeout: timeout},
		http.MethodGet,
		base,
		target,
		nil,
		map[string]string{"Accept": "application/json"},
	)
	if err != nil {
		return "", fmt.Errorf("fetching the signer key: %w", err)
	}
	var wk struct {
		SignerPublicKey string `json:"signerPublicKey"`
	}
	if err := json.Unmarshal(b, &wk); err != nil || wk.SignerPublicKey == "" {
		return "", fmt.Errorf("%s has no signerPublicKey", target)
	}
	return wk.SignerPublicKey, nil
}

// looksLikeMnemonic: valid UTF-8 made of whitespace-separated words of letters.
func looksLikeMnemonic(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	words := strings.Fields(string(b))
	if len(words) < 2 {
		return false
	}
	for _, w := range words {
		for _, r := range w {
			if !unicode.IsLetter(r) && !unicode.IsMark(r) {
				return false
			}
		}
	}
	return true
}

// formatExported renders a decrypted export: a mnemonic as text; a key as lowercase hex, or with
// SOLANA as @turnkey/crypto does, base58(seed ‖ public key) of a 32-byte Ed25519 seed.
func formatExported(plain []byte, keyFormat string) (string, error) {
	if looksLikeMnemonic(plain) {
		return strings.TrimSpace(string(plain)), nil
	}
	switch strings.ToUpper(keyFormat) {
	case "", "HEXADECIMAL", "HEX":
		return hex.EncodeToString(plain), nil
	case "SOLANA":
		if len(plain) != ed25519.SeedSize {
			return "", fmt.Errorf(
				"--key-format SOLANA needs a 32-byte Ed25519 key, the bundle holds %d bytes",
				len(plain),
			)
		}
		return base58.Encode(ed25519.NewKeyFromSeed(plain)), nil
	}
	return "", UsageError{fmt.Sprintf("--key-format %q: use HEXADECIMAL or SOLANA", keyFormat)}
}

// Export decrypts an export bundle to the mnemonic or key it holds (latchkey export decrypt).
func (c Commands) Export(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "decrypt" {
		return UsageError{
			"usage: latchkey export decrypt --bundle B --embedded-key NAME --organization-id ID [--signer-public-key HEX | --api-url URL]",
		}
	}
	fs := flag.NewFlagSet("export decrypt", flag.ContinueOnError)
	bundleArg := fs.String(
		"bundle",
		"-",
		"the export bundle, or an export activity's response holding one: text, @file, or - for stdin",
	)
	keyRef := fs.String(
		"embedded-key",
		"",
		"name of the P-256 key (made with keygen) whose public key was the export's targetPublicKey (required)",
	)
	keyDir := fs.String("key-dir", "", keyDirHelp)
	orgID := fs.String("organization-id", "", "the organization the bundle must be for (required)")
	signer := fs.String(
		"signer-public-key",
		"",
		"the server's signer public key, hex (default: fetched from --api-url/.well-known/latchkey.json)",
	)
	apiURL := fs.String("api-url", defaultAPIURL, "base URL of the activity API, to fetch the signer key from")
	keyFormat := fs.String(
		"key-format",
		"HEXADECIMAL",
		"how to print a private key: HEXADECIMAL or SOLANA (base58 of seed ‖ public key); a mnemonic prints as text",
	)
	timeout := fs.Duration("timeout", 30*time.Second, "HTTP timeout")
	if err := c.parse(fs, args[1:]); err != nil {
		return err
	}
	if *orgID == "" {
		return UsageError{"--organization-id is required: the organization the bundle must be for"}
	}
	if *keyRef == "" {
		return UsageError{"--embedded-key is required: the name of the P-256 key the export was encrypted to"}
	}
	switch strings.ToUpper(*keyFormat) {
	case "HEXADECIMAL", "HEX", "SOLANA":
	default:
		return UsageError{fmt.Sprintf("--key-format %q: use HEXADECIMAL or SOLANA", *keyFormat)}
	}
	k, err := loadKeyRef(*keyDir, *keyRef)
	if err != nil {
		return err
	}
	if k.Curve != string(stamp.CurveP256) {
		return fmt.Errorf(
			"--embedded-key %q is a %s key; export bundles are encrypted to P-256 keys (keygen --curve p256)",
			k.Name,
			k.Curve,
		)
	}
	raw, err := readInput(c.Stdin, "bundle", *bundleArg)
	if err != nil {
		return err
	}
	bundle, err := bundleFrom(raw)
	if err != nil {
		return err
	}
	signerKey := *signer
	if signerKey == "" {
		if signerKey, err = fetchSignerKey(ctx, *apiURL, *timeout); err != nil {
			return err
		}
	}
	u, err := custody.ParseP256PublicKeyHex(strings.TrimSpace(signerKey))
	if err != nil {
		return fmt.Errorf("signer public key: %v", err)
	}
	plain, err := custody.OpenExportBundle(bundle, k.PrivateKey, *orgID, hex.EncodeToString(u))
	if err != nil {
		return fmt.Errorf("export decrypt with key %q: %w", k.Name, err)
	}
	out, err := formatExported(plain, *keyFormat)
	for i := range plain {
		plain[i] = 0
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(c.Stdout, out)
	return nil
}
