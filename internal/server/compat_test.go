package server

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/wire"
)

// Every swagger operation is registered or has a stated reason; docs/compatibility.md is what
// the registry says.
func TestCompatibility(t *testing.T) {
	h := newHarness(t)
	reg := h.s.Engine.Registry()
	for _, op := range wire.Ops {
		if op.Kind == wire.Other {
			continue
		}
		if !reg.Implemented(op.Kind, op.Path) && !engineOps[op.Path] && notSupported[op.Path] == "" {
			t.Errorf("%s %s has no registry entry and no stated reason for not being supported", op.Kind, op.Path)
		}
		if reg.Implemented(op.Kind, op.Path) && notSupported[op.Path] != "" {
			t.Errorf("%s is implemented but still listed as not supported", op.Path)
		}
	}
	want := CompatibilityTable(reg)
	path := filepath.Join("..", "..", "docs", "compatibility.md")
	if os.Getenv("LATCHKEY_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Fatalf("docs/compatibility.md is out of date: run LATCHKEY_UPDATE_DOCS=1 go test ./internal/server -run TestCompatibility")
	}
}

// Every submit and query path answers a result, a clear 4xx, or the not-supported 501: never
// 404 or 500.
func TestEverySwaggerPathAnswers(t *testing.T) {
	h := newHarness(t)
	root, _ := h.rootOrg("Acme")
	for _, op := range wire.Ops {
		if op.Kind == wire.Other {
			continue
		}
		var r response
		if op.Kind == wire.Submit {
			r = root.submit(op.Path, op.Versions[0].Type, map[string]any{})
		} else {
			r = root.query(op.Path, map[string]any{})
		}
		unknownPath := r.status == http.StatusNotFound && strings.HasPrefix(r.str("message"), "unknown operation")
		if unknownPath || r.status >= 500 && r.status != http.StatusNotImplemented {
			t.Errorf("%s %s answered %d: %s", op.Kind, op.Path, r.status, r.raw)
		}
		if !h.s.Engine.Registry().Implemented(op.Kind, op.Path) && !engineOps[op.Path] && r.status != http.StatusNotImplemented {
			t.Errorf("%s %s is not implemented but answered %d: %s", op.Kind, op.Path, r.status, r.raw)
		}
	}
}
