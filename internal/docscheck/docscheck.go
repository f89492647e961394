package docscheck

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Scanned are the file name endings whose text is searched for citations.
var Scanned = []string{".go", ".md", ".mjs", ".js", ".json", ".txt", ".sh"}

// Outside names notes that lived outside the repository; no file may cite them any more. The
// names are assembled so that this file does not itself contain them.
var Outside = []string{
	"turnkey-" + "wire.md",
	"turnkey-" + "api.md",
	"DESIGN" + ".md",
	"/work/" + "shared",
}

// Problem is one broken citation or one mention of a note outside the repository.
type Problem struct {
	File string // slash-separated, relative to the root
	Line int
	Text string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Text) }

var (
	// A citation starts at "docs/<name>.md" that is not part of a longer path.
	citeRE = regexp.MustCompile("(^|[^A-Za-z0-9_./-])docs/([A-Za-z0-9_-]+)\\.md`?")
	// What may follow it: sections (§4, §4.2, §2b, a list joined by commas or "and"), an
	// appendix, or a heading's title in double quotes.
	sectionsRE = regexp.MustCompile(`^\s*§\s*[0-9]+[a-z]?(?:\.[0-9]+)*(?:\s*(?:,|and|,\s*and)\s*§\s*[0-9]+[a-z]?(?:\.[0-9]+)*)*`)
	sectionRE  = regexp.MustCompile(`§\s*([0-9]+[a-z]?(?:\.[0-9]+)*)`)
	appendixRE = regexp.MustCompile(`^\s*Appendix ([A-Z])\b`)
	titleRE    = regexp.MustCompile(`^,?\s*"([^"\n]+)"`)
	headingRE  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*$`)
)

// Check walks the tree under root and returns its problems, sorted by file and line. It skips
// .git, node_modules and fuzz corpora under testdata.
func Check(root string) ([]Problem, error) {
	c := &checker{root: root, pages: map[string][]string{}}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if name == ".git" || name == "node_modules" || name == "fuzz" && strings.Contains("/"+rel, "/testdata/fuzz") {
				return filepath.SkipDir
			}
			return nil
		}
		if !scanned(rel) {
			return nil
		}
		return c.file(path, rel)
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(c.problems, func(i, j int) bool {
		a, b := c.problems[i], c.problems[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	return c.problems, nil
}

func scanned(name string) bool {
	for _, ext := range Scanned {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

type checker struct {
	root     string
	pages    map[string][]string // docs/<name>.md -> its headings' text; nil: no such file
	problems []Problem
}

func (c *checker) add(rel string, line int, format string, args ...any) {
	c.problems = append(c.problems, Problem{File: rel, Line: line, Text: fmt.Sprintf(format, args...)})
}

func (c *checker) file(path, rel string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), len(b)+1)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		for _, name := range Outside {
			if strings.Contains(line, name) {
				c.add(rel, n, "cites %s, which is not in the repository (cite docs/ instead)", name)
			}
		}
		for _, m := range citeRE.FindAllStringSubmatchIndex(line, -1) {
			page := "docs/" + line[m[4]:m[5]] + ".md"
			c.citation(rel, n, page, line[m[1]:])
		}
	}
	return sc.Err()
}

// citation checks one citation of page, rest being the text after it on the line.
func (c *checker) citation(rel string, n int, page, rest string) {
	heads, err := c.headings(page)
	if err != nil {
		c.add(rel, n, "cites %s: %v", page, err)
		return
	}
	if s := sectionsRE.FindString(rest); s != "" {
		for _, m := range sectionRE.FindAllStringSubmatch(s, -1) {
			if !hasSection(heads, m[1]) {
				c.add(rel, n, "cites %s §%s: no heading numbered %s there", page, m[1], m[1])
			}
		}
		return
	}
	if m := appendixRE.FindStringSubmatch(rest); m != nil {
		if !hasSection(heads, "Appendix "+m[1]) {
			c.add(rel, n, "cites %s Appendix %s: no such heading there", page, m[1])
		}
		return
	}
	if m := titleRE.FindStringSubmatch(rest); m != nil {
		if !hasTitle(heads, m[1]) {
			c.add(rel, n, "cites %s %q: no such heading there", page, m[1])
		}
	}
}

// headings returns the headings of page (a path relative to the root), reading it once.
func (c *checker) headings(page string) ([]string, error) {
	if h, ok := c.pages[page]; ok {
		if h == nil {
			return nil, fmt.Errorf("no such file")
		}
		return h, nil
	}
	b, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(page)))
	if err != nil {
		c.pages[page] = nil
		return nil, fmt.Errorf("no such file")
	}
	h := []string{}
	inFence := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil && !inFence {
			h = append(h, m[1])
		}
	}
	c.pages[page] = h
	return h, nil
}

// hasSection reports whether a heading is numbered sec: "4" matches "4. Policy" and "4 Policy"
// but not "4.2 Grammar"; "Appendix A" matches "Appendix A. Submit paths".
func hasSection(heads []string, sec string) bool {
	for _, h := range heads {
		rest, ok := strings.CutPrefix(h, sec)
		if !ok {
			continue
		}
		rest = strings.TrimPrefix(rest, ".")
		if rest == "" || rest[0] == ' ' || rest[0] == '\t' {
			return true
		}
	}
	return false
}

// hasTitle reports whether a heading, its number aside, is title.
func hasTitle(heads []string, title string) bool {
	for _, h := range heads {
		if h == title {
			return true
		}
		if i := strings.IndexByte(h, ' '); i > 0 && strings.TrimSpace(h[i+1:]) == title {
			return true
		}
	}
	return false
}
