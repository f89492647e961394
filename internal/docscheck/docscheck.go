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

// Problem is one broken citation or one mention of a note outside the repository.
type Problem struct {
	File string // slash-separated, relative to the root
	Line int
	Text string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Text) }

var (
	// A Markdown file named on a line: a path or a bare name ending in .md.
	mdRE = regexp.MustCompile(`[A-Za-z0-9_./@:-]*[A-Za-z0-9_-]\.md\b`)
	// Another project named before a file ("tkhq/docs stamps.mdx", "ethereum/EIPs" before an
	// EIP's page): owner/repository.
	projectRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./-])([A-Za-z0-9_.-]+)/[A-Za-z0-9_.-]+`)
	// A citation starts at "docs/<name>.md" that is not part of a longer path.
	citeRE = regexp.MustCompile("(^|[^A-Za-z0-9_./-])docs/([A-Za-z0-9_-]+)\\.md`?")
	// What may follow it: sections (§4, §4.2, §2b, a list joined by commas or "and"), an
	// appendix, or a heading's title in double quotes.
	sectionsRE = regexp.MustCompile(
		`^\s*§\s*[0-9]+[a-z]?(?:\.[0-9]+)*(?:\s*(?:,|and|,\s*and)\s*§\s*[0-9]+[a-z]?(?:\.[0-9]+)*)*`,
	)
	sectionRE  = regexp.MustCompile(`§\s*([0-9]+[a-z]?(?:\.[0-9]+)*)`)
	appendixRE = regexp.MustCompile(`^\s*Appendix ([A-Z])\b`)
	titleRE    = regexp.MustCompile(`^,?\s*"([^"\n]+)"`)
	headingRE  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*$`)
)

// Check walks the tree under root and returns its problems, sorted by file and line. It skips
// .git, node_modules, fuzz corpora under testdata and npm's package-lock.json.
//
// Besides the citations of docs/ pages, it reports every reference a clone cannot follow: a
// Markdown file named on a line that is neither in the repository (from the root, beside the
// citing file, or by its name anywhere in the tree) nor attributed to another project
// (owner/repository before it, or a URL), a relative one climbing out of the repository included;
// and an absolute path into the directory that holds the repository, outside it. No outside file is
// named here: the rules find whatever a line points at that the tree does not hold.
func Check(root string) ([]Problem, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	c := &checker{root: root, pages: map[string][]string{}, mdNames: map[string]bool{}, topDirs: map[string]bool{}}
	if err := c.index(); err != nil {
		return nil, err
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
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
			if name == ".git" || name == "node_modules" ||
				name == "fuzz" && strings.Contains("/"+rel, "/testdata/fuzz") {
				return filepath.SkipDir
			}
			return nil
		}
		if !scanned(rel) || d.Name() == "package-lock.json" {
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
	mdNames  map[string]bool     // base names of the tree's Markdown files
	topDirs  map[string]bool     // the repository's top-level directories
	problems []Problem
}

// index records the tree's Markdown file names and top-level directories.
func (c *checker) index() error {
	return filepath.WalkDir(c.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			if filepath.Dir(path) == c.root {
				c.topDirs[d.Name()] = true
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".md") {
			c.mdNames[d.Name()] = true
		}
		return nil
	})
}

// outside reports what on line (in file rel) points outside the repository.
func (c *checker) outside(rel string, n int, line string) {
	dir := filepath.Dir(filepath.Join(c.root, filepath.FromSlash(rel)))
	for _, m := range mdRE.FindAllStringIndex(line, -1) {
		tok := line[m[0]:m[1]]
		if strings.Contains(tok, "://") || strings.HasPrefix(tok, "/") ||
			strings.HasPrefix(tok, "docs/") && !strings.Contains(tok[len("docs/"):], "/") {
			continue // a URL; an absolute path (below); a docs/ page, checked as a citation
		}
		if c.attributed(line[:m[0]]) || c.foreign(tok) || c.inTree(dir, tok) {
			continue
		}
		c.add(rel, n, "names %s, which is not in the repository (cite docs/ instead)", tok)
	}
	if parent := filepath.Dir(c.root) + string(filepath.Separator); parent != string(filepath.Separator) {
		for i := strings.Index(line, parent); i >= 0; {
			end := i + len(parent)
			for end < len(line) && strings.IndexByte(" \t\"'`)", line[end]) < 0 {
				end++
			}
			if !c.within(line[i:end]) {
				c.add(rel, n, "names %s, which is outside the repository", line[i:end])
			}
			next := strings.Index(line[end:], parent)
			if next < 0 {
				break
			}
			i = end + next
		}
	}
}

// attributed reports whether before names another project (owner/repository whose owner is not
// one of the repository's own directories).
func (c *checker) attributed(before string) bool {
	for _, m := range projectRE.FindAllStringSubmatch(before, -1) {
		if !c.topDirs[m[1]] && m[1] != "." && m[1] != ".." {
			return true
		}
	}
	return false
}

// foreign reports whether the path tok starts in a directory the repository does not have at its
// top (another project's path: "EIPS/eip-712…", "tkhq/docs/…").
func (c *checker) foreign(tok string) bool {
	first, _, nested := strings.Cut(tok, "/")
	return nested && first != "." && first != ".." && !c.topDirs[first]
}

// inTree reports whether tok names a Markdown file of the repository: from the root, beside the
// citing file (dir), or by its base name.
func (c *checker) inTree(dir, tok string) bool {
	for _, p := range []string{filepath.Join(c.root, filepath.FromSlash(tok)), filepath.Join(dir, filepath.FromSlash(tok))} {
		if c.within(p) && exists(p) {
			return true
		}
	}
	return !strings.Contains(tok, "/") && c.mdNames[tok]
}

// within reports whether the absolute path p lies in the repository.
func (c *checker) within(p string) bool {
	r, err := filepath.Rel(c.root, filepath.Clean(p))
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator))
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
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
		c.outside(rel, n, line)
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
