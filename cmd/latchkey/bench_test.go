package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/latchkey/latchkey/internal/bench"
)

// latchkey bench --embedded starts its own server, stamps every request before the measured
// window, measures the crypto floor in the same run and reports the ratio; activities that run
// out end the run early and say so; --cpuprofile writes a profile. (Figures are printed, never
// asserted: docs/performance.md.)
func TestBenchEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and loads it for a second (-short)")
	}
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	var out bytes.Buffer
	err := run(context.Background(), []string{"bench", "--embedded", "--op", "sign_raw_payload", "--concurrency", "4",
		"--duration", "3s", "--presign", "40", "--floor-duration", "200ms", "--cpuprofile", prof, "--json"}, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var r bench.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, out.Bytes())
	}
	if r.Errors != 0 || r.Presigned != 40 || r.Requests != 40 || !r.Exhausted {
		t.Fatalf("40 pre-signed activities, each sent once, then the run ends: %+v", r)
	}
	if r.Floor == nil || r.Floor.Cores < 1 || r.Floor.Curve != "secp256k1" || r.Floor.VerifyPerSecond <= 0 ||
		r.Floor.VerifySignPerSecond <= 0 ||
		r.Ratio <= 0 ||
		r.PeakRSSMiB <= 0 {
		t.Fatalf("floor, ratio and memory: %+v %+v", r, r.Floor)
	}
	// The process's CPU and the store's commits over the window: 40 activities, each its own
	// Update, in at least 10 commits of at most 4 (the clients).
	if p := r.Process; p == nil || p.Cores <= 0 || p.CPUPerRequestUs <= 0 || p.Commits < 10 || p.Commits > 40 ||
		p.UpdatesPerCommit < 1 || p.UpdatesPerCommit > 4 || p.CommitMeanMs <= 0 || p.CommitShare <= 0 {
		t.Fatalf("process: %+v", r.Process)
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Fatalf("--cpuprofile: %v", err)
	}

	// Queries cycle through their pre-signed requests until the duration ends.
	out.Reset()
	if err := run(context.Background(), []string{"bench", "--embedded", "--op", "whoami", "--concurrency", "2", "--duration", "500ms",
		"--presign", "4", "--floor-duration", "0", "--json"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	r = bench.Result{}
	json.Unmarshal(out.Bytes(), &r)
	if r.Errors != 0 || r.Exhausted || r.Requests <= 4 || r.Floor != nil {
		t.Fatalf("whoami cycles, no floor: %+v", r)
	}
	if err := run(context.Background(), []string{"bench", "--cpuprofile", prof}, io.Discard, io.Discard); err == nil {
		t.Fatal("--cpuprofile without an in-process server")
	}
}

// latchkey bench --database-url runs the same in-process load on PostgreSQL.
func TestBenchOnPostgres(t *testing.T) {
	url := freshPostgres(t)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"bench", "--database-url", url, "--op", "sign_raw_payload", "--concurrency", "4",
		"--duration", "3s", "--presign", "20", "--floor-duration", "100ms", "--json"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var r bench.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, out.Bytes())
	}
	if r.Errors != 0 || r.Requests != 20 || r.Ratio <= 0 {
		t.Fatalf("%+v", r)
	}
}
