package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/stamp"
)

// localKMSModule is the AWS KMS emulator the awskms test runs: a real server speaking KMS's JSON
// protocol (Encrypt and Decrypt with encryption contexts, CreateKey, aliases), built once from
// the Go module proxy into the user's cache directory.
const localKMSModule = "github.com/nsmithuk/local-kms@v0.0.0-20260228092603-2a5e92d09ab6"

// localKMSBinary returns the emulator's binary: LATCHKEY_TEST_LOCAL_KMS if set, else the cached
// build, else a fresh `go install` into the cache. A failed build skips the test on a
// developer's machine (no module proxy at hand) and fails it in CI.
func localKMSBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LATCHKEY_TEST_LOCAL_KMS"); p != "" {
		return p
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	_, version, _ := strings.Cut(localKMSModule, "@")
	dir := filepath.Join(cache, "latchkey-test", "local-kms-"+version)
	bin := filepath.Join(dir, "local-kms")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	build := exec.Command("go", "install", localKMSModule)
	build.Dir = t.TempDir()
	build.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("building the KMS emulator (go install %s): %v\n%s", localKMSModule, err, out)
		}
		t.Skipf(
			"no AWS KMS emulator: go install %s failed (%v); set LATCHKEY_TEST_LOCAL_KMS to a built local-kms",
			localKMSModule,
			err,
		)
	}
	return bin
}

// startLocalKMS runs the emulator on a free port with its database in a temporary directory
// and returns its URL (loopback). It is stopped when the test ends.
func startLocalKMS(t *testing.T) string {
	bin := localKMSBinary(t)
	data := t.TempDir()
	cmd := exec.Command(bin)
	cmd.Env = append(
		os.Environ(),
		"PORT=0",
		"KMS_DATA_PATH="+data,
		"KMS_SEED_PATH="+filepath.Join(data, "no-seed.yaml"),
		"KMS_REGION=eu-west-2",
		"KMS_ACCOUNT_ID=111122223333",
	)
	logs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	port := make(chan string, 1)
	go func() {
		started := regexp.MustCompile(`Local KMS started on [^ ]*:(\d+)`)
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			if m := started.FindStringSubmatch(sc.Text()); m != nil {
				port <- m[1]
			}
		}
	}()
	select {
	case p := <-port:
		return "http://127.0.0.1:" + p
	case <-time.After(30 * time.Second):
		t.Fatal("the KMS emulator did not start within 30s")
	}
	return ""
}

// hermeticAWS gives the AWS SDK's default chain static credentials from the environment and
// nothing else: no profile files, no instance metadata, no region or endpoint of the machine's.
func hermeticAWS(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIDLATCHKEYTEST", "AWS_SECRET_ACCESS_KEY": "latchkey-test-secret-key", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_KMS": "",
	} {
		t.Setenv(k, v)
	}
}

