package costtest

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// Shape is one adversarial input family: Make builds the input of size parameter n, Run feeds it
// to the code under test. Run's result is ignored (errors are expected: the input is hostile);
// Run must not panic.
type Shape struct {
	Name string
	Make func(n int) []byte
	Run  func(in []byte)
	// PerByte bounds the bytes Run may allocate per input byte, at both sizes (0: 64).
	PerByte float64
	// Fixed is the allocation allowed beside PerByte×len(input) (0: 64 KiB).
	Fixed int64
}

// Growth bounds: at 4n, a linear cost is about 4× the cost at n; a quadratic one 16×.
const (
	maxAllocGrowth = 6.0 // bytes allocated at 4n over bytes at n
	maxTimeGrowth  = 9.0 // time at 4n over time at n (the minimum of several runs each)
	timeAttempts   = 3   // a time ratio over the bound is measured again this many times
	minMeasured    = 2 * time.Millisecond
)

// Linear checks each shape at size n and 4n (n chosen so that the input at n is at least a few
// kilobytes and its cost is measurable).
func Linear(t *testing.T, n int, shapes ...Shape) {
	t.Helper()
	for _, s := range shapes {
		t.Run(s.Name, func(t *testing.T) {
			t.Helper()
			problems, figures := Check(s, n)
			t.Log(figures)
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

// Check measures one shape at n and 4n and returns what exceeded its bounds (nothing: linear)
// and the figures it measured.
func Check(s Shape, n int) (problems []string, figures string) {
	small, large := s.Make(n), s.Make(4*n)
	perByte, fixed := s.PerByte, s.Fixed
	if perByte == 0 {
		perByte = 64
	}
	if fixed == 0 {
		fixed = 64 << 10
	}
	as, al := leastAllocated(func() { s.Run(small) }), leastAllocated(func() { s.Run(large) })
	for _, m := range []struct {
		in    []byte
		bytes int64
	}{{small, as}, {large, al}} {
		if limit := int64(perByte*float64(len(m.in))) + fixed; m.bytes > limit {
			problems = append(problems, fmt.Sprintf(
				"%d input bytes allocated %d bytes, over the bound of %d (%.0f per input byte + %d)",
				len(m.in), m.bytes, limit, perByte, fixed))
		}
	}
	if as > 0 && al > fixed && float64(al)/float64(as) > maxAllocGrowth {
		problems = append(problems, fmt.Sprintf(
			"allocation grows faster than the input: %d bytes at %d input bytes, %d at %d (×%.1f for ×%.1f)",
			as, len(small), al, len(large), float64(al)/float64(as), float64(len(large))/float64(len(small))))
	}
	var ts, tl time.Duration
	for attempt := 0; attempt < timeAttempts; attempt++ {
		ts, tl = Duration(func() { s.Run(small) }), Duration(func() { s.Run(large) })
		if tl < minMeasured || float64(tl)/float64(max(ts, 1)) <= maxTimeGrowth {
			break
		}
	}
	figures = fmt.Sprintf("%d input bytes: %d bytes allocated, %v; %d input bytes: %d bytes allocated, %v",
		len(small), as, ts, len(large), al, tl)
	if tl < minMeasured || float64(tl)/float64(max(ts, 1)) <= maxTimeGrowth {
		return problems, figures
	}
	return append(problems, fmt.Sprintf(
		"time grows faster than the input: %v at %d input bytes, %v at %d (×%.1f for ×%.1f)",
		ts,
		len(small),
		tl,
		len(large),
		float64(tl)/float64(max(ts, 1)),
		float64(len(large))/float64(len(small)),
	)), figures
}

// Allocated is the bytes f allocates on the heap (runtime.MemStats.TotalAlloc before and after).
// The collector is off meanwhile, so that buffers kept in a sync.Pool are reused or not the same
// way in every run.
func Allocated(f func()) int64 {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// leastAllocated is the least Allocated of three runs of f: the test process may have other
// goroutines (a server an earlier test left running) whose allocations count in MemStats too,
// and at least one run is likely to see few of them.
func leastAllocated(f func()) int64 {
	least := Allocated(f)
	for i := 0; i < 2; i++ {
		least = min(least, Allocated(f))
	}
	return least
}

// Duration is the shortest of a few runs of f, each measured as the CPU time the process spent
// (where the system tells it; wall-clock time elsewhere), so that other processes on the machine
// do not count.
func Duration(f func()) time.Duration {
	best := time.Duration(1<<63 - 1)
	var spent time.Duration
	for i := 0; i < 5 && (i < 2 || spent < 500*time.Millisecond); i++ {
		start := cpuTime()
		f()
		d := cpuTime() - start
		spent += d
		best = min(best, d)
	}
	return best
}

// Budget fails t when f allocates more than perByte bytes per byte of in plus fixed: the form
// for a fuzz target, which sees one input at a time.
func Budget(t testing.TB, in []byte, perByte float64, fixed int64, f func()) {
	t.Helper()
	limit := int64(perByte*float64(len(in))) + fixed
	got := Allocated(f)
	if got > limit {
		got = min(got, leastAllocated(f)) // measured again, in case other goroutines allocated meanwhile
	}
	if got > limit {
		t.Fatalf("%d input bytes allocated %d bytes, over the bound of %d (%.0f per input byte + %d)",
			len(in), got, limit, perByte, fixed)
	}
}
