package main

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/stamp"
)

// transitStub speaks the OpenBao/Vault transit engine's documented encrypt and decrypt API
// (POST /v1/<mount>/encrypt/<name>, /decrypt/<name>; X-Vault-Token; {"data": …} answers and
// {"errors": […]} failures; ciphertexts "vault:v1:" + base64(nonce || AES-256-GCM sealed)),
// with one key of its own. No OpenBao server can be built on this machine within a test's
// time, so this is the stand-in the docs describe.
type transitStub struct {
	token, mount, key string
	aead              cipher.AEAD
	mu                sync.Mutex
	calls             map[string]int
}

func newTransitStub(t *testing.T, token string) (*transitStub, *httptest.Server) {
	k := make([]byte, 32)
	rand.Read(k)
	block, _ := aes.NewCipher(k)
	aead, _ := cipher.NewGCM(block)
	ts := &transitStub{token: token, mount: "transit", key: "latchkey", aead: aead, calls: map[string]int{}}
	srv := httptest.NewServer(ts)
	t.Cleanup(srv.Close)
	return ts, srv
}

func (ts *transitStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]any{"errors": []string{msg}})
	}
	if r.Method != http.MethodPost {
		fail(http.StatusMethodNotAllowed, "unsupported operation")
		return
	}
	if r.Header.Get("X-Vault-Token") != ts.token {
		fail(http.StatusForbidden, "permission denied")
		return
	}
	op, name, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/"+ts.mount+"/"), "/")
	if !ok || name != ts.key {
		fail(http.StatusBadRequest, "encryption key not found")
		return
	}
	var in struct{ Plaintext, Ciphertext string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		fail(http.StatusBadRequest, "failed to parse JSON input")
		return
	}
	ts.mu.Lock()
	ts.calls[op]++
	ts.mu.Unlock()
	var data map[string]any
	switch op {
	case "encrypt":
		pt, err := base64.StdEncoding.DecodeString(in.Plaintext)
		if err != nil {
			fail(http.StatusBadRequest, "failed to base64-decode plaintext")
			return
		}
		nonce := make([]byte, ts.aead.NonceSize())
		rand.Read(nonce)
		data = map[string]any{
			"ciphertext":  "vault:v1:" + base64.StdEncoding.EncodeToString(ts.aead.Seal(nonce, nonce, pt, nil)),
			"key_version": 1,
		}
	case "decrypt":
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(in.Ciphertext, "vault:v1:"))
		if err != nil || !strings.HasPrefix(in.Ciphertext, "vault:v1:") || len(raw) < ts.aead.NonceSize() {
			fail(http.StatusBadRequest, "invalid ciphertext: no prefix")
			return
		}
		pt, err := ts.aead.Open(nil, raw[:ts.aead.NonceSize()], raw[ts.aead.NonceSize():], nil)
		if err != nil {
			fail(http.StatusBadRequest, "cipher: message authentication failed")
			return
		}
		data = map[string]any{"plaintext": base64.StdEncoding.EncodeToString(pt)}
	default:
		fail(http.StatusNotFound, "unsupported path")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).
		Encode(map[string]any{"request_id": "stub", "lease_id": "", "renewable": false, "lease_duration": 0,
			"data": data, "wrap_info": nil, "warnings": nil, "auth": nil})
}

func (ts *transitStub) count(op string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.calls[op]
}