// --seal awskms against a real KMS emulator: init wraps a new master key with a KMS key (named
// by its alias) and records only the ciphertext; every start decrypts it (by alias or key ARN);
// the deployment signs across restarts. Another key, an unknown alias, an unreachable
// endpoint, a ciphertext without Latchkey's encryption context, a file seal on an awskms
// deployment (and the reverse) and incomplete flags are each refused with a clear message.
func TestAWSKMSSeal(t *testing.T) {
	endpoint := startLocalKMS(t)
	hermeticAWS(t)
	ctx := context.Background()
	sdk := kms.New(kms.Options{Region: "eu-west-2", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDLATCHKEYTEST", "latchkey-test-secret-key", "")})
	newKey := func(alias string) string {
		k, err := sdk.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("latchkey test")})
		if err != nil {
			t.Fatalf("CreateKey: %v", err)
		}
		if _, err := sdk.CreateAlias(ctx, &kms.CreateAliasInput{AliasName: aws.String(alias), TargetKeyId: k.KeyMetadata.KeyId}); err != nil {
			t.Fatalf("CreateAlias: %v", err)
		}
		return *k.KeyMetadata.Arn
	}
	keyARN := newKey("alias/latchkey")
	otherARN := newKey("alias/other")

	dir := t.TempDir()
	seal := []string{
		"--data-dir",
		dir,
		"--seal",
		"awskms",
		"--awskms-key-id",
		"alias/latchkey",
		"--awskms-region",
		"eu-west-2",
		"--awskms-endpoint",
		endpoint,
	}
	// Opened by the key's ARN (its region taken from the ARN) rather than the alias used at init.
	pub := sealLifecycle(
		t,
		dir,
		seal,
		server.Config{Seal: custody.SealAWSKMS, AWSKMS: custody.AWSKMS{KeyID: keyARN, Endpoint: endpoint}},
	)

	// The recorded ciphertext opens with Latchkey's encryption context only: KMS itself refuses
	// it without, and refuses a blob of the same key made without that context.
	rec := sealRecord(t, dir, seal)
	if rec.Type != custody.SealAWSKMS || rec.Key != "alias/latchkey" || rec.Addr != endpoint {
		t.Fatalf("seal record: %+v", rec)
	}
	blob, _ := base64.StdEncoding.DecodeString(rec.Ciphertext)
	if _, err := sdk.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: blob, KeyId: aws.String(keyARN)}); err == nil {
		t.Fatal("KMS decrypted the master key without Latchkey's encryption context")
	}
	pt := make([]byte, custody.MasterKeySize)
	rand.Read(pt)
	foreign, err := sdk.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String(keyARN), Plaintext: pt})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (custody.AWSKMS{KeyID: keyARN, Endpoint: endpoint}).Unwrap(ctx, base64.StdEncoding.EncodeToString(foreign.CiphertextBlob)); err == nil ||
		!strings.Contains(err.Error(), "InvalidCiphertextException") {
		t.Fatalf("a ciphertext without the encryption context: %v", err)
	}

	closed := deadEndpoint(t, "http")
	mk := filepath.Join(t.TempDir(), "master.key")
	custody.GenerateMasterKeyFile(mk)
	with := func(flags ...string) []string {
		return append([]string{"keys", "--data-dir", dir, "--seal", "awskms", "--awskms-region", "eu-west-2"}, flags...)
	}
	expectRefusals(t, []refusal{
		{
			"another KMS key",
			nil,
			with("--awskms-key-id", otherARN, "--awskms-endpoint", endpoint),
			"unsealing the master key through awskms: custody: AWS KMS decrypt with key",
		},
		{
			"an unknown alias",
			nil,
			with("--awskms-key-id", "alias/nope", "--awskms-endpoint", endpoint),
			"NotFoundException",
		},
		{
			"an unreachable endpoint",
			nil,
			with("--awskms-key-id", "alias/latchkey", "--awskms-endpoint", closed),
			"unsealing the master key through awskms",
		},
		{"no key id", nil, with("--awskms-endpoint", endpoint), "--awskms-key-id is required"},
		{
			"no region",
			nil,
			[]string{
				"keys",
				"--data-dir",
				dir,
				"--seal",
				"awskms",
				"--awskms-key-id",
				"alias/latchkey",
				"--awskms-endpoint",
				endpoint,
			},
			"no AWS region",
		},
		{
			"plain http to a remote endpoint",
			nil,
			with("--awskms-key-id", "k", "--awskms-endpoint", "http://kms.example:4566"),
			"plain http only towards loopback",
		},
		{
			"a file seal on an awskms deployment",
			nil,
			[]string{"keys", "--data-dir", dir, "--master-key-file", mk},
			`held by a awskms seal (key "alias/latchkey"`,
		},
		{
			"--seal awskms on a file deployment",
			nil,
			[]string{
				"keys",
				"--data-dir",
				fileDeployment(t, pub, mk),
				"--seal",
				"awskms",
				"--awskms-key-id",
				"alias/latchkey",
				"--awskms-region",
				"eu-west-2",
				"--awskms-endpoint",
				endpoint,
			},
			"has no awskms seal record",
		},
		{
			"both a file and awskms",
			nil,
			append(with("--awskms-key-id", "alias/latchkey", "--awskms-endpoint", endpoint), "--master-key-file", mk),
			"give no --master-key-file",
		},
		{
			"transit's flags on an awskms deployment",
			map[string]string{"LATCHKEY_TRANSIT_TOKEN": "s.token"},
			append(
				[]string{"keys", "--seal", "transit", "--transit-addr", "http://127.0.0.1:1", "--transit-key", "k"},
				"--data-dir",
				dir,
			),
			"this deployment's seal is \"awskms\"",
		},
	}, "latchkey-test-secret-key")

	// keyring rewrap moves a file deployment to awskms: afterwards KMS opens it, with the same
	// server keys, and the old file no longer does.
	moved := fileDeployment(t, pub, mk)
	kmsFlags := []string{
		"--data-dir",
		moved,
		"--seal",
		"awskms",
		"--awskms-key-id",
		"alias/latchkey",
		"--awskms-region",
		"eu-west-2",
		"--awskms-endpoint",
		endpoint,
	}
	var before, after, rewrapped bytes.Buffer
	if err := run(ctx, []string{"keys", "--data-dir", moved, "--master-key-file", mk}, &before, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, append([]string{"keyring", "rewrap", "--master-key-file", mk, "--new-seal", "awskms"}, kmsFlags[:2]...), &rewrapped, io.Discard); err == nil {
		t.Fatal("rewrap to awskms without its flags succeeded")
	}
	if err := run(ctx, append(append([]string{"keyring", "rewrap", "--master-key-file", mk, "--new-seal", "awskms"}, kmsFlags[:2]...), kmsFlags[4:]...), &rewrapped, io.Discard); err != nil ||
		!strings.Contains(rewrapped.String(), `"seal":"awskms"`) {
		t.Fatalf("rewrap to awskms: %v %s", err, rewrapped.String())
	}
	if err := run(ctx, append([]string{"keys"}, kmsFlags...), &after, io.Discard); err != nil ||
		after.String() != before.String() {
		t.Fatalf("keys through awskms after the rewrap: %v\n%s\n%s", err, after.String(), before.String())
	}
	if err := run(ctx, []string{"keys", "--data-dir", moved, "--master-key-file", mk}, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "held by a awskms seal") {
		t.Fatalf("the old file after the rewrap: %v", err)
	}

}

