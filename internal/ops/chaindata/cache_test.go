package chaindata

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/wire"
)

// TestCacheSharesFetches: concurrent misses share one fetch, hits within the TTL make none, and
// a failed fetch is not kept.
func TestCacheSharesFetches(t *testing.T) {
	c := &balanceCache{m: map[string]*cacheEntry{}}
	var fetches atomic.Int32
	fetch := func(context.Context) ([]wire.AssetBalance, error) {
		fetches.Add(1)
		time.Sleep(20 * time.Millisecond)
		return []wire.AssetBalance{{Balance: "1"}}, nil
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = c.get(context.Background(), "k", time.Minute, fetch) }()
	}
	wg.Wait()
	if _, err := c.get(context.Background(), "k", time.Minute, fetch); err != nil || fetches.Load() != 1 {
		t.Fatalf("%d fetches for 51 reads (%v), want 1", fetches.Load(), err)
	}
	if _, _ = c.get(context.Background(), "k", 0, fetch); fetches.Load() != 2 {
		t.Fatalf("an expired entry was served")
	}
}

// BenchmarkBalancesCached is a cache hit: what a burst of get_wallet_address_balances costs
// beyond the first call.
func BenchmarkBalancesCached(b *testing.B) {
	c := &balanceCache{m: map[string]*cacheEntry{}}
	fetch := func(context.Context) ([]wire.AssetBalance, error) { return []wire.AssetBalance{{Balance: "1"}}, nil }
	_, _ = c.get(context.Background(), "eip155:1 0xabc", time.Hour, fetch)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _ = c.get(context.Background(), "eip155:1 0xabc", time.Hour, fetch)
		}
	})
}
