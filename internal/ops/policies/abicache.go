package policies

import (
	"container/list"
	"context"
	"strings"
	"sync"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/chain/ethereum"
	"github.com/latchkey/latchkey/internal/store"
)

// Bounds of the cache of parsed ABIs (ContractABI). A parsed ABI keeps about three times its
// JSON in memory (1.26 MB for 409 KB of functions with tuples), so the cache holds at most
// about 50 MB whatever the organizations upload; real ABIs are tens of kilobytes, so it holds
// hundreds of them.
const (
	// MaxCachedABIBytes bounds the JSON of the ABIs whose parsed form the cache keeps.
	MaxCachedABIBytes = 16 << 20
	// MaxCachedABIs bounds the entries, each an interface (or a note that it has no usable ABI).
	MaxCachedABIs = 4096
)

// ContractABI returns the parsed Ethereum ABI orgID uploaded for a contract address, nil when
// there is none (or the interface is a Solana IDL), or the error of an ABI that does not parse
// within ethereum's limits. The policy evaluator decodes eth.tx's calldata with it on every
// signing request to the contract.
//
// Parsing an ABI costs far more than decoding a call with it (52 ms and 13 MB for 400 KB of
// functions, against 7 µs), so each interface is parsed once per process and kept, by id, in a
// cache bounded by MaxCachedABIBytes and MaxCachedABIs that drops the least recently used. An
// interface is never rewritten (no operation updates one: create writes a new id, delete removes
// it with its address key), so its id names its content, and a cached interface is not read
// again: a request reads only the lookup key of the address.
func ContractABI(ctx context.Context, r store.Reader, orgID, address string) (*ethereum.ABI, error) {
	if isEthereumAddress(address) {
		address = strings.ToLower(address)
	}
	refs, err := r.Lookup(ctx, KeyContractInterfaceAt, orgID+"/"+address)
	if err != nil {
		return nil, apierr.Internalf(err, "looking up smart contract interfaces")
	}
	for _, ref := range refs {
		if ref.Kind != KindSmartContractInterface || ref.OrgID != orgID {
			continue
		}
		if e, ok := abis.get(ref.ID); ok {
			return e.abi, e.err
		}
		s, err := LoadSmartContractInterface(ctx, r, orgID, ref.ID)
		if err != nil {
			if apierr.From(err).Code == apierr.NotFound {
				continue
			}
			return nil, err
		}
		e := cachedABI{id: s.ID}
		if s.Type == InterfaceEthereum {
			e.abi, e.err = ethereum.ParseABI([]byte(s.Interface))
			e.size = len(s.Interface)
		}
		abis.put(e)
		return e.abi, e.err
	}
	return nil, nil
}

// abis is the process's cache of parsed ABIs.
var abis = newABICache(MaxCachedABIBytes, MaxCachedABIs)

// cachedABI is one interface's parse: its ABI, or why it has none (abi and err nil: not an
// Ethereum interface). size is the JSON the parse kept in memory for, counted against the bound.
type cachedABI struct {
	id   string
	abi  *ethereum.ABI
	err  error
	size int
}

// abiCache is a least-recently-used cache of cachedABI by interface id, bounded in entries and
// in the bytes of JSON their ABIs were parsed from.
type abiCache struct {
	mu                 sync.Mutex
	maxBytes, maxItems int
	bytes              int
	order              *list.List // front: most recently used; values are cachedABI
	byID               map[string]*list.Element
}

func newABICache(maxBytes, maxItems int) *abiCache {
	return &abiCache{maxBytes: maxBytes, maxItems: maxItems, order: list.New(), byID: map[string]*list.Element{}}
}

func (c *abiCache) get(id string) (cachedABI, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[id]
	if !ok {
		return cachedABI{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(cachedABI), true
}

// put keeps e, dropping the least recently used entries past the bounds. An entry larger than
// the whole bound is not kept.
func (c *abiCache) put(e cachedABI) {
	if e.size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[e.id]; ok { // parsed twice at once: keep one
		c.order.MoveToFront(el)
		return
	}
	c.byID[e.id] = c.order.PushFront(e)
	c.bytes += e.size
	for c.bytes > c.maxBytes || c.order.Len() > c.maxItems {
		last := c.order.Back()
		old := c.order.Remove(last).(cachedABI)
		delete(c.byID, old.id)
		c.bytes -= old.size
	}
}