// sealLifecycle runs a deployment through a wrapping seal: init with the seal's flags (no master
// key file anywhere), the server keys read back, the server opened by cfg (a server.Config naming
// the seal) to create a wallet and restarted to sign with it, and the server keys unchanged. It
// returns the operator's API public key.
func sealLifecycle(t *testing.T, dir string, seal []string, cfg server.Config) string {
	t.Helper()
	ctx := context.Background()
	priv, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	created := initSealed(
		t,
		append([]string{"--org-name", "Acme", "--user-name", "ops", "--api-public-key", pub}, seal...),
		dir,
	)
	var keys1, keys2 bytes.Buffer
	if err := run(ctx, append([]string{"keys"}, seal...), &keys1, io.Discard); err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = dir
	signsAcrossRestart(t, cfg, created["organizationId"], priv)
	if err := run(ctx, append([]string{"keys"}, seal...), &keys2, io.Discard); err != nil ||
		keys1.String() != keys2.String() {
		t.Fatalf("server keys after restarts: %v\n%s\n%s", err, keys1.String(), keys2.String())
	}
	return pub
}

// deadEndpoint is a loopback URL where nothing listens (a port just freed).
func deadEndpoint(t *testing.T, scheme string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return scheme + "://" + l.Addr().String()
}

// fileDeployment makes a deployment whose master key is the file mk and returns its data
// directory.
func fileDeployment(t *testing.T, pub, mk string) string {
	dir := t.TempDir()
	if err := run(context.Background(), []string{"init", "--org-name", "F", "--user-name", "u", "--api-public-key", pub, "--data-dir", dir, "--master-key-file", mk}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A refusal is a command that must fail with an error containing want.
type refusal struct {
	name string
	env  map[string]string
	args []string
	want string
}

// expectRefusals runs each command and checks its error; none may echo a secret.
func expectRefusals(t *testing.T, cases []refusal, secrets ...string) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			err := run(context.Background(), c.args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
			for _, secret := range secrets {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("a secret is echoed: %v", err)
				}
			}
		})
	}
}

