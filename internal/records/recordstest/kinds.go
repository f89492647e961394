package recordstest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var (
	kindConstName = regexp.MustCompile(`^(Kind|kind)[A-Z]\w*$|^\w+Kind$`)
	kindValue     = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// DeclaredKinds lists every record kind declared under internalDir (the repository's
// internal/ directory): the string constants named Kind*, kind* or *Kind in non-test sources,
// outside the store itself (whose tests use made-up kinds) and testdata. It checks that the
// scan finds the kinds every deployment has, so the scan itself cannot rot unnoticed.
func DeclaredKinds(internalDir string) ([]string, error) {
	seen := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(internalDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == filepath.Join(internalDir, "store") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) || !kindConstName.MatchString(name.Name) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					if v, err := strconv.Unquote(lit.Value); err == nil && kindValue.MatchString(v) {
						seen[v] = true
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	kinds := make([]string, 0, len(seen))
	for k := range seen {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, must := range []string{"keyring", "server_key", "organization", "user", "api_key", "wallet", "wallet_account",
		"pending_activity", "outgoing_message", "webhook_delivery", "operator_session", "operator_audit", "policy_set"} {
		if !seen[must] {
			return nil, fmt.Errorf("the kind scan missed %q (found %v): fix recordstest.DeclaredKinds", must, kinds)
		}
	}
	if len(kinds) < 35 {
		return nil, fmt.Errorf("the kind scan found only %d kinds: %v", len(kinds), kinds)
	}
	return kinds, nil
}
