package server

import (
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// latchkey version names the commit a plain go build or go install of a clone records, and its
// date; the build script's stamp wins when given.
func TestBuildInfo(t *testing.T) {
	vcs := &debug.BuildInfo{Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "471aa3c07fa90bb4c57594b7a39c99bfaf8a0dc5"},
		{Key: "vcs.time", Value: "2026-11-27T16:10:31Z"},
		{Key: "vcs.modified", Value: "false"},
	}}
	dirty := &debug.BuildInfo{Settings: append(slices.Clone(vcs.Settings[:3]),
		debug.BuildSetting{Key: "vcs.modified", Value: "true"})}
	tests := []struct {
		commit, built string
		bi            *debug.BuildInfo
		want          string
	}{
		{"", "", vcs, "commit 471aa3c07fa90bb4c57594b7a39c99bfaf8a0dc5, committed 2026-11-27T16:10:31Z, go"},
		{"", "", dirty, "committed 2026-11-27T16:10:31Z, with uncommitted changes, go"},
		{"abc123", "2026-11-28T00:00:00Z", vcs, "(commit abc123, built 2026-11-28T00:00:00Z, go"},
		{"", "", &debug.BuildInfo{}, "commit unknown: built without version control information"},
		{"", "", nil, "commit unknown"},
	}
	for _, tc := range tests {
		if got := buildInfo(tc.commit, tc.built, tc.bi); !strings.Contains(got, tc.want) {
			t.Errorf("buildInfo(%q, %q) = %q, want it to contain %q", tc.commit, tc.built, got, tc.want)
		}
	}
}