// sealRecord reads the deployment's seal record (through a server opened with the seal's flags).
func sealRecord(t *testing.T, dir string, seal []string) *custody.SealRecord {
	t.Helper()
	var sf storeFlags
	fs := flag.NewFlagSet("seal", flag.ContinueOnError)
	sf.register(fs)
	if err := fs.Parse(seal); err != nil {
		t.Fatal(err)
	}
	s, err := sf.open(context.Background(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, err := custody.LoadSealRecord(context.Background(), s.Store)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// gcpKMSStub speaks Cloud KMS's documented REST API as the Go client uses it: POST
// /v1/{name}:encrypt and /v1/{name}:decrypt with ?$alt=json;enum-encoding=int, a Bearer token,
// the x-goog-request-params routing header, JSON bodies in proto3 JSON (bytes base64, int64
// CRC32C values as strings), answers with the documented fields and {"error": {code, message,
// status}} failures; plus the OAuth 2.0 token endpoint a service-account key names. Each key is
// AES-256-GCM of the stub's own, the additional authenticated data bound in. No Cloud KMS
// emulator is served by the module proxy, so these are the recorded exchanges.
type gcpKMSStub struct {
	keys  map[string]cipher.AEAD
	mu    sync.Mutex
	calls map[string]int
}

func newGCPKMSStub(t *testing.T, keys ...string) (*gcpKMSStub, *httptest.Server) {
	st := &gcpKMSStub{keys: map[string]cipher.AEAD{}, calls: map[string]int{}}
	for _, k := range keys {
		st.keys[k] = newAEAD()
	}
	srv := httptest.NewServer(st)
	t.Cleanup(srv.Close)
	return st, srv
}

func newAEAD() cipher.AEAD {
	k := make([]byte, 32)
	rand.Read(k)
	block, _ := aes.NewCipher(k)
	aead, _ := cipher.NewGCM(block)
	return aead
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32cString(b []byte) string {
	return strconv.FormatUint(uint64(crc32.Checksum(b, castagnoli)), 10)
}

func (st *gcpKMSStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reply := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(v)
	}
	fail := func(code int, status, msg string) {
		reply(code, map[string]any{"error": map[string]any{"code": code, "message": msg, "status": status}})
	}
	if r.URL.Path == "/token" { // the service-account key's JWT-bearer grant
		if r.ParseForm(); r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" ||
			r.PostForm.Get("assertion") == "" {
			fail(http.StatusBadRequest, "INVALID_ARGUMENT", "invalid_grant")
			return
		}
		reply(http.StatusOK, map[string]any{"access_token": "ya29.stub", "expires_in": 3600, "token_type": "Bearer"})
		return
	}
	if r.Method != http.MethodPost || r.URL.Query().Get("$alt") != "json;enum-encoding=int" ||
		r.Header.Get("Content-Type") != "application/json" {
		fail(http.StatusBadRequest, "INVALID_ARGUMENT", "unexpected request shape")
		return
	}
	if r.Header.Get("Authorization") != "Bearer ya29.stub" {
		fail(http.StatusUnauthorized, "UNAUTHENTICATED", "Request is missing required authentication credential.")
		return
	}
	name, op, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/"), ":")
	if !ok || r.Header.Get("x-goog-request-params") != "name="+url.QueryEscape(name) {
		fail(http.StatusBadRequest, "INVALID_ARGUMENT", "unexpected path or routing header")
		return
	}
	aead, ok := st.keys[name]
	if !ok {
		fail(http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("CryptoKey %s not found.", name))
		return
	}
	var in struct {
		Name, Plaintext, Ciphertext, AdditionalAuthenticatedData             string
		PlaintextCrc32c, CiphertextCrc32c, AdditionalAuthenticatedDataCrc32c string
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Name != name {
		fail(http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received.")
		return
	}
	// checked decodes a base64 field and checks it against its CRC32C, answering as Cloud KMS
	// does when they disagree.
	checked := func(b64, crc, field string) ([]byte, bool) {
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || crc != crc32cString(b) {
			fail(http.StatusBadRequest, "INVALID_ARGUMENT",
				"The checksum in field "+field+"_crc32c did not match the data in field "+field+".")
			return nil, false
		}
		return b, true
	}
	aad, ok := checked(
		in.AdditionalAuthenticatedData,
		in.AdditionalAuthenticatedDataCrc32c,
		"additional_authenticated_data",
	)
	if !ok {
		return
	}
	st.mu.Lock()
	st.calls[op]++
	st.mu.Unlock()
	switch op {
	case "encrypt":
		pt, ok := checked(in.Plaintext, in.PlaintextCrc32c, "plaintext")
		if !ok {
			return
		}
		nonce := make([]byte, aead.NonceSize())
		rand.Read(nonce)
		ct := aead.Seal(nonce, nonce, pt, aad)
		reply(
			http.StatusOK,
			map[string]any{"name": name + "/cryptoKeyVersions/1", "ciphertext": base64.StdEncoding.EncodeToString(ct),
				"ciphertextCrc32c": crc32cString(
					ct,
				), "verifiedPlaintextCrc32c": true, "verifiedAdditionalAuthenticatedDataCrc32c": true, "protectionLevel": 1},
		)
	case "decrypt":
		ct, ok := checked(in.Ciphertext, in.CiphertextCrc32c, "ciphertext")
		if !ok {
			return
		}
		var pt []byte
		var err error
		if len(ct) >= aead.NonceSize() {
			pt, err = aead.Open(nil, ct[:aead.NonceSize()], ct[aead.NonceSize():], aad)
		}
		if pt == nil || err != nil {
			fail(
				http.StatusBadRequest,
				"INVALID_ARGUMENT",
				"Decryption failed: verify that 'name' refers to the correct CryptoKey.",
			)
			return
		}
		reply(
			http.StatusOK,
			map[string]any{
				"plaintext":       base64.StdEncoding.EncodeToString(pt),
				"plaintextCrc32c": crc32cString(pt),
				"usedPrimary":     true,
				"protectionLevel": 1,
			},
		)
	default:
		fail(http.StatusNotFound, "NOT_FOUND", "unsupported method")
	}
}

func (st *gcpKMSStub) count(op string) int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.calls[op]
}

// hermeticGCP makes Application Default Credentials a service-account key file whose token
// endpoint is tokenURL, and points the metadata server at a closed loopback port: no request
// leaves the machine.
func hermeticGCP(t *testing.T, tokenURL string) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	sa, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "p", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "latchkey@p.iam.gserviceaccount.com", "client_id": "1", "token_uri": tokenURL})
	file := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(file, sa, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", file)
	t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(deadEndpoint(t, "http"), "http://"))
	t.Setenv("NO_GCE_CHECK", "true")
	t.Setenv("GOOGLE_CLOUD_UNIVERSE_DOMAIN", "")
	t.Setenv("GOOGLE_API_USE_CLIENT_CERTIFICATE", "false")
}

// --seal gcpkms through the Cloud KMS Go client against recorded exchanges: init has the key
// encrypt a new master key (with Latchkey's additional authenticated data and CRC32C checks),
// every start decrypts it, the deployment signs across restarts; another key, an unknown key, a
// malformed key name, an unreachable endpoint and a file seal on a gcpkms deployment are
// refused.
func TestGCPKMSSeal(t *testing.T) {
	const key = "projects/p/locations/global/keyRings/latchkey/cryptoKeys/master"
	const other = "projects/p/locations/global/keyRings/latchkey/cryptoKeys/other"
	stub, srv := newGCPKMSStub(t, key, other)
	hermeticGCP(t, srv.URL+"/token")
	dir := t.TempDir()
	seal := []string{"--data-dir", dir, "--seal", "gcpkms", "--gcpkms-key", key, "--gcpkms-endpoint", srv.URL}
	pub := sealLifecycle(
		t,
		dir,
		seal,
		server.Config{Seal: custody.SealGCPKMS, GCPKMS: custody.GCPKMS{Key: key, Endpoint: srv.URL}},
	)
	if stub.count("encrypt") != 1 || stub.count("decrypt") < 4 {
		t.Fatalf("Cloud KMS calls: %v", stub.calls)
	}
	rec := sealRecord(t, dir, seal)
	if rec.Type != custody.SealGCPKMS || rec.Key != key || rec.Addr != srv.URL {
		t.Fatalf("seal record: %+v", rec)
	}

	mk := filepath.Join(t.TempDir(), "master.key")
	custody.GenerateMasterKeyFile(mk)
	with := func(flags ...string) []string {
		return append([]string{"keys", "--data-dir", dir, "--seal", "gcpkms"}, flags...)
	}
	expectRefusals(t, []refusal{
		{"another key", nil, with("--gcpkms-key", other, "--gcpkms-endpoint", srv.URL), "Decryption failed"},
		{"an unknown key", nil, with("--gcpkms-key", key+"x", "--gcpkms-endpoint", srv.URL), "not found"},
		{
			"a key version, not a key",
			nil,
			with("--gcpkms-key", key+"/cryptoKeyVersions/1"),
			"must be a CryptoKey's resource name",
		},
		{"no key", nil, with(), "--gcpkms-key is required"},
		{
			"an unreachable endpoint",
			nil,
			with("--gcpkms-key", key, "--gcpkms-endpoint", deadEndpoint(t, "http")),
			"unsealing the master key through gcpkms",
		},
		{
			"plain http to a remote endpoint",
			nil,
			with("--gcpkms-key", key, "--gcpkms-endpoint", "http://kms.example"),
			"plain http only towards loopback",
		},
		{
			"a file seal on a gcpkms deployment",
			nil,
			[]string{"keys", "--data-dir", dir, "--master-key-file", mk},
			"held by a gcpkms seal",
		},
		{
			"--seal gcpkms on a file deployment",
			nil,
			[]string{
				"keys",
				"--data-dir",
				fileDeployment(t, pub, mk),
				"--seal",
				"gcpkms",
				"--gcpkms-key",
				key,
				"--gcpkms-endpoint",
				srv.URL,
			},
			"has no gcpkms seal record",
		},
	}, "PRIVATE KEY")

}

// azureKVStub speaks Azure Key Vault's documented keys API as azkeys uses it: POST
// /keys/{name}/{version}/wrapkey and /unwrapkey?api-version=2025-07-01 with {"alg":
// "RSA-OAEP-256", "value": base64url} bodies and {"kid", "value"} answers, {"error": {code,
// message}} failures, and the challenge-based authentication Key Vault clients go through: a
// request without a token is answered 401 with a WWW-Authenticate challenge naming the tenant
// and the resource (a parent domain of the vault's host, as vault.azure.net is of
// NAME.vault.azure.net; for 127.0.0.1 that is 0.0.1), and the token must be the one the
// managed identity endpoint issued. Each key's versions are RSA keys of the stub's own; after the
// first wrap the wrapping key is rotated, so later starts must unwrap with the recorded version.
// No Key Vault emulator is served by the module proxy, so these are the recorded exchanges.
type azureKVStub struct {
	mu      sync.Mutex
	keys    map[string]map[string]*rsa.PrivateKey // name -> version -> key
	current map[string]string
	token   string
	calls   map[string]int
}

func newAzureKVStub(t *testing.T, token string, names ...string) *azureKVStub {
	st := &azureKVStub{
		keys:    map[string]map[string]*rsa.PrivateKey{},
		current: map[string]string{},
		token:   token,
		calls:   map[string]int{},
	}
	for _, n := range names {
		st.keys[n] = map[string]*rsa.PrivateKey{}
		st.rotate(t, n)
	}
	return st
}

func (st *azureKVStub) rotate(t *testing.T, name string) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]byte, 16)
	rand.Read(v)
	version := fmt.Sprintf("%x", v)
	st.keys[name][version], st.current[name] = k, version
}

