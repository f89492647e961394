package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/latchkey/latchkey/internal/bench"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/metrics"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/stamp"
)

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	apiURL := fs.String(
		"api-url",
		"http://127.0.0.1:8080",
		"base URL of the activity API (ignored with --embedded or --database-url)",
	)
	credsFile := fs.String(
		"credentials",
		"./latchkey-data/dev-credentials.json",
		"API key file (organizationId, apiPrivateKey, curve), as serve --dev writes it",
	)
	embedded := fs.Bool(
		"embedded",
		false,
		"start a Latchkey in this process on a new SQLite data directory (deleted afterwards) and load it",
	)
	databaseURL := fs.String(
		"database-url",
		"",
		"start a Latchkey in this process on this PostgreSQL (use an empty database) and load it",
	)
	op := fs.String(
		"op",
		"whoami",
		"operation: whoami, create_user_tag, sign_raw_payload, create_sub_organization (one root user, one Ethereum wallet), "+
			"or transit_sign (an OpenBao/Vault transit key at --api-url, for comparison)",
	)
	transitKey := fs.String(
		"transit-key",
		"",
		"with --op transit_sign: the transit key's name (the token comes from LATCHKEY_BENCH_TRANSIT_TOKEN)",
	)
	conc := fs.Int("concurrency", 1, "concurrent clients")
	dur := fs.Duration("duration", 10*time.Second, "how long to send load")
	presign := fs.Int(
		"presign",
		0,
		"requests stamped before the measured window (0: 12,000 per second of --duration for activities, 4,096 for queries, which cycle)",
	)
	floorDur := fs.Duration(
		"floor-duration",
		2*time.Second,
		"how long to measure the crypto floor, once before the load and once after it (0: not measured)",
	)
	signWith := fs.String(
		"sign-with",
		"",
		"sign_raw_payload: the wallet account address or private key id to sign with (empty: create a wallet first)",
	)
	curve := fs.String(
		"curve",
		"secp256k1",
		"sign_raw_payload without --sign-with: secp256k1 (Ethereum account) or ed25519 (Solana account)",
	)
	nPolicies := fs.Int(
		"policies",
		0,
		"sign_raw_payload: sign as a new non-root user allowed by the last of this many policies (0: as the root user, which policies never restrict)",
	)
	seedN := fs.Int(
		"seed",
		0,
		"first create this many sub-organizations (each a root user with an API key and an Ethereum wallet), not measured: load against a full store",
	)
	cpuProfile := fs.String(
		"cpuprofile",
		"",
		"with --embedded or --database-url: write a CPU profile of the measured window (server and client) to this file",
	)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg := bench.Config{
		APIURL:        *apiURL,
		Op:            *op,
		Concurrency:   *conc,
		Duration:      *dur,
		SignWith:      *signWith,
		Curve:         *curve,
		Policies:      *nPolicies,
		Presign:       *presign,
		FloorDuration: *floorDur,
		Seed:          *seedN,
		TransitKey:    *transitKey,
		TransitToken:  os.Getenv("LATCHKEY_BENCH_TRANSIT_TOKEN"),
	}
	if *floorDur == 0 {
		cfg.FloorDuration = -1
	}
	inProcess := *embedded || *databaseURL != ""
	var proc processWindow
	if *cpuProfile != "" && !inProcess {
		return usageError{"--cpuprofile profiles an in-process server: give --embedded or --database-url"}
	}
	if inProcess {
		stop, err := benchServer(ctx, *databaseURL, &cfg, &proc, stderr)
		if err != nil {
			return err
		}
		defer stop()
		proc.hook(&cfg)
	} else if *op != "transit_sign" {
		creds, err := bench.LoadCredentials(*credsFile)
		if err != nil {
			return err
		}
		cfg.Creds = creds
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		start, end := cfg.OnStart, cfg.OnEnd
		cfg.OnStart = func() { start(); _ = pprof.StartCPUProfile(f) }
		cfg.OnEnd = func() { pprof.StopCPUProfile(); end() }
		defer pprof.StopCPUProfile()
	}
	r, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if inProcess {
		r.PeakRSSMiB = peakRSSMiB()
		r.Process = proc.result(r.Requests)
	}
	if *asJSON {
		b, _ := json.Marshal(r)
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprintln(stdout, r.String())
	}
	if r.Errors > 0 {
		fmt.Fprintf(stderr, "first error: %s\n", r.FirstError)
	}
	return nil
}

