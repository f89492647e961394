package chaindata

import (
	"strings"
	"testing"
)

func TestParseProviders(t *testing.T) {
	got, err := ParseProviders(
		[]string{"eip155:1=https://eth.example/rpc?key=SECRET", "solana:devnet=http://127.0.0.1:8899"},
	)
	if err != nil || got["eip155:1"] != "https://eth.example/rpc?key=SECRET" ||
		got[SolanaDevnet] != "http://127.0.0.1:8899" ||
		len(got) != 2 {
		t.Fatalf("%v %v", got, err)
	}
	for _, c := range []struct {
		specs []string
		want  string
	}{
		{[]string{"eip155:1=https://a.example/?key=SECRET", "eip155:1=https://b.example/?key=SECRET"}, "eip155:1 is given twice"},
		{[]string{"solana:devnet=https://a.example", SolanaDevnet + "=https://b.example"}, SolanaDevnet + " is given twice"}, // an alias and its id
		{[]string{"eip155:1"}, "want CAIP2=URL"},
		{[]string{"cosmos:hub=https://a.example/?key=SECRET"}, "not an eip155 or solana"},
		{[]string{"eip155:1=ftp://a.example/?key=SECRET"}, "must be an http(s) URL"},
	} {
		_, err := ParseProviders(c.specs)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%v: %v, want %q (and no URL)", c.specs, err, c.want)
		}
	}
}