func (st *azureKVStub) handler(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		fail := func(code int, errCode, msg string) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(code)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": errCode, "message": msg}})
		}
		if r.URL.Query().Get("api-version") != "2025-07-01" || r.Method != http.MethodPost {
			fail(http.StatusBadRequest, "BadParameter", "unexpected api-version or method")
			return
		}
		switch auth := r.Header.Get("Authorization"); {
		case auth == "":
			w.Header().
				Set("WWW-Authenticate", fmt.Sprintf(`Bearer authorization="https://login.microsoftonline.com/72f988bf-0000-0000-0000-000000000000", resource="https://%s"`,
					strings.TrimPrefix(r.Host, "127.")))
			fail(http.StatusUnauthorized, "Unauthorized", "AKV10000: Request is missing a Bearer or PoP token.")
			return
		case auth != "Bearer "+st.token:
			fail(http.StatusUnauthorized, "Unauthorized", "AKV10032: Invalid issuer.")
			return
		}
		var parts []string
		for _, p := range strings.Split(strings.TrimPrefix(r.URL.Path, "/keys/"), "/") {
			if p != "" {
				parts = append(parts, p)
			}
		}
		if len(parts) < 2 || r.Header.Get("Content-Type") != "application/json" {
			fail(http.StatusBadRequest, "BadParameter", "unexpected path")
			return
		}
		name, op, version := parts[0], parts[len(parts)-1], ""
		if len(parts) == 3 {
			version = parts[1]
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		if version == "" {
			version = st.current[name]
		}
		key, ok := st.keys[name][version]
		if !ok {
			fail(
				http.StatusNotFound,
				"KeyNotFound",
				fmt.Sprintf("A key with (name/id) %s/%s was not found in this key vault.", name, version),
			)
			return
		}
		var in struct{ Alg, Value string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Alg != "RSA-OAEP-256" {
			fail(http.StatusBadRequest, "BadParameter", "The parameter alg is invalid.")
			return
		}
		value, err := base64.RawURLEncoding.DecodeString(in.Value)
		if err != nil {
			fail(http.StatusBadRequest, "BadParameter", "The parameter value is not base64url.")
			return
		}
		st.calls[op]++
		var out []byte
		switch op {
		case "wrapkey":
			out, err = rsa.EncryptOAEP(sha256.New(), rand.Reader, &key.PublicKey, value, nil)
		case "unwrapkey":
			out, err = rsa.DecryptOAEP(sha256.New(), nil, key, value, nil)
		default:
			fail(http.StatusNotFound, "NotFound", "unsupported operation")
			return
		}
		if err != nil {
			fail(http.StatusBadRequest, "BadParameter", "The parameter is incorrect.")
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		json.NewEncoder(w).
			Encode(map[string]any{"kid": "https://" + r.Host + "/keys/" + name + "/" + version, "value": base64.RawURLEncoding.EncodeToString(out)})
		if op == "wrapkey" {
			st.rotate(t, name)
		}
	}
}

// managedIdentityStub is an App Service managed identity endpoint (IDENTITY_ENDPOINT,
// IDENTITY_HEADER, api-version 2019-08-01): it issues token for the header it was given.
func managedIdentityStub(t *testing.T, header, token string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.Header.Get("X-IDENTITY-HEADER") != header || q.Get("api-version") != "2019-08-01" ||
			q.Get("resource") == "" {
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]any{"statusCode": 401, "message": "Unauthorized request"})
			return
		}
		json.NewEncoder(w).
			Encode(map[string]any{"access_token": token, "expires_on": strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10),
				"resource": q.Get("resource"), "token_type": "Bearer"})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// --seal azurekv through azkeys and DefaultAzureCredential (managed identity) against recorded
