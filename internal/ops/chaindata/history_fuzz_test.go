package chaindata

import (
	"encoding/json"
	"strings"
	"testing"
)

const transferTopic = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"

// parseTransfer reads an ERC-20 Transfer log as a node answers it; ERC-721 Transfers (four
// topics), other events and malformed logs are not transfers.
func TestParseTransfer(t *testing.T) {
	word := func(s string) string { return "0x" + strings.Repeat("0", 64-len(s)) + s }
	from, to := word("aa"+strings.Repeat("1", 38)), word("bb"+strings.Repeat("2", 38))
	tok := "0x" + strings.Repeat("4", 40)
	for _, tc := range []struct {
		name string
		log  transferLog
		ok   bool
	}{
		{"erc20", transferLog{Address: tok, Topics: []string{transferTopic, from, to}, Data: word("f4240")}, true},
		{"erc721", transferLog{Address: tok, Topics: []string{transferTopic, from, to, word("1")}, Data: "0x"}, false},
		{"other event", transferLog{Address: tok, Topics: []string{word("1"), from, to}, Data: word("1")}, false},
		{"short data", transferLog{Address: tok, Topics: []string{transferTopic, from, to}, Data: "0x01"}, false},
		{"short topic", transferLog{Address: tok, Topics: []string{transferTopic, "0x01", to}, Data: word("1")}, false},
		{"bad token", transferLog{Address: "0x44", Topics: []string{transferTopic, from, to}, Data: word("1")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := parseTransfer(tc.log)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if ok && (m.from != "0xaa"+strings.Repeat("1", 38) || m.to != "0xbb"+strings.Repeat("2", 38) ||
				m.amount.String() != "1000000" || m.token != tok) {
				t.Fatalf("parsed %+v", m)
			}
		})
	}
}

// FuzzParseTransfer: any log JSON a node may answer decodes without panicking, and a log taken
// as a transfer has 20-byte addresses and an amount below 2^256.
func FuzzParseTransfer(f *testing.F) {
	f.Add(`{"address":"0x4444444444444444444444444444444444444444","topics":["` + transferTopic + `",` +
		`"0x000000000000000000000000aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",` +
		`"0x000000000000000000000000bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"],` +
		`"data":"0x00000000000000000000000000000000000000000000000000000000000f4240","transactionHash":"0x01"}`)
	f.Add(`{"topics":[],"data":""}`)
	f.Add(`{"address":"0x","topics":["` + transferTopic + `","0x","0x"],"data":"0xzz"}`)
	f.Fuzz(func(t *testing.T, s string) {
		var l transferLog
		if json.Unmarshal([]byte(s), &l) != nil {
			return
		}
		m, ok := parseTransfer(l)
		if !ok {
			return
		}
		if len(m.from) != 42 || len(m.to) != 42 || len(m.token) != 42 || m.amount.BitLen() > 256 {
			t.Fatalf("parsed %+v from %s", m, s)
		}
	})
}
