package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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
		t.Skipf("no AWS KMS emulator: go install %s failed (%v); set LATCHKEY_TEST_LOCAL_KMS to a built local-kms", localKMSModule, err)
	}
	return bin
}

// startLocalKMS runs the emulator on a free port with its database in a temporary directory
// and returns its URL (loopback). It is stopped when the test ends.
func startLocalKMS(t *testing.T) string {
	bin := localKMSBinary(t)
	data := t.TempDir()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PORT=0", "KMS_DATA_PATH="+data, "KMS_SEED_PATH="+filepath.Join(data, "no-seed.yaml"),
		"KMS_REGION=eu-west-2", "KMS_ACCOUNT_ID=111122223333")
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
	seal := []string{"--data-dir", dir, "--seal", "awskms", "--awskms-key-id", "alias/latchkey", "--awskms-region", "eu-west-2", "--awskms-endpoint", endpoint}
	priv, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	var out bytes.Buffer
	if err := run(ctx, append([]string{"init", "--org-name", "Acme", "--user-name", "ops", "--api-public-key", pub}, seal...), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var created map[string]string
	_ = json.Unmarshal(out.Bytes(), &created)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), "master") {
			t.Fatalf("a master key file in the data directory: %s", e.Name())
		}
	}
	var keys1, keys2 bytes.Buffer
	if err := run(ctx, append([]string{"keys"}, seal...), &keys1, io.Discard); err != nil {
		t.Fatal(err)
	}

	// Opened by the key's ARN (its region taken from the ARN) rather than the alias used at init.
	open := func() (*api, func()) {
		s, err := server.Open(ctx, server.Config{DataDir: dir, MustExist: true, Seal: custody.SealAWSKMS,
			AWSKMS: custody.AWSKMS{KeyID: keyARN, Endpoint: endpoint}, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		h := httptest.NewServer(s.API.Handler())
		return &api{t: t, url: h.URL, org: created["organizationId"], priv: priv}, func() { h.Close(); s.Close() }
	}
	a, stop := open()
	w := a.submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "w", "accounts": []any{map[string]any{
		"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}})
	addr := w["createWalletResult"].(map[string]any)["addresses"].([]any)[0].(string)
	stop()
	b, stop2 := open()
	sig := b.submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": addr, "payload": strings.Repeat("cd", 32),
		"encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"})
	stop2()
	if r := sig["signRawPayloadResult"].(map[string]any)["r"]; r == nil || r == "" {
		t.Fatalf("signature: %v", sig)
	}
	if err := run(ctx, append([]string{"keys"}, seal...), &keys2, io.Discard); err != nil || keys1.String() != keys2.String() {
		t.Fatalf("server keys after restarts: %v\n%s\n%s", err, keys1.String(), keys2.String())
	}

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

	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "http://" + l.Addr().String()
	}()
	mk := filepath.Join(t.TempDir(), "master.key")
	custody.GenerateMasterKeyFile(mk)
	with := func(flags ...string) []string {
		return append([]string{"keys", "--data-dir", dir, "--seal", "awskms", "--awskms-region", "eu-west-2"}, flags...)
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"another KMS key", nil, with("--awskms-key-id", otherARN, "--awskms-endpoint", endpoint), "unsealing the master key through awskms: custody: AWS KMS decrypt with key"},
		{"an unknown alias", nil, with("--awskms-key-id", "alias/nope", "--awskms-endpoint", endpoint), "NotFoundException"},
		{"an unreachable endpoint", nil, with("--awskms-key-id", "alias/latchkey", "--awskms-endpoint", closed), "unsealing the master key through awskms"},
		{"no key id", nil, with("--awskms-endpoint", endpoint), "--awskms-key-id is required"},
		{"no region", nil, []string{"keys", "--data-dir", dir, "--seal", "awskms", "--awskms-key-id", "alias/latchkey", "--awskms-endpoint", endpoint}, "no AWS region"},
		{"plain http to a remote endpoint", nil, with("--awskms-key-id", "k", "--awskms-endpoint", "http://kms.example:4566"), "plain http only towards loopback"},
		{"a file seal on an awskms deployment", nil, []string{"keys", "--data-dir", dir, "--master-key-file", mk}, `held by a awskms seal (key "alias/latchkey"`},
		{"both a file and awskms", nil, append(with("--awskms-key-id", "alias/latchkey", "--awskms-endpoint", endpoint), "--master-key-file", mk), "give no --master-key-file"},
		{"transit's flags on an awskms deployment", map[string]string{"LATCHKEY_TRANSIT_TOKEN": "s.token"}, append([]string{"keys", "--seal", "transit", "--transit-addr", "http://127.0.0.1:1", "--transit-key", "k"}, "--data-dir", dir), "this deployment's seal is \"awskms\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			err := run(ctx, c.args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "latchkey-test-secret-key") {
				t.Fatalf("the AWS secret key is echoed: %v", err)
			}
		})
	}

	// A deployment sealed by a file refuses --seal awskms.
	fileDir := t.TempDir()
	if err := run(ctx, []string{"init", "--org-name", "F", "--user-name", "u", "--api-public-key", pub, "--data-dir", fileDir, "--master-key-file", mk}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"keys", "--data-dir", fileDir, "--seal", "awskms", "--awskms-key-id", "alias/latchkey", "--awskms-region", "eu-west-2", "--awskms-endpoint", endpoint}, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "has no awskms seal record") {
		t.Fatalf("--seal awskms on a file deployment: %v", err)
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
