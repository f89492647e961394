package policies_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/costtest"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/ops/policies"
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
