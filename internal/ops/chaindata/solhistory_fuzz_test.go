package chaindata

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/costtest"
)

// FuzzSolHistoryBase feeds getTransaction answers (untrusted: the node's) to the history item
// builder: it never panics, its allocations stay linear in the answer, and every transfer is
// the address's, with a direction and an amount.
func FuzzSolHistoryBase(f *testing.F) {
	const addr = "Addr1111111111111111111111111111111111111111"
	f.Add([]byte(`{"slot":5,"blockTime":1700000000,"meta":{"fee":5000,"preBalances":[10,0,1],"postBalances":[4,1,1],` +
		`"preTokenBalances":[{"accountIndex":1,"mint":"M","owner":"` + addr + `","uiTokenAmount":{"amount":"5","decimals":6}}],` +
		`"postTokenBalances":[{"accountIndex":1,"mint":"M","owner":"O","uiTokenAmount":{"amount":"5","decimals":6}}]},` +
		`"transaction":{"message":{"header":{"numRequiredSignatures":1},"accountKeys":["` + addr + `","B","C"]}}}`))
	f.Add([]byte(`{"meta":{"fee":18446744073709551615,"preBalances":[0],"postBalances":[18446744073709551615],` +
		`"loadedAddresses":{"writable":["` + addr + `"],"readonly":[]}},"transaction":{"message":{"header":` +
		`{"numRequiredSignatures":300,"numReadonlySignedAccounts":-4},"accountKeys":["` + addr + `"]}}}`))
	keys := `"` + strings.Repeat(addr+`","`, 300) + `x"`
	f.Add(
		[]byte(
			`{"meta":{"preBalances":[],"postBalances":[]},"transaction":{"message":{"accountKeys":[` + keys + `]}}}`,
		),
	)
	catalog, err := LoadCatalog("")
	if err != nil {
		f.Fatal(err)
	}
	d := &Deps{Catalog: catalog}
	f.Fuzz(func(t *testing.T, b []byte) {
		var tx solHistoryTx
		if json.NewDecoder(bytes.NewReader(b)).Decode(&tx) != nil || tx.Meta == nil {
			return
		}
		costtest.Budget(t, b, 64, 256<<10, func() {
			it, err := d.solHistoryBase(SolanaDevnet, addr, solSigInfo{Signature: "s"}, &tx)
			if err != nil {
				return
			}
			for _, tr := range it.Transfers {
				if (tr.Direction != "IN" && tr.Direction != "OUT") || tr.Amount == "" || tr.Amount == "0" {
					t.Fatalf("transfer %+v", tr)
				}
			}
		})
	})
}
