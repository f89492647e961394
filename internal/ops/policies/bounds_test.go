package policies_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/chain/ethereum"
	"github.com/latchkey/latchkey/internal/costtest"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/ops/policies"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// largeABI is a valid ABI of about size bytes: one function with a long name (distinct per i).
func largeABI(i, size int) string {
	name := fmt.Sprintf("f%d_", i) + strings.Repeat("x", size-64)
	return `[{"type":"function","name":"` + name + `","inputs":[{"name":"a","type":"uint256"}],"outputs":[]}]`
}

func interfaceAt(i int, abi string) map[string]any {
	return ethInterface(abi, fmt.Sprintf("0x%040x", i+1))
}

// An organization holds at most Limits.ContractInterfacesPerOrg smart contract interfaces (100
// by default) and at most MaxContractInterfaceBytesPerOrg of them, since
// list_smart_contract_interfaces takes no pagination and answers them all. Before, there was no
// limit: 100 interfaces of 400 KiB made every list answer about 50 MB.
func TestSmartContractInterfaceLimits(t *testing.T) {
	const createType = "ACTIVITY_TYPE_CREATE_SMART_CONTRACT_INTERFACE"
	t.Run("count", func(t *testing.T) {
		if n := directory.DefaultLimits.ContractInterfacesPerOrg; n != 100 {
			t.Fatalf("default smart contract interface limit %d", n)
		}
		l := directory.DefaultLimits
		if p := l.LimitNames()["smart-contract-interfaces"]; p == nil || *p != 100 {
			t.Fatal(`LimitNames has no "smart-contract-interfaces"`)
		}
		lim := directory.DefaultLimits
		lim.ContractInterfacesPerOrg = 3
		h := newHarness(t, lim)
		for i := range 3 {
			h.mustSubmit(h.root, "create_smart_contract_interface", createType, interfaceAt(i, erc20ABI), nil)
		}
		_, err := h.submit(h.root, "create_smart_contract_interface", createType, interfaceAt(3, erc20ABI))
		wantErr(t, err, 429, "an organization can have at most 3 smart contract interfaces")
	})
	t.Run("bytes", func(t *testing.T) {
		h := newHarness(t, directory.DefaultLimits)
		size := policies.MaxInterfaceBytes - 1024
		fit := policies.MaxContractInterfaceBytesPerOrg / (size + 1024)
		for i := range fit {
			h.mustSubmit(h.root, "create_smart_contract_interface", createType, interfaceAt(i, largeABI(i, size)), nil)
		}
		_, err := h.submit(h.root, "create_smart_contract_interface", createType, interfaceAt(fit, largeABI(fit, size)))
		wantErr(t, err, 429, fmt.Sprintf("at most %d bytes of smart contract interfaces",
			policies.MaxContractInterfaceBytesPerOrg))
		// A small one still fits beside them.
		h.mustSubmit(h.root, "create_smart_contract_interface", createType, interfaceAt(fit+1, erc20ABI), nil)
		var out wire.GetSmartContractInterfacesResponse
		alloc := costtest.Allocated(func() {
			h.mustQuery(h.root, "list_smart_contract_interfaces", nil, &out)
		})
		t.Logf("list_smart_contract_interfaces over %d interfaces of %d KiB: %d bytes allocated",
			len(out.SmartContractInterfaces), size>>10, alloc)
		if len(out.SmartContractInterfaces) != fit+1 {
			t.Fatalf("listed %d interfaces, want %d", len(out.SmartContractInterfaces), fit+1)
		}
		// The harness decodes the answer again (about four times its size); the operation's own
		// share is a few copies of what it read.
		if limit := int64(16 * policies.MaxContractInterfaceBytesPerOrg); alloc > limit {
			t.Errorf("listing allocated %d bytes, over %d", alloc, limit)
		}
	})
}

// ContractABI parses an organization's ABI for an address once and answers the same parse
// after; a Solana IDL, another organization's address or an address without an interface has
// none, and an ABI go-ethereum does not parse (erc20ABI's fixed128x18, which CheckABI accepts)
// answers its error each time.
func TestContractABI(t *testing.T) {
	const createType = "ACTIVITY_TYPE_CREATE_SMART_CONTRACT_INTERFACE"
	h := newHarness(t, directory.DefaultLimits)
	const eth = "0x00000000000000000000000000000000000000aB"
	const sol = "TokenkegQfeZyiNwAJbNbGQPFNKzCQu9uwVZAhy4tGR"
	const transfer = `[{"type":"function","name":"transfer","inputs":[{"name":"dst","type":"address"},` +
		`{"name":"wad","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]}]`
	h.mustSubmit(h.root, "create_smart_contract_interface", createType, ethInterface(transfer, eth), nil)
	h.mustSubmit(h.root, "create_smart_contract_interface", createType, solInterface(anchorIDL, sol), nil)
	const broken = "0x00000000000000000000000000000000000000cd"
	h.mustSubmit(h.root, "create_smart_contract_interface", createType, ethInterface(erc20ABI, broken), nil)
	other, _, _ := h.organization("Other")
	ctx := context.Background()
	parse := func(org, addr string) (a *ethereum.ABI, err error) {
		if verr := h.st.View(ctx, func(r store.Reader) error {
			a, err = policies.ContractABI(ctx, r, org, addr)
			return nil
		}); verr != nil {
			t.Fatal(verr)
		}
		return a, err
	}
	abi := func(org, addr string) *ethereum.ABI {
		a, err := parse(org, addr)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for range 2 {
		if a, err := parse(h.org.ID, broken); a != nil || err == nil {
			t.Errorf("an ABI go-ethereum does not parse: %v, %v", a, err)
		}
	}
	first := abi(h.org.ID, strings.ToLower(eth))
	if first == nil || abi(h.org.ID, eth) != first {
		t.Fatalf("ContractABI parsed %p, then %p", first, abi(h.org.ID, eth))
	}
	if _, err := first.DecodeCall(make([]byte, 4)); err == nil {
		t.Error("a selector the ABI does not have decoded")
	}
	for name, a := range map[string]*ethereum.ABI{
		"a Solana IDL":                 abi(h.org.ID, sol),
		"another organization's":       abi(other.ID, eth),
		"an address without interface": abi(h.org.ID, "0x"+strings.Repeat("9", 40)),
	} {
		if a != nil {
			t.Errorf("%s: an ABI", name)
		}
	}
}
