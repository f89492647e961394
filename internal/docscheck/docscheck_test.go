package docscheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the directory holding go.mod, found upwards from the package's own directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the package directory")
		}
		dir = parent
	}
}

// TestRepository fails when a citation of docs/ in the repository points at a file or section
// that does not exist, or when a file still cites notes kept outside the repository.
func TestRepository(t *testing.T) {
	root := repoRoot(t)
	problems, err := Check(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	// The pages the code cites must exist, or the check would be vacuous.
	for _, name := range []string{"wire.md", "api-notes.md", "design.md"} {
		if _, err := os.Stat(filepath.Join(root, "docs", name)); err != nil {
			t.Errorf("docs/%s: %v", name, err)
		}
	}
}

const page = `# A page

## 1. First
### 1.2 Second
### 2b. Third
` + "```" + `
## 9. Inside a code fence, not a heading
` + "```" + `
## Appendix A. Table
### Server keys
`

// TestCheck runs Check on made-up trees. In their text "@/" stands for "docs/", "%md" for the
// Markdown extension and "^/" for the directory that holds the tree, so that this file names no
// page itself and passes TestRepository.
func TestCheck(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string // path -> content, besides @/page%md
		want  []string          // substrings of the problems, in order; none: no problem
	}{
		{name: "good citations", files: map[string]string{
			"a.go": "// see @/page%md §1, @/page%md §1.2 and @/page%md §2b.\n" +
				"// @/page%md §1, §1.2 and §2b; @/page%md Appendix A; (@/page%md, \"Server keys\")\n",
			"b%md":   "See `@/page%md` §1.2 and `@/page%md`.\n",
			"c.mjs":  "// @/page%md §1\n",
			"d.json": `{"source": "@/page%md §2b"}` + "\n",
			"e.go":   "// tkhq/@/foo%md and https://example.com/@/bar%md are not ours\n",
		}},
		{name: "missing file", files: map[string]string{
			"a.go": "// @/nope%md §1\n",
		}, want: []string{"a.go:1: cites @/nope%md: no such file"}},
		{name: "missing file without section", files: map[string]string{
			"x/a%md": "line\nsee @/nope%md.\n",
		}, want: []string{"x/a%md:2: cites @/nope%md"}},
		{name: "missing section", files: map[string]string{
			"a.go": "// @/page%md §3\n",
		}, want: []string{"a.go:1: cites @/page%md §3"}},
		{name: "a subsection does not make a section", files: map[string]string{
			"a.go": "// @/page%md §1.3 and @/page%md §2\n",
		}, want: []string{"§1.3", "§2:"}},
		{name: "a heading in a code fence does not count", files: map[string]string{
			"a.go": "// @/page%md §9\n",
		}, want: []string{"§9"}},
		{name: "one bad section in a list", files: map[string]string{
			"a.go": "// @/page%md §1, §7 and §2b\n",
		}, want: []string{"§7"}},
		{name: "missing appendix and title", files: map[string]string{
			"a.go": "// @/page%md Appendix B\n// @/page%md, \"Client keys\"\n",
		}, want: []string{"a.go:1: cites @/page%md Appendix B", "a.go:2: cites @/page%md \"Client keys\""}},
		{name: "notes outside the repository", files: map[string]string{
			"a.go":              "// see notes-wire%md §4.2\n",
			"b%md":              "The design is in ../notes/DESIGN%md.\n",
			"testdata/v.json":   `{"_source": "^/notes/reference"}` + "\n",
			"testdata/keys.txt": "# from ^/notes/notes-wire%md\n",
			"scripts/gen.sh":    "# ^/notes\n",
			"e2e/tests/x.mjs":   "// notes-wire%md §2b\n",
			"@/unrelated.txt":   "fine\n",
		}, want: []string{"a.go:1", "b%md:1", "e2e/tests/x.mjs:1", "scripts/gen.sh:1", "testdata/keys.txt:1", "testdata/v.json:1"}},
		{name: "what the tree holds, and other projects' files", files: map[string]string{
			"x/README%md":           "see README%md, x/README%md, ./README%md and ../x/README%md\n",
			"y/a.go":                "// as ../x/README%md says; ethereum/EIPs `EIPS/eip-712%md`; https://example.com/a%md\n",
			"e2e/package-lock.json": `{"license": "SEE LICENSE IN LICENSE%md"}` + "\n",
		}},
		{name: "skipped trees", files: map[string]string{
			"e2e/node_modules/m/index.js": "// @/nope%md notes-wire%md\n",
			"p/testdata/fuzz/FuzzX/seed":  "@/nope%md\n",
			"p/testdata/fuzz/FuzzX/a.txt": "@/nope%md\n",
			".git/config.txt":             "@/nope%md\n",
			"image.png":                   "@/nope%md\n",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			files := map[string]string{"@/page%md": page}
			for k, v := range tt.files {
				files[k] = v
			}
			for name, content := range files {
				name, content = cited(name), strings.ReplaceAll(cited(content), "^/", filepath.Dir(root)+"/")
				p := filepath.Join(root, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			problems, err := Check(root)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i, w := range tt.want {
				if w = cited(w); !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

func TestHasSection(t *testing.T) {
	heads := []string{"1. First", "1.2 Second", "2b. Third", "10 Tenth", "Appendix A. Table"}
	for sec, want := range map[string]bool{
		"1": true, "1.2": true, "2b": true, "10": true, "Appendix A": true,
		"2": false, "1.3": false, "0": false, "Appendix B": false, "1.20": false,
	} {
		if got := hasSection(heads, sec); got != want {
			t.Errorf("hasSection(%q) = %v, want %v", sec, got, want)
		}
	}
}

// cited turns a fixture's "@/" into "docs/" and "%md" into the Markdown extension.
func cited(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "@/", "docs/"), "%md", "."+"md")
}
