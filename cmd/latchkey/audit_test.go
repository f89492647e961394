package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/dashboard"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/stamp"
	"github.com/latchkey/latchkey/internal/store"
)

// The commands that change state (proxy, access, keyring) write the audit log the dashboard
// shows, naming the command line as the operator.
func TestCommandsWriteTheAuditLog(t *testing.T) {
	dir := t.TempDir()
	mk := filepath.Join(dir, "mk")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	var out bytes.Buffer
	if err := run(ctx, []string{"init", "--org-name", "Acme", "--user-name", "ops", "--api-public-key", pub, "--data-dir", dir, "--master-key-file", mk},
		&out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var init struct {
		OrganizationID string `json:"organizationId"`
	}
	if err := json.Unmarshal(out.Bytes(), &init); err != nil || init.OrganizationID == "" {
		t.Fatalf("init printed %q", out.String())
	}
	org := init.OrganizationID
	sf := []string{"--data-dir", dir, "--master-key-file", mk}
	for _, args := range [][]string{
		{"proxy", "enable", "--org", org},
		{"proxy", "update", "--org", org, "--otp-length", "8"},
		{"proxy", "disable", "--org", org},
		{"proxy", "show", "--org", org},
		{"access", "grant", "--org", org, "--feature", "wallet-balances"},
		{"access", "revoke", "--org", org, "--feature", "wallet-balances"},
		{"keyring", "rotate"},
	} {
		var errb bytes.Buffer
		if err := run(ctx, append(args, sf...), io.Discard, &errb); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errb.String())
		}
	}
	s, err := server.Open(
		ctx,
		server.Config{DataDir: dir, MasterKeyFile: mk, Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []string
	if err := s.Store.View(ctx, func(r store.Reader) error {
		as, err := records.List[dashboard.Audit](ctx, r, dashboard.KindAudit, "", store.ListOptions{})
		for _, a := range as {
			if a.Operator != "(command line)" {
				t.Errorf("%s by %q", a.Action, a.Operator)
			}
			got = append(got, a.Action+" "+a.Target)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"proxy enabled " + org, "proxy updated " + org, "proxy disabled " + org, "access granted " + org, "access revoked " + org, "keyring rotated "} {
		if !slices.Contains(got, want) {
			t.Errorf("the audit log lacks %q: %q", want, got)
		}
	}
	if len(got) != 6 {
		t.Errorf("%d records (show must write none): %q", len(got), got)
	}
}
