package metrics

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/latchkey/latchkey/internal/store"
)

// storeRoleTTL is how long a role read for a scrape is reused by the next gauges.
const storeRoleTTL = time.Second

// WatchStore makes role the source of the store gauges (a server opened again over the same
// metrics, after an unseal, replaces the previous source).
func (m *Metrics) WatchStore(role func(ctx context.Context) (store.Role, error)) {
	if m == nil {
		return
	}
	m.storeRole.Store(&role)
}

// storeGauges are latchkey_store_up (1 when the store answered), latchkey_store_writable (1
// when it takes writes: a writable primary refusing none) and latchkey_store_sync_standbys (the
// synchronous standbys streaming from a PostgreSQL primary; -1 unknown), read at scrape time
// from WatchStore's source, at most once a second and for two seconds at most.
func (m *Metrics) storeGauges() []prometheus.Collector {
	var mu sync.Mutex
	var last store.Role
	var lastErr error
	var at time.Time
	read := func() (store.Role, error) {
		mu.Lock()
		defer mu.Unlock()
		src := m.storeRole.Load()
		if src == nil {
			return store.Role{}, errNoStore
		}
		if time.Since(at) > storeRoleTTL {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			last, lastErr = (*src)(ctx)
			cancel()
			at = time.Now()
		}
		return last, lastErr
	}
	gauge := func(name, help string, value func(store.Role, error) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			return value(read())
		})
	}
	return []prometheus.Collector{
		gauge("latchkey_store_up", "1 when the store answered its last check, else 0.",
			func(_ store.Role, err error) float64 { return b2f(err == nil) }),
		gauge("latchkey_store_writable", "1 when the store takes writes (a writable primary refusing none), else 0.",
			func(r store.Role, err error) float64 { return b2f(err == nil && r.Ready()) }),
		gauge("latchkey_store_sync_standbys",
			"Synchronous standbys streaming from the PostgreSQL primary (-1: unknown, SQLite or a standby).",
			func(r store.Role, err error) float64 {
				if err != nil {
					return -1
				}
				return float64(r.SyncStandbys)
			}),
	}
}

var errNoStore = errors.New("metrics: no store watched")

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
