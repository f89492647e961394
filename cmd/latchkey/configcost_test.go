package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/costtest"
)

// billionLaughs is a YAML document whose nine anchors each list the previous one ten times:
// expanded, its last alias is 10^9 values; levels bounds how many anchors there are.
func billionLaughs(levels int) string {
	var b strings.Builder
	b.WriteString("api-addr: &l0 x\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// deep allows a nesting shape the parser's node per level: go.yaml.in/yaml/v3 keeps a node of
// about 200 bytes for each collection (two to four input bytes) and refuses more than 10,000
// levels, so a deep file costs at most about 7 MB, and MaxConfigFileBytes bounds the rest.
func deep(s costtest.Shape) costtest.Shape {
	s.PerByte = 512
	return s
}

// The configuration file is the operator's, but still bytes a parser reads before anything
// else: whatever its shape, applying it costs no more than its size.
func TestConfigFileCost(t *testing.T) {
	run := func(in []byte) {
		fs, _, _, _ := configFlags()
		_ = applyConfig(fs, "latchkey.yaml", in, nil)
	}
	shape := func(name string, make func(n int) string) costtest.Shape {
		return costtest.Shape{Name: name, Run: run, Make: func(n int) []byte { return []byte(make(n)) }}
	}
	costtest.Linear(t, 4<<10,
		// Aliases into the list of a repeatable flag: expanded, n bytes would be 10^(n/40) values.
		shape("aliases in a list", func(n int) string {
			return billionLaughs(0) + "chain-rpc: &l1 [" + strings.Repeat("*l0, ", n/5) + "*l0]\n"
		}),
		shape("billion laughs", func(n int) string {
			return billionLaughs(9) + "chain-rpc: [" + strings.Repeat("*l9, ", n/5) + "*l9]\n"
		}),
		shape("an alias as a value", func(n int) string {
			return "data-dir: &big " + strings.Repeat("x", n) + "\napi-addr: *big\n"
		}),
		deep(shape("deep flow sequences", func(n int) string {
			return "chain-rpc: " + strings.Repeat("[", n/2) + strings.Repeat("]", n/2) + "\n"
		})),
		deep(shape("deep flow mappings", func(n int) string {
			return "chain-rpc: " + strings.Repeat("{a: ", n/4) + "b" + strings.Repeat("}", n/4) + "\n"
		})),
		shape("deep block mappings", func(n int) string {
			var b strings.Builder
			b.WriteString("chain-rpc:\n")
			for i := 1; b.Len() < n; i++ {
				b.WriteString(strings.Repeat(" ", i) + "a:\n")
			}
			return b.String()
		}),
		shape("many list items", func(n int) string {
			return "chain-rpc:\n" + strings.Repeat("  - eip155:1=https://a.example\n", n/32)
		}),
		shape("a long unknown key", func(n int) string { return strings.Repeat("k", n) + ": x\n" }),
		// An explicit key is not held to YAML's 1024 characters of an implicit one.
		shape("a long explicit unknown key", func(n int) string { return "? " + strings.Repeat("k", n) + "\n: x\n" }),
		shape("a long value", func(n int) string { return "api-addr: " + strings.Repeat("x", n) + "\n" }),
		shape("many keys given twice", func(n int) string {
			return strings.Repeat("api-addr: x\n", n/12)
		}),
		shape("many anchors", func(n int) string {
			var b strings.Builder
			b.WriteString("chain-rpc:\n")
			for i := 0; b.Len() < n; i++ {
				fmt.Fprintf(&b, "  - &a%d v\n", i)
			}
			return b.String()
		}),
	)
}

// What the limits refuse, they refuse naming the limit or the construct, and the line.
func TestConfigFileLimits(t *testing.T) {
	big := writeConfig(t, "api-addr: x\n"+strings.Repeat("# padding\n", MaxConfigFileBytes/10))
	fs, _, _, _ := configFlags()
	err := parseFlags(fs, []string{"--config", big})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("larger than %d bytes", MaxConfigFileBytes)) {
		t.Fatalf("a file over the limit: %v", err)
	}
	at := writeConfig(t, "api-addr: x\n"+strings.Repeat("#", MaxConfigFileBytes-len("api-addr: x\n")))
	fs, vals, _, _ := configFlags()
	if err := parseFlags(fs, []string{"--config", at}); err != nil || *vals["api-addr"] != "x" {
		t.Fatalf("a file at the limit: %v", err)
	}
	for _, tc := range []struct{ name, text, want string }{
		{"billion laughs", billionLaughs(9) + "chain-rpc: [*l9, *l9]\n", "line 2: unknown key"},
		{"aliases in a list", "chain-rpc: [&a x, *a]\n", "chain-rpc: line 1: aliases (*name) are not supported"},
		{"an alias as a value", "data-dir: &d /x\napi-addr: *d\n", "line 2: aliases (*name) are not supported"},
		{"a long explicit unknown key", "? " + strings.Repeat("k", 60000) + "\n: x\n", "unknown key"},
	} {
		fs, _, _, _ := configFlags()
		err := parseFlags(fs, []string{"--config", writeConfig(t, tc.text)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// A suggestion for an unknown name is only measured against names of about its length.
func TestDidYouMeanLongName(t *testing.T) {
	names := []string{"api-addr", "data-dir", "chain-rpc"}
	if got := didYouMean("api-adr", names, false); !strings.Contains(got, "api-addr") {
		t.Fatalf("api-adr: %q", got)
	}
	if got := didYouMean("chain", names, true); !strings.Contains(got, "--chain-rpc") {
		t.Fatalf("chain: %q", got)
	}
	long := strings.Repeat("a", 1<<20)
	if a := costtest.Allocated(func() { _ = didYouMean(long, names, false) }); a > 4<<10 {
		t.Fatalf("a 1 MiB name allocated %d bytes", a)
	}
}

// FuzzApplyConfig: the configuration file is bytes a parser reads; whatever they are, applying
// them costs a bounded multiple of their size (yaml.v3's node per collection allowed for).
func FuzzApplyConfig(f *testing.F) {
	f.Add([]byte("api-addr: 0.0.0.0:8080\nchain-rpc:\n  - eip155:1=https://a.example\n"))
	f.Add([]byte(billionLaughs(3)))
	f.Add([]byte("? " + strings.Repeat("k", 100) + "\n: x\n"))
	f.Add([]byte("chain-rpc: [[[[{a: b}]]]]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > MaxConfigFileBytes {
			return
		}
		fs, _, _, _ := configFlags()
		costtest.Budget(t, b, 512, 256<<10, func() { _ = applyConfig(fs, "latchkey.yaml", b, nil) })
	})
}
