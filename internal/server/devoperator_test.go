package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/server"
)

// EnsureDevOperator creates one operator when there is none, writes its sign-in to the data
// directory readable by the owner only, and on the next start keeps it.
func TestEnsureDevOperator(t *testing.T) {
	dir := t.TempDir()
	mk := filepath.Join(dir, "mk")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := server.Open(
		ctx,
		server.Config{DataDir: dir, MasterKeyFile: mk, Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, created, err := s.EnsureDevOperator(ctx, "http://127.0.0.1:8070")
	if err != nil || !created || d.Email == "" || len(d.Password) < 12 {
		t.Fatalf("first: %+v %v %v", d, created, err)
	}
	path := filepath.Join(dir, server.DevOperatorFile)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v", path, fi, err)
	}
	var onDisk server.DevOperator
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &onDisk); err != nil || onDisk != *d {
		t.Fatalf("file %s", b)
	}
	d2, created, err := s.EnsureDevOperator(ctx, "http://127.0.0.1:8070")
	if err != nil || created || d2 == nil || *d2 != *d {
		t.Fatalf("second: %+v %v %v", d2, created, err)
	}
}
