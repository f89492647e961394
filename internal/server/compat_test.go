package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/wire"
)

// Every swagger operation is registered or has a stated reason; docs/compatibility.md is what
// the registry says.
func TestCompatibility(t *testing.T) {
	h := servertest.New(t)
	reg := h.Server.Engine.Registry()
	for _, op := range wire.Ops {
		if op.Kind == wire.Other {
			continue
		}
		if !reg.Implemented(op.Kind, op.Path) && !server.EngineOps[op.Path] && server.NotSupported[op.Path] == "" {
			t.Errorf("%s %s has no registry entry and no stated reason for not being supported", op.Kind, op.Path)
		}
		if reg.Implemented(op.Kind, op.Path) && server.NotSupported[op.Path] != "" {
			t.Errorf("%s is implemented but still listed as not supported", op.Path)
		}
	}
	want := server.CompatibilityTable(reg)
	path := filepath.Join("..", "..", "docs", "compatibility.md")
	if os.Getenv("LATCHKEY_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Fatalf(
			"docs/compatibility.md is out of date: run LATCHKEY_UPDATE_DOCS=1 go test ./internal/server -run TestCompatibility",
		)
	}
}

// Every submit and query path answers a result, a clear 4xx, or the not-supported 501: never
// 404 or 500.
func TestEverySwaggerPathAnswers(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	for _, op := range wire.Ops {
		if op.Kind == wire.Other {
			continue
		}
		var r servertest.Response
		if op.Kind == wire.Submit {
			r = root.Submit(op.Path, op.Versions[0].Type, map[string]any{})
		} else {
			r = root.Query(op.Path, map[string]any{})
		}
		unknownPath := r.Status == http.StatusNotFound && strings.HasPrefix(r.Str("message"), "unknown operation")
		if unknownPath || r.Status >= 500 && r.Status != http.StatusNotImplemented {
			t.Errorf("%s %s answered %d: %s", op.Kind, op.Path, r.Status, r.Raw)
		}
		if !h.Server.Engine.Registry().Implemented(op.Kind, op.Path) && !server.EngineOps[op.Path] &&
			r.Status != http.StatusNotImplemented {
			t.Errorf("%s %s is not implemented but answered %d: %s", op.Kind, op.Path, r.Status, r.Raw)
		}
	}
}
