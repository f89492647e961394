package authproxy

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
)

// Rate is a per-client-address limit: Count requests every Per, at most Count at once (a token
// bucket that refills continuously). The zero Rate is no limit.
type Rate struct {
	Count int
	Per   time.Duration
}

// Default per-address limits of the proxy's sign-up and one-time-code sends. They stop one
// client creating sub-organizations or sending codes in bulk, while a household or office
// behind one address still signs up several people a minute.
var (
	DefaultSignupRate = Rate{Count: 10, Per: time.Minute}
	DefaultOTPRate    = Rate{Count: 10, Per: time.Minute}
)

// ParseRate reads "COUNT/DURATION" ("10/1m", "100/1h"); "0" or "off" is no limit.
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	if s == "0" || strings.EqualFold(s, "off") {
		return Rate{}, nil
	}
	n, per, ok := strings.Cut(s, "/")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count <= 0 {
		return Rate{}, fmt.Errorf("rate %q: want COUNT/DURATION such as 10/1m, or 0 for no limit", s)
	}
	d, err := time.ParseDuration(per)
	if err != nil || d <= 0 {
		return Rate{}, fmt.Errorf("rate %q: want COUNT/DURATION such as 10/1m, or 0 for no limit", s)
	}
	return Rate{Count: count, Per: d}, nil
}

func (r Rate) String() string {
	if r.Count == 0 {
		return "0"
	}
	return fmt.Sprintf("%d/%s", r.Count, r.Per)
}

// limiter keeps one token bucket per client address. It lives in the process: behind a load
// balancer over n processes an address gets up to n times the rate (docs/auth-proxy.md).
type limiter struct {
	rate Rate
	what string // named in the refusal

	mu        sync.Mutex
	buckets   map[netip.Addr]*bucket
	lastSweep time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newLimiter(r Rate, what string) *limiter {
	return &limiter{rate: r, what: what, buckets: map[netip.Addr]*bucket{}}
}

// allow takes a token for addr at now, or returns the 429 to answer with the time to wait.
func (l *limiter) allow(addr netip.Addr, now time.Time) error {
	if l == nil || l.rate.Count == 0 {
		return nil
	}
	perToken := l.rate.Per / time.Duration(l.rate.Count)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	b := l.buckets[addr]
	if b == nil {
		b = &bucket{tokens: float64(l.rate.Count), at: now}
		l.buckets[addr] = b
	}
	b.tokens = math.Min(float64(l.rate.Count), b.tokens+float64(now.Sub(b.at))/float64(perToken))
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return nil
	}
	wait := time.Duration((1 - b.tokens) * float64(perToken)).Round(time.Second)
	if wait < time.Second {
		wait = time.Second
	}
	return &rateLimited{wait: wait, err: apierr.New(apierr.ResourceExhausted, "RATE_LIMITED",
		"too many %s from this address: at most %d every %s; try again in %s", l.what, l.rate.Count, l.rate.Per, wait)}
}

// sweep drops the buckets that have refilled completely (they hold no information), at most
// once per period, so the map stays as small as the set of recently active addresses.
func (l *limiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < l.rate.Per {
		return
	}
	l.lastSweep = now
	for a, b := range l.buckets {
		if now.Sub(b.at) >= l.rate.Per {
			delete(l.buckets, a)
		}
	}
}

// rateLimited is a 429 with the seconds to wait (Retry-After).
type rateLimited struct {
	wait time.Duration
	err  error
}

func (r *rateLimited) Error() string { return r.err.Error() }
func (r *rateLimited) Unwrap() error { return r.err }
