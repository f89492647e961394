package stamp

import (
	"crypto/ecdsa"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/p256verify"
)

// Per-key P-256 tables (issue 26, lever 1). A P-256 API key (or session key) that a caller
// has found registered (APIKeyProof.Registered) and that verifies a second signature while
// its parsed form sits in the key cache gets a p256verify.Table, which verifies its later
// signatures in about half the CPU time of crypto/ecdsa, with the same answers
// (internal/p256verify's vectors and fuzzers). Every other key, and every key while its table
// is not built, is verified by crypto/ecdsa.
//
// A table costs memory (p256verify.Bytes, 78 KiB) and about 0.5 ms of CPU to build; keys
// are registered by anyone who may create an API key, so both are bounded too: at most
// maxTableBytes of tables (the oldest-built is not favoured: an arbitrary one is evicted), and
// at most tableBuildsPerSecond builds a second (a bucket of that many tokens, refilled at that
// rate). A key refused a build by the bucket is verified by crypto/ecdsa and tries again on a
// later request.
const (
	maxTableBytes        = 16 << 20
	tableBuildsPerSecond = 50
)

// maxTables is how many tables maxTableBytes holds (210 on 64-bit platforms).
var maxTables = maxTableBytes / p256verify.Bytes

// tableCache owns which parsed keys hold a table. A key's table pointer is set and cleared
// only under mu; verification reads it without the lock.
type tableCache struct {
	mu      sync.Mutex
	max     int
	rate    float64 // builds per second, and the bucket's size
	now     func() time.Time
	holders map[*publicKey]struct{}
	tokens  float64
	last    time.Time
}

func newTableCache(maxEntries int, buildsPerSecond float64, now func() time.Time) *tableCache {
	return &tableCache{
		max:     maxEntries,
		rate:    buildsPerSecond,
		now:     now,
		holders: make(map[*publicKey]struct{}),
		tokens:  buildsPerSecond,
		last:    now(),
	}
}

var p256Tables = newTableCache(maxTables, tableBuildsPerSecond, time.Now)

// verifyP256 verifies a DER signature over hash with pk, with its table when it has one.
// With standard set it always uses crypto/ecdsa and never builds a table (the crypto floor
// of latchkey bench). cached says whether pk came from the key cache: only such keys, which
// have verified a signature before, and only those a caller found registered, are
// candidates for a table.
func verifyP256(pk *publicKey, hash, sig []byte, cached, standard bool) bool {
	if !standard {
		if t := pk.table.Load(); t != nil {
			return t.VerifyASN1(hash, sig)
		}
	}
	if !ecdsa.VerifyASN1(pk.p256, hash, sig) {
		return false
	}
	if cached && !standard && pk.registered.Load() {
		p256Tables.build(pk)
	}
	return true
}

// build gives pk a table if the cache has room (or can evict) and the bucket has a token.
// A key that has a table, or is having one built, costs no token.
func (c *tableCache) build(pk *publicKey) {
	if pk.table.Load() != nil || !pk.building.CompareAndSwap(false, true) {
		return
	}
	defer pk.building.Store(false)
	if pk.table.Load() != nil {
		return // another request built it between the two loads
	}
	if !c.take() {
		return
	}
	t, err := p256verify.NewTable(pk.p256)
	if err != nil {
		return // the key parsed and verified, so this does not happen; crypto/ecdsa serves it
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if pk.evicted.Load() {
		return // the key cache dropped the key while its table was built
	}
	if _, ok := c.holders[pk]; !ok && len(c.holders) >= c.max {
		for old := range c.holders {
			c.dropLocked(old)
			break
		}
	}
	c.holders[pk] = struct{}{}
	pk.table.Store(t)
}

// take spends one build token if there is one.
func (c *tableCache) take() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.tokens += now.Sub(c.last).Seconds() * c.rate
	c.last = now
	if c.tokens > c.rate {
		c.tokens = c.rate
	}
	if c.tokens < 1 {
		return false
	}
	c.tokens--
	return true
}

// drop forgets pk's table (the key cache evicted pk).
func (c *tableCache) drop(pk *publicKey) {
	c.mu.Lock()
	pk.evicted.Store(true)
	c.dropLocked(pk)
	c.mu.Unlock()
}

func (c *tableCache) dropLocked(pk *publicKey) {
	delete(c.holders, pk)
	pk.table.Store(nil)
}

func (c *tableCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.holders)
}
