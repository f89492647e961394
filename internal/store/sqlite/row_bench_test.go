package sqlite

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// BenchmarkActivityRow measures the writer on what a signing activity writes (one activity row,
// nothing else) from 32 concurrent writers, by the row's size and the writer's linger: what
// shrinking the stored row or batching differently would gain (docs/performance.md, issue 26's
// lever 3). cpu-us/update is the process's CPU time (user and system) per Update.
func BenchmarkActivityRow(b *testing.B) {
	for _, linger := range []time.Duration{time.Millisecond, 2 * time.Millisecond} {
		for _, size := range []int{2200, 1100, 550} {
			b.Run(fmt.Sprintf("linger=%v/row=%d", linger, size), func(b *testing.B) {
				s := openTemp(b, Options{MaxLinger: linger})
				benchRows(b, s, size)
				if c := s.w.commits.Load(); c > 0 {
					b.ReportMetric(float64(s.w.jobsRun.Load())/float64(c), "updates/commit")
				}
			})
		}
	}
	// The WAL's checkpointing: how often the background checkpointer copies it into the
	// database file (the default is 250ms), with today's row.
	for _, every := range []time.Duration{50 * time.Millisecond, time.Second} {
		b.Run(fmt.Sprintf("checkpoint=%v/row=2200", every), func(b *testing.B) {
			benchRows(b, openTemp(b, Options{CheckpointEvery: every}), 2200)
		})
	}
}

func benchRows(b *testing.B, s *Store, size int) {
	ctx := context.Background()
	data := make([]byte, size)
	for i := range data {
		data[i] = "0123456789abcdef"[(i*7+i/16)%16]
	}
	var seq atomic.Int64
	b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
	cpu0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprintf("a%012d", seq.Add(1))
			now := time.Now()
			err := s.Update(ctx, func(tx store.Tx) error {
				return tx.PutActivity(ctx, store.Activity{ID: id, OrgID: "o", Fingerprint: "sha256:" + id,
					Status: "ACTIVITY_STATUS_COMPLETED", Type: "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2",
					CreatedAt: now, UpdatedAt: now, Data: data})
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-us/update")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