// --seal transit: init makes a master key that exists only wrapped by the transit key (no file
// anywhere), every start unwraps it, and the deployment signs across restarts. A wrong token,
// a stopped transit server, a file seal on a transit deployment (and the reverse) and the token
// on the command line are each refused with a clear message.
func TestTransitSeal(t *testing.T) {
	stub, srv := newTransitStub(t, "s.token")
	t.Setenv("LATCHKEY_TRANSIT_TOKEN", "s.token")
	dir := t.TempDir()
	ctx := context.Background()
	seal := []string{"--data-dir", dir, "--seal", "transit", "--transit-addr", srv.URL, "--transit-key", "latchkey"}
	priv, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	created := initSealed(
		t,
		append([]string{"--org-name", "Acme", "--user-name", "ops", "--api-public-key", pub}, seal...),
		dir,
	)
	if stub.count("encrypt") != 1 {
		t.Fatalf("init wrapped the master key %d times", stub.count("encrypt"))
	}
	var keys1, keys2 bytes.Buffer
	if err := run(ctx, append([]string{"keys"}, seal...), &keys1, io.Discard); err != nil {
		t.Fatal(err)
	}

	// Opened, restarted (unwrapped again): the wallet made before the restart signs after it.
	signsAcrossRestart(t, server.Config{DataDir: dir, Seal: custody.SealTransit,
		Transit: custody.Transit{Addr: srv.URL, Key: "latchkey", Token: "s.token"}}, created["organizationId"], priv)
	if err := run(ctx, append([]string{"keys"}, seal...), &keys2, io.Discard); err != nil ||
		keys1.String() != keys2.String() {
		t.Fatalf("server keys after restarts: %v\n%s\n%s", err, keys1.String(), keys2.String())
	}
	if stub.count("decrypt") < 4 || stub.count("encrypt") != 1 {
		t.Fatalf("transit calls: %v", stub.calls)
	}

	mk := filepath.Join(t.TempDir(), "master.key")
	custody.GenerateMasterKeyFile(mk)
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"a wrong token", map[string]string{"LATCHKEY_TRANSIT_TOKEN": "s.wrong"}, append([]string{"keys"}, seal...), "HTTP 403 permission denied"},
		{"another transit key", nil, []string{"keys", "--data-dir", dir, "--seal", "transit", "--transit-addr", srv.URL, "--transit-key", "other"}, "encryption key not found"},
		{"no token", map[string]string{"LATCHKEY_TRANSIT_TOKEN": ""}, append([]string{"keys"}, seal...), "LATCHKEY_TRANSIT_TOKEN"},
		{"the token as a flag", nil, append([]string{"keys", "--transit-token", "s.token"}, seal...), "--transit-token is a secret"},
		{"a file seal on a transit deployment", nil, []string{"keys", "--data-dir", dir, "--master-key-file", mk}, "held by a transit seal"},
		{"both a file and transit", nil, append([]string{"keys", "--master-key-file", mk}, seal...), "give no --master-key-file"},
		{"plain http to a remote server", nil, []string{"keys", "--data-dir", dir, "--seal", "transit", "--transit-addr", "http://bao.example:8200", "--transit-key", "k"}, "plain http only towards loopback"},
		{"an unknown seal", nil, []string{"keys", "--data-dir", dir, "--seal", "hsm"}, `--seal "hsm"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			err := run(ctx, c.args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "s.token") {
				t.Fatalf("the token is echoed: %v", err)
			}
		})
	}
	// A deployment sealed by a file refuses --seal transit; a stopped transit server fails the start.
	fileDir := t.TempDir()
	if err := run(ctx, []string{"init", "--org-name", "F", "--user-name", "u", "--api-public-key", pub, "--data-dir", fileDir, "--master-key-file", mk}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"keys", "--data-dir", fileDir, "--seal", "transit", "--transit-addr", srv.URL, "--transit-key", "latchkey"}, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "has no transit seal record") {
		t.Fatalf("--seal transit on a file deployment: %v", err)
	}
	// keyring rewrap moves it: a new master key wrapped by the transit key; the old file no
	// longer opens the deployment and transit does, with the same server keys. And back to a file.
	var fileKeys, transitKeys, backKeys bytes.Buffer
	if err := run(ctx, []string{"keys", "--data-dir", fileDir, "--master-key-file", mk}, &fileKeys, io.Discard); err != nil {
		t.Fatal(err)
	}
	var rewrapped bytes.Buffer
	if err := run(ctx, []string{"keyring", "rewrap", "--data-dir", fileDir, "--master-key-file", mk, "--new-seal", "transit", "--transit-addr", srv.URL, "--transit-key", "latchkey"}, &rewrapped, io.Discard); err != nil ||
		!strings.Contains(rewrapped.String(), `"seal":"transit"`) {
		t.Fatalf("rewrap to transit: %v %s", err, rewrapped.String())
	}
	if err := run(ctx, []string{"keys", "--data-dir", fileDir, "--master-key-file", mk}, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "held by a transit seal") {
		t.Fatalf("the old file after the rewrap: %v", err)
	}
	fileSeal := []string{
		"--data-dir",
		fileDir,
		"--seal",
		"transit",
		"--transit-addr",
		srv.URL,
		"--transit-key",
		"latchkey",
	}
	if err := run(ctx, append([]string{"keys"}, fileSeal...), &transitKeys, io.Discard); err != nil ||
		transitKeys.String() != fileKeys.String() {
		t.Fatalf("keys through transit after the rewrap: %v\n%s\n%s", err, transitKeys.String(), fileKeys.String())
	}
	back := filepath.Join(t.TempDir(), "back.key")
	if err := run(ctx, append([]string{"keyring", "rewrap", "--new-seal", "file", "--new-master-key-file", back}, fileSeal...), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"keys", "--data-dir", fileDir, "--master-key-file", back}, &backKeys, io.Discard); err != nil ||
		backKeys.String() != fileKeys.String() {
		t.Fatalf("keys from the new file: %v", err)
	}
	var status bytes.Buffer
	if err := run(ctx, []string{"keyring", "status", "--data-dir", fileDir, "--master-key-file", back}, &status, io.Discard); err != nil ||
		!strings.Contains(status.String(), `"seal":"file"`) ||
		!strings.Contains(status.String(), `"sealedValues":`) {
		t.Fatalf("keyring status: %v %s", err, status.String())
	}
	srv.Close()
	if err := run(ctx, append([]string{"keys"}, seal...), io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "unsealing the master key through transit") {
		t.Fatalf("transit down: %v", err)
	}
}
