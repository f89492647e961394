package policies_test

import (
	"testing"

	"github.com/latchkey/latchkey/internal/costtest"
	"github.com/latchkey/latchkey/internal/ops/policies"
)

// The ABI and IDL checks read untrusted bytes: they must answer, never panic or recurse without
// bound.
func FuzzCheckABI(f *testing.F) {
	for _, s := range []string{erc20ABI, `[]`, `[{"name":"f","inputs":[{"type":"tuple[2][]","components":[{"type":"uint8"}]}]}]`, `{"a":1}`, `[1,`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		costtest.Budget(t, b, checkAllocPerByte, 64<<10, func() { _ = policies.CheckABI(b) })
	})
}

func FuzzCheckIDL(f *testing.F) {
	for _, s := range []string{anchorIDL, `{"instructions":[]}`, `[]`, `{"instructions":[{"name":"x","args":[{"name":"a","type":null}]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		costtest.Budget(t, b, checkAllocPerByte, 64<<10, func() { _ = policies.CheckIDL(b) })
	})
}
