package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/costtest"
	"github.com/latchkey/latchkey/internal/custody"
)

// The unseal endpoint answers strangers: whatever its body, reading it costs no more than its
// size, and a body over the limit costs no more than the limit.
func TestUnsealBodyCost(t *testing.T) {
	z, _ := newShamirDeployment(t)
	h := z.front("api")
	run := func(in []byte) {
		r := httptest.NewRequest("PUT", UnsealPath, bytes.NewReader(in))
		r.RemoteAddr = "192.0.2.10:1"
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	shape := func(name string, mk func(n int) string) costtest.Shape {
		return costtest.Shape{Name: name, Run: run, Make: func(n int) []byte { return []byte(mk(n)) }}
	}
	shapes := []costtest.Shape{
		shape("deep arrays", func(n int) string {
			return `{"key":` + strings.Repeat("[", n/2) + strings.Repeat("]", n/2) + `}`
		}),
		shape("deep objects", func(n int) string {
			return `{"key":` + strings.Repeat(`{"a":`, n/5) + "0" + strings.Repeat("}", n/5) + `}`
		}),
		shape("many members", func(n int) string { return "{" + strings.Repeat(`"reset":false,`, n/14) + `"x":0}` }),
		shape("escapes", func(n int) string { return `{"key":"` + strings.Repeat(`\u0041`, n/6) + `"}` }),
	}
	costtest.Linear(t, 900, shapes...) // 900 B and 3.6 KB, under MaxUnsealBodyBytes
	for i := range shapes {
		shapes[i].Name += " over the limit"
		shapes[i].PerByte = 0.5 // the limit's worth is read, not the rest
	}
	costtest.Linear(t, MaxUnsealBodyBytes, shapes...)
}

// Wrong shares are counted per client address for unsealWindow. Counted for ever more addresses
// (a flood from an IPv6 prefix), each wrong share scanned every address counted (the sweep ran
// on every request once over maxUnsealClients, and swept nothing still in the window), and the
// table grew without bound. Now it holds at most maxUnsealClients addresses, the sweep is
// amortized, and the addresses beyond share one count.
func TestUnsealFailuresBounded(t *testing.T) {
	z, _ := newShamirDeployment(t)
	other, _ := custody.NewMasterKey()
	_, wrong, _ := custody.SplitMasterKey(other, 3, 2)
	share := wrong.Text(0)
	clients := func(n int) []byte { // n IPv6 addresses of one /64, 16 bytes each
		b := make([]byte, 0, 16*n)
		for i := range n {
			a := netip.MustParseAddr("2001:db8::").As16()
			binary.BigEndian.PutUint64(a[8:], uint64(i+1))
			b = append(b, a[:]...)
		}
		return b
	}
	run := func(in []byte) {
		z.mu.Lock()
		clear(z.failures)
		z.mu.Unlock()
		for i := 0; i+16 <= len(in); i += 16 {
			client := netip.AddrFrom16([16]byte(in[i : i+16])).String()
			_, _ = z.Unseal(context.Background(), client, share)
		}
	}
	costtest.Linear(t, maxUnsealClients*16, costtest.Shape{
		Name: "wrong shares from many addresses", Make: clients, Run: run,
		PerByte: 1 << 10, // each wrong share is logged and its error rendered
	})
	z.mu.Lock()
	n := len(z.failures)
	z.mu.Unlock()
	if n > maxUnsealClients+1 {
		t.Fatalf("%d addresses counted, more than %d", n, maxUnsealClients+1)
	}
	// The addresses beyond the table share one count: past unsealFailures, they wait.
	_, err := z.Unseal(context.Background(), "2001:db8::ffff:ffff", share)
	if err == nil || !strings.Contains(err.Error(), "too many wrong unseal shares") {
		t.Fatalf("a new address during a flood: %v", err)
	}
}
