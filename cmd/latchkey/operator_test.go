package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/stamp"
)

// operator create makes an account the dashboard of the same store signs in with; a second
// account with the same e-mail and a short password are refused.
func TestOperatorCreate(t *testing.T) {
	dir := t.TempDir()
	mk := filepath.Join(dir, "mk")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("a long operator password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	if err := run(ctx, []string{"init", "--org-name", "Acme", "--user-name", "ops", "--api-public-key", pub, "--data-dir", dir, "--master-key-file", mk},
		io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	args := []string{
		"operator",
		"create",
		"--email",
		"Ops@Example.com",
		"--password-file",
		pw,
		"--data-dir",
		dir,
		"--master-key-file",
		mk,
	}
	var out, errb bytes.Buffer
	if err := run(ctx, args, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	var v map[string]string
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || v["email"] != "ops@example.com" || v["operatorId"] == "" {
		t.Fatalf("printed %q", out.String())
	}
	if err := run(ctx, args, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("a second operator with the same e-mail: %v", err)
	}
	_ = os.WriteFile(pw, []byte("short"), 0o600)
	args[3] = "other@example.com"
	if err := run(ctx, args, io.Discard, io.Discard); err == nil {
		t.Fatal("a short password was accepted")
	}
	if err := run(ctx, []string{"operator", "create", "--data-dir", dir, "--master-key-file", mk}, io.Discard, io.Discard); err == nil {
		t.Fatal("operator create without --email was accepted")
	}

	s, err := server.Open(
		ctx,
		server.Config{DataDir: dir, MasterKeyFile: mk, Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s.Dashboard.Handler())
	defer ts.Close()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(
		ts.URL+"/login",
		url.Values{"email": {"ops@example.com"}, "password": {"a long operator password"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in with the created operator: %d", resp.StatusCode)
	}
}
