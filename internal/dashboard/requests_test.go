package dashboard

import (
	"testing"
	"time"
)

// TestRequestsRing: minutes are summed into buckets, 5xx and 4xx counted apart, percentiles
// read from the histogram, and a minute a day old is overwritten, not added to.
func TestRequestsRing(t *testing.T) {
	var q Requests
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	for i := range 100 {
		d := time.Millisecond
		if i >= 90 {
			d = 200 * time.Millisecond
		}
		code := 200
		switch {
		case i < 5:
			code = 500
		case i < 15:
			code = 404
		}
		q.Record(t0.Add(time.Duration(i)*time.Second), code, d) // minutes 10:00 and 10:01
	}
	q.Record(t0.Add(-24*time.Hour), 200, time.Second) // the same slot a day before: older than the ring, dropped
	pts := q.window(t0, 5*time.Minute, 2)
	tests := []struct {
		name      string
		got, want any
	}{
		{"count", pts[0].Count, int64(100)},
		{"5xx", pts[0].Errs, int64(5)},
		{"4xx", pts[0].Bad, int64(10)},
		{"p50", pts[0].P50, latencyBound(latencyBucket(time.Millisecond))},
		{"p95", pts[0].P95, latencyBound(latencyBucket(200 * time.Millisecond))},
		{"empty bucket", pts[1].Count, int64(0)},
		{"empty p99", pts[1].P99, time.Duration(0)},
		{"total", q.Total(), int64(100)},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if b := latencyBound(latencyBucket(time.Millisecond)); b < time.Millisecond || b > 1500*time.Microsecond {
		t.Errorf("1ms falls in a bucket bounded by %v", b)
	}
	// A new request in the slot of 10:00 a day later replaces the old minute.
	q.Record(t0.Add(24*time.Hour), 200, time.Millisecond)
	if p := q.window(t0.Add(24*time.Hour), time.Minute, 1); p[0].Count != 1 {
		t.Errorf("the reused slot counts %d", p[0].Count)
	}
}
