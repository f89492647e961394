package dashboard

import (
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/metrics"
)

// Requests is an in-process ring of the last 24 hours of answered requests, one slot a minute:
// how many, how many failed (5xx), how many were refused (4xx), and a latency histogram the
// percentiles are read from. Its size is fixed (requestMinutes slots of latencyBuckets
// counters), whatever the traffic. A process counts only what it served itself.
type Requests struct {
	mu    sync.Mutex
	slots []requestSlot // requestMinutes of them unless newRequests gave another size
	total int64
	since time.Time
}

// newRequests is a ring of the last minutes minutes.
func newRequests(minutes int) *Requests { return &Requests{slots: make([]requestSlot, minutes)} }

// ring returns the slots, making the 24-hour ring on first use (the zero Requests).
func (q *Requests) ring() []requestSlot {
	if q.slots == nil {
		q.slots = make([]requestSlot, requestMinutes)
	}
	return q.slots
}

const (
	requestMinutes = 24 * 60
	latencyBuckets = 32
	// latencyBase is the upper bound of the first latency bucket; each next bound is
	// latencyGrowth times the previous one (100µs, 150µs, 225µs ... about 19 s; the last
	// bucket holds everything slower).
	latencyBase   = 100 * time.Microsecond
	latencyGrowth = 1.5
)

type requestSlot struct {
	minute           int64 // unix minute the slot holds; another value means the slot is stale
	count, errs, bad int64
	hist             [latencyBuckets]int64
}

// latencyBound is the upper bound of latency bucket i (what a percentile in it is reported as).
func latencyBound(i int) time.Duration {
	return time.Duration(float64(latencyBase) * math.Pow(latencyGrowth, float64(i)))
}

func latencyBucket(d time.Duration) int {
	for i := range latencyBuckets - 1 {
		if d <= latencyBound(i) {
			return i
		}
	}
	return latencyBuckets - 1
}

// Record counts one answered request.
func (q *Requests) Record(at time.Time, code int, d time.Duration) {
	m := at.Unix() / 60
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.since.IsZero() {
		q.since = at
	}
	slots := q.ring()
	sl := &slots[m%int64(len(slots))]
	if m < sl.minute {
		return // older than the ring (the clock stepped back)
	}
	if sl.minute != m {
		*sl = requestSlot{minute: m}
	}
	sl.count++
	switch {
	case code >= 500:
		sl.errs++
	case code >= 400:
		sl.bad++
	}
	sl.hist[latencyBucket(d)]++
	q.total++
}

// Since is when the first request was recorded (zero before any).
func (q *Requests) Since() time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.since
}

// Total is how many requests were recorded since the process started.
func (q *Requests) Total() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.total
}

// requestPoint is one bucket of a requests chart.
type requestPoint struct {
	Start            time.Time
	Count, Errs, Bad int64
	P50, P95, P99    time.Duration
}

// window sums the minutes in [from, from+n*step) into n points of step (a whole number of
// minutes, at most the ring's 24 hours back).
func (q *Requests) window(from time.Time, step time.Duration, n int) []requestPoint {
	out := make([]requestPoint, n)
	per := int64(step / time.Minute)
	if per < 1 {
		per = 1
	}
	first := from.Unix() / 60
	q.mu.Lock()
	defer q.mu.Unlock()
	slots := q.ring()
	size := int64(len(slots))
	for i := range out {
		out[i].Start = time.Unix((first+int64(i)*per)*60, 0).UTC()
		var hist [latencyBuckets]int64
		for m := first + int64(i)*per; m < first+int64(i+1)*per; m++ {
			sl := &slots[((m%size)+size)%size]
			if sl.minute != m {
				continue
			}
			out[i].Count += sl.count
			out[i].Errs += sl.errs
			out[i].Bad += sl.bad
			for b, c := range sl.hist {
				hist[b] += c
			}
		}
		out[i].P50, out[i].P95, out[i].P99 = percentile(
			hist,
			out[i].Count,
			.50,
		), percentile(
			hist,
			out[i].Count,
			.95,
		), percentile(
			hist,
			out[i].Count,
			.99,
		)
	}
	return out
}

// percentile is the upper bound of the bucket holding the p-th request (0 without requests).
func percentile(hist [latencyBuckets]int64, n int64, p float64) time.Duration {
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(p * float64(n)))
	var seen int64
	for i, c := range hist {
		seen += c
		if seen >= rank {
			return latencyBound(i)
		}
	}
	return latencyBound(latencyBuckets - 1)
}

// OrgRequests keeps the last orgRequestMinutes minutes of requests of each of the organizations
// most recently served, at most orgRingsMax of them: the one served longest ago is forgotten
// first, so memory stays bounded (about 20 KB an organization) however many organizations the
// server holds.
type OrgRequests struct {
	mu    sync.Mutex
	rings map[string]*orgRing
}

type orgRing struct {
	q    *Requests
	last time.Time
}

const (
	orgRequestMinutes = 60
	orgRingsMax       = 256
)

// Record counts one answered request of organization org ("" is not counted).
func (o *OrgRequests) Record(org string, at time.Time, code int, d time.Duration) {
	if org == "" {
		return
	}
	o.mu.Lock()
	r := o.rings[org]
	if r == nil {
		if o.rings == nil {
			o.rings = map[string]*orgRing{}
		}
		if len(o.rings) >= orgRingsMax {
			oldest := ""
			for id, x := range o.rings {
				if oldest == "" || x.last.Before(o.rings[oldest].last) {
					oldest = id
				}
			}
			delete(o.rings, oldest)
		}
		r = &orgRing{q: newRequests(orgRequestMinutes)}
		o.rings[org] = r
	}
	r.last = at
	o.mu.Unlock()
	r.q.Record(at, code, d)
}

// For returns org's ring (nil when it was not served recently).
func (o *OrgRequests) For(org string) *Requests {
	o.mu.Lock()
	defer o.mu.Unlock()
	if r := o.rings[org]; r != nil {
		return r.q
	}
	return nil
}

// Observe wraps a listener's handler so the dashboard's request charts and the health page count
// its requests, server-wide and per organization (latchkey serve wraps the API listener with it,
// inside metrics.Observe, which learns each request's organization).
func (s *Server) Observe(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &codeWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rw, r)
		at, d := start.UTC(), time.Since(start)
		s.Requests.Record(at, rw.code, d)
		s.OrgRequests.Record(metrics.Organization(r.Context()), at, rw.code, d)
	})
}

type codeWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (c *codeWriter) WriteHeader(code int) {
	if !c.wrote {
		c.code, c.wrote = code, true
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *codeWriter) Write(b []byte) (int, error) {
	c.wrote = true
	return c.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (c *codeWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