// exchanges. Key Vault clients send credentials over https only and trust the system's roots, so
// the test runs itself again in a child process whose only root (SSL_CERT_FILE) is the stub's
// certificate: no hook in Latchkey's code, and no request leaves loopback.
func TestAzureKVSeal(t *testing.T) {
	if vault := os.Getenv("LATCHKEY_TEST_AZUREKV_VAULT"); vault != "" {
		azureKVChild(t, vault)
		return
	}
	stub := newAzureKVStub(t, "kv.stub-token", "master", "other")
	kv := httptest.NewTLSServer(stub.handler(t))
	t.Cleanup(kv.Close)
	mi := managedIdentityStub(t, "mi-header-secret", "kv.stub-token")
	// A second vault (the same test certificate) that expects another identity's token.
	refusing := httptest.NewTLSServer(newAzureKVStub(t, "kv.another-identity", "master").handler(t))
	t.Cleanup(refusing.Close)
	roots := filepath.Join(t.TempDir(), "roots.pem")
	if err := os.WriteFile(roots, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: kv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestAzureKVSeal$", "-test.count=1", "-test.v")
	for _, kv := range os.Environ() { // the machine's Azure identity, if any, is left out
		if !strings.HasPrefix(kv, "AZURE_") && !strings.HasPrefix(kv, "IDENTITY_") && !strings.HasPrefix(kv, "MSI_") &&
			!strings.HasPrefix(kv, "IMDS_") {
			child.Env = append(child.Env, kv)
		}
	}
	child.Env = append(
		child.Env,
		"LATCHKEY_TEST_AZUREKV_VAULT="+kv.URL,
		"LATCHKEY_TEST_AZUREKV_REFUSING="+refusing.URL,
		"SSL_CERT_FILE="+roots,
		"SSL_CERT_DIR="+t.TempDir(),
		"AZURE_TOKEN_CREDENTIALS=ManagedIdentityCredential",
		"IDENTITY_ENDPOINT="+mi.URL+"/msi/token",
		"IDENTITY_HEADER=mi-header-secret",
	)
	out, err := child.CombinedOutput()
	if err != nil {
		t.Fatalf("the Key Vault test (child process): %v\n%s", err, out)
	}
	if testing.Verbose() {
		t.Logf("the child process:\n%s", out)
	}
	if !bytes.Contains(out, []byte("--- PASS: TestAzureKVSeal")) {
		t.Fatalf("the child process ran no test:\n%s", out)
	}
	stub.mu.Lock()
	defer stub.mu.Unlock()
	if stub.calls["wrapkey"] != 1 || stub.calls["unwrapkey"] < 4 {
		t.Fatalf("Key Vault calls: %v", stub.calls)
	}
}

// azureKVChild is TestAzureKVSeal's body, in the child process: init wraps a new master key
// with the vault's key, every start unwraps it with the recorded version (the key was rotated
// since), the deployment signs across restarts; another key, a refused identity, an unreachable
// vault, plain http, no key and a file seal on an azurekv deployment are refused.
func azureKVChild(t *testing.T, vault string) {
	dir := t.TempDir()
	seal := []string{"--data-dir", dir, "--seal", "azurekv", "--azurekv-vault", vault, "--azurekv-key", "master"}
	pub := sealLifecycle(
		t,
		dir,
		seal,
		server.Config{Seal: custody.SealAzureKV, AzureKV: custody.AzureKV{Vault: vault, Key: "master"}},
	)
	rec := sealRecord(t, dir, seal)
	if version, _, _ := strings.Cut(rec.Ciphertext, ":"); rec.Type != custody.SealAzureKV || rec.Key != "master" ||
		rec.Addr != vault ||
		len(version) != 32 {
		t.Fatalf("seal record: %+v", rec)
	}

	mk := filepath.Join(t.TempDir(), "master.key")
	custody.GenerateMasterKeyFile(mk)
	with := func(flags ...string) []string {
		return append([]string{"keys", "--data-dir", dir, "--seal", "azurekv"}, flags...)
	}
	expectRefusals(t, []refusal{
		{"another key", nil, with("--azurekv-vault", vault, "--azurekv-key", "other"), "KeyNotFound"},
		{
			"a vault that refuses the identity",
			nil,
			with("--azurekv-vault", os.Getenv("LATCHKEY_TEST_AZUREKV_REFUSING"), "--azurekv-key", "master"),
			"AKV10032: Invalid issuer",
		},
		{
			"an unreachable vault",
			nil,
			with("--azurekv-vault", deadEndpoint(t, "https"), "--azurekv-key", "master"),
			"unsealing the master key through azurekv",
		},
		{
			"plain http",
			nil,
			with("--azurekv-vault", "http://127.0.0.1:1", "--azurekv-key", "master"),
			"must be the vault's https URL",
		},
		{"no key", nil, with("--azurekv-vault", vault), "--azurekv-key is required"},
		{
			"a file seal on an azurekv deployment",
			nil,
			[]string{"keys", "--data-dir", dir, "--master-key-file", mk},
			"held by a azurekv seal",
		},
		{
			"--seal azurekv on a file deployment",
			nil,
			[]string{
				"keys",
				"--data-dir",
				fileDeployment(t, pub, mk),
				"--seal",
				"azurekv",
				"--azurekv-vault",
				vault,
				"--azurekv-key",
				"master",
			},
			"has no azurekv seal record",
		},
	}, "mi-header-secret", "kv.stub-token")

}
