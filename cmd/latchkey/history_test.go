package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// latchkey history backfill refuses what it cannot run before opening the store or calling a
// node: a missing flag, a block that is not a number, a range over the cap, a bad provider.
func TestHistoryBackfillRefusals(t *testing.T) {
	base := []string{"history", "backfill", "--data-dir", t.TempDir(), "--caip2", "eip155:1",
		"--address", "0x000000000000000000000000000000000000dEaD"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no subcommand", []string{"history"}, "give backfill"},
		{"no range", base, "--from-block and --to-block are required"},
		{"not a number", append(base, "--from-block", "x", "--to-block", "2"), "--from-block"},
		{"over the cap", append(base, "--from-block", "0", "--to-block", "10000"), "at most 10000"},
		{"bad provider", append(base, "--from-block", "1", "--to-block", "2", "--chain-rpc", "eip155:1=ftp://x"),
			"http(s) URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(context.Background(), tc.args, &bytes.Buffer{}, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
