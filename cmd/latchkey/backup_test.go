package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/stamp"
)

// api serves a deployment over httptest and stamps requests with priv.
type api struct {
	t    *testing.T
	url  string
	org  string
	priv string
}

func (a *api) submit(op, typ string, params any) map[string]any {
	a.t.Helper()
	p, _ := json.Marshal(params)
	body := fmt.Sprintf(
		`{"type":%q,"timestampMs":"%d","organizationId":%q,"parameters":%s}`,
		typ,
		time.Now().UnixMilli(),
		a.org,
		p,
	)
	st, err := stamp.NewP256Stamper(a.priv)
	if err != nil {
		a.t.Fatal(err)
	}
	name, value, _ := st.Stamp([]byte(body))
	req, _ := http.NewRequest(http.MethodPost, a.url+"/public/v1/submit/"+op, strings.NewReader(body))
	req.Header.Set(name, value)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil || resp.StatusCode != http.StatusOK {
		a.t.Fatalf("%s: %d %s", op, resp.StatusCode, b)
	}
	return out["activity"].(map[string]any)["result"].(map[string]any)
}

func serveDir(t *testing.T, dir, mk, org, priv string) (*api, func()) {
	t.Helper()
	s, err := server.Open(context.Background(), server.Config{DataDir: dir, MasterKeyFile: mk, MustExist: true,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.API.Handler())
	return &api{t: t, url: srv.URL, org: org, priv: priv}, func() { srv.Close(); s.Close() }
}

// latchkey backup snapshots a serving deployment (0600); latchkey restore puts it in place in a
// new data directory, which then signs with the wallet created before the backup. Restore refuses
// to overwrite a database, and backup refuses PostgreSQL (pg_dump is the way there).
func TestBackupAndRestore(t *testing.T) {
	dir := t.TempDir()
	mk := filepath.Join(t.TempDir(), "master.key")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	priv, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	var out bytes.Buffer
	ctx := context.Background()
	if err := run(ctx, []string{"init", "--org-name", "Acme", "--user-name", "ops", "--api-public-key", pub, "--data-dir", dir, "--master-key-file", mk},
		&out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var created map[string]string
	_ = json.Unmarshal(out.Bytes(), &created)
	a, stop := serveDir(t, dir, mk, created["organizationId"], priv)
	w := a.submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "kept", "accounts": []any{map[string]any{
			"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}},
	)
	addr := w["createWalletResult"].(map[string]any)["addresses"].([]any)[0].(string)

	// Backed up while the deployment serves.
	snap := filepath.Join(t.TempDir(), "snap.db")
	if err := run(ctx, []string{"backup", "--data-dir", dir, "--to", snap}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	stop()
	if fi, err := os.Stat(snap); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("snapshot: %v %v", fi, err)
	}
	if err := run(ctx, []string{"backup", "--data-dir", dir, "--to", snap}, io.Discard, io.Discard); err == nil {
		t.Fatal("a backup over an existing file was accepted")
	}
	if err := run(ctx, []string{"backup", "--database-url", "postgres://x", "--to", "y"}, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "pg_dump") {
		t.Fatalf("PostgreSQL backup: %v", err)
	}

	// Restored into a new directory: the wallet signs.
	restored := t.TempDir()
	if err := run(ctx, []string{"restore", "--data-dir", restored, "--from", snap}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"restore", "--data-dir", restored, "--from", snap}, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "exists") {
		t.Fatalf("a restore over a database: %v", err)
	}
	b, stop2 := serveDir(t, restored, mk, created["organizationId"], priv)
	defer stop2()
	sig := b.submit(
		"sign_raw_payload",
		"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2",
		map[string]any{"signWith": addr, "payload": strings.Repeat("ab", 32),
			"encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"},
	)
	if r := sig["signRawPayloadResult"].(map[string]any)["r"]; r == nil || r == "" {
		t.Fatalf("signature: %v", sig)
	}
	// A file that is not a database is refused.
	junk := filepath.Join(t.TempDir(), "junk")
	_ = os.WriteFile(junk, []byte("not a database"), 0o600)
	if err := run(ctx, []string{"restore", "--data-dir", t.TempDir(), "--from", junk}, io.Discard, io.Discard); err == nil {
		t.Fatal("a junk snapshot was restored")
	}
}