// benchServer starts a Latchkey in this process (SQLite in a new temporary data directory, or
// databaseURL), creates a new top-level organization with a fresh API key, points cfg at both,
// and returns the function that stops it all.
func benchServer(
	ctx context.Context,
	databaseURL string,
	cfg *bench.Config,
	proc *processWindow,
	stderr io.Writer,
) (func(), error) {
	dir, err := os.MkdirTemp("", "latchkey-bench-")
	if err != nil {
		return nil, err
	}
	mk := filepath.Join(dir, "master.key")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	limits, _ := parseLimits("users=unlimited,user-tags=unlimited,policies=unlimited")
	s, err := server.Open(
		ctx,
		server.Config{DataDir: dir, DatabaseURL: databaseURL, MasterKeyFile: mk, APIAddr: "127.0.0.1:0",
			Limits: limits, Log: slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))},
	)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- s.Run(runCtx, 5*time.Second, func(string) { close(ready) }) }()
	stop := func() {
		cancel()
		<-done
		s.Close()
		os.RemoveAll(dir)
	}
	select {
	case <-ready:
	case err := <-done:
		s.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	priv, pub, err := stamp.GenerateKey(stamp.CurveP256)
	if err != nil {
		stop()
		return nil, err
	}
	c, err := s.CreateOrganization(
		ctx,
		server.OrgSpec{OrgName: "bench " + strconv.FormatInt(time.Now().UnixNano(), 36), UserName: "bench",
			APIPublicKey: pub, APIKeyName: "bench"},
	)
	if err != nil {
		stop()
		return nil, err
	}
	if databaseURL == "" {
		cfg.FsyncDir = dir
	}
	proc.metrics, proc.store = s.Metrics, "sqlite"
	if databaseURL != "" {
		proc.store = "postgres"
	}
	cfg.APIURL = s.APIURL()
	cfg.Creds = &bench.Credentials{
		OrganizationID: c.OrganizationID,
		APIPublicKey:   pub,
		APIPrivateKey:  priv,
		Curve:          string(stamp.CurveP256),
	}
	return stop, nil
}

// processWindow measures the bench process (server and load generator) over the measured
// window: its CPU time, from getrusage, and the store's commits, from the server's metrics.
type processWindow struct {
	metrics    *metrics.Metrics
	store      string
	start, end time.Time
	cpu0, cpu1 time.Duration
	c0, c1     commitTotals
}

type commitTotals struct {
	commits, transactions uint64
	seconds               float64
}

func (p *processWindow) hook(cfg *bench.Config) {
	read := func(cpu *time.Duration, c *commitTotals, at *time.Time) {
		*at, *cpu = time.Now(), processCPU()
		c.commits, c.transactions, c.seconds = p.metrics.CommitTotals(p.store)
	}
	cfg.OnStart = func() { read(&p.cpu0, &p.c0, &p.start) }
	cfg.OnEnd = func() { read(&p.cpu1, &p.c1, &p.end) }
}

func (p *processWindow) result(requests int) *bench.Process {
	wall := p.end.Sub(p.start).Seconds()
	if wall <= 0 || requests == 0 {
		return nil
	}
	cpu := (p.cpu1 - p.cpu0).Seconds()
	r := &bench.Process{Cores: cpu / wall, CPUPerRequestUs: 1e6 * cpu / float64(requests),
		Commits: p.c1.commits - p.c0.commits, CommitShare: (p.c1.seconds - p.c0.seconds) / wall}
	if r.Commits > 0 {
		r.UpdatesPerCommit = float64(p.c1.transactions-p.c0.transactions) / float64(r.Commits)
		r.CommitMeanMs = 1e3 * (p.c1.seconds - p.c0.seconds) / float64(r.Commits)
	}
	return r
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSSMiB is this process's peak resident memory (VmHWM, Linux), 0 where unknown.
func peakRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
