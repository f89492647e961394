package policies

import (
	"fmt"
	"testing"
)

// The cache of parsed ABIs keeps at most its bytes and its entries, dropping the least
// recently used, and never keeps an ABI larger than the whole bound.
func TestABICacheBounds(t *testing.T) {
	c := newABICache(100, 3)
	put := func(id string, size int) { c.put(cachedABI{id: id, size: size}) }
	has := func(ids ...string) string {
		var s string
		for _, id := range ids {
			_, ok := c.get(id)
			s += fmt.Sprintf("%s:%v ", id, ok)
		}
		return s
	}
	put("a", 40)
	put("b", 40)
	c.get("a")   // a is now more recently used than b
	put("c", 40) // 120 bytes: b goes
	if got, want := has("b", "a", "c"), "b:false a:true c:true "; got != want {
		t.Errorf("after the bytes bound: %s, want %s", got, want)
	}
	put("d", 0)
	put("e", 0) // 4 entries: the least recently used (a) goes
	if got, want := has("a", "c", "d", "e"), "a:false c:true d:true e:true "; got != want {
		t.Errorf("after the entry bound: %s, want %s", got, want)
	}
	put("huge", 101)
	if got, want := has("huge", "c", "d", "e"), "huge:false c:true d:true e:true "; got != want {
		t.Errorf("an ABI over the whole bound: %s, want %s", got, want)
	}
	if c.bytes != 40 || c.order.Len() != 3 || len(c.byID) != 3 {
		t.Errorf("bytes %d, entries %d and %d", c.bytes, c.order.Len(), len(c.byID))
	}
}
