// Package docscheck keeps the repository's citations of its own documentation honest. Comments,
// testdata notes and pages cite the pages under docs/ by file and section ("docs/wire.md §4.2",
// "docs/api-notes.md §6.1", "docs/wire.md Appendix A", `docs/design.md, "Server identity
// keys"`); Check finds every such citation and reports the ones whose file or heading does not
// exist, and every reference a clone cannot follow: a Markdown file the tree does not hold (and
// no other project is named for), or a path outside the repository. It names no outside file
// itself: it finds whatever a line points at that the tree lacks.
//
// It reads files and nothing else: no network, no writes. Its test runs Check on the whole
// repository, so renumbering a section without updating its citations fails the build.
package docscheck
