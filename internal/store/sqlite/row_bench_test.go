package sqlite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
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
				benchRows(b, s, size, false)
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
			benchRows(b, openTemp(b, Options{CheckpointEvery: every}), 2200, false)
		})
	}
	// Fingerprints as requests make them (the SHA-256 of a body: each lands on a random page of
	// the fingerprint index) rather than in order like the ids: what that index costs.
	for _, size := range []int{2200, 1100} {
		b.Run(fmt.Sprintf("fingerprint=random/row=%d", size), func(b *testing.B) {
			benchRows(b, openTemp(b, Options{}), size, true)
		})
	}
}

// benchRows runs b.N Updates from 32 writers, each writing one activity row of size bytes with a
// fingerprint in order (or random), and reports the rate, the process's CPU per Update and the
// bytes the process wrote to disk per Update (WAL and checkpoints; Linux only).
func benchRows(b *testing.B, s *Store, size int, randomFP bool) {
	ctx := context.Background()
	data := make([]byte, size)
	for i := range data {
		data[i] = "0123456789abcdef"[(i*7+i/16)%16]
	}
	var seq atomic.Int64
	b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
	cpu0, disk0 := cpuTime(), diskWritten()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprintf("a%012d", seq.Add(1))
			fp := "sha256:" + id
			if randomFP {
				var h [32]byte
				_, _ = rand.Read(h[:])
				fp = "sha256:" + hex.EncodeToString(h[:])
			}
			now := time.Now()
			err := s.Update(ctx, func(tx store.Tx) error {
				return tx.PutActivity(ctx, store.Activity{ID: id, OrgID: "o", Fingerprint: fp,
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
	if d := diskWritten() - disk0; disk0 >= 0 && d > 0 {
		b.ReportMetric(float64(d)/float64(b.N), "disk-B/update")
	}
}

// diskWritten is the bytes this process has caused to be written to storage (write_bytes of
// /proc/self/io), or -1 where that is not known.
func diskWritten() int64 {
	text, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(text), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n
			}
		}
	}
	return -1
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
