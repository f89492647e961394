package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/stamp"
)

// Credentials are the API key the load is stamped with (the format `serve --dev` writes).
type Credentials struct {
	OrganizationID string `json:"organizationId"`
	APIPublicKey   string `json:"apiPublicKey"`
	APIPrivateKey  string `json:"apiPrivateKey"`
	Curve          string `json:"curve"`
}

// LoadCredentials reads a credentials file.
func LoadCredentials(path string) (*Credentials, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Credentials
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.OrganizationID == "" || c.APIPrivateKey == "" {
		return nil, fmt.Errorf("%s: organizationId and apiPrivateKey are required", path)
	}
	return &c, nil
}

// Config is one load run.
type Config struct {
	APIURL      string
	Creds       *Credentials
	Op          string // whoami | create_user_tag | get_activity ... see Ops
	Concurrency int
	Duration    time.Duration
	// SignWith is the address or key id sign_raw_payload uses; empty creates a wallet with one
	// account on Curve first.
	SignWith string
	// Curve is "secp256k1" (an Ethereum account, HASH_FUNCTION_NO_OP over a digest) or "ed25519"
	// (a Solana account, HASH_FUNCTION_NOT_APPLICABLE).
	Curve string
	// Policies, when > 0 (sign_raw_payload only), signs as a new non-root user whom the last of
	// that many policies allows, so every request is decided by the policy engine rather than
	// by the root quorum.
	Policies int
	// Presign is how many stamped requests are prepared before the measured window, so the
	// client's own signing is not measured. Activities use each once (a new body, a new
	// activity); queries cycle through theirs. A run whose activities run out ends early and
	// says so. 0: 12,000 per second of Duration for activities, 4,096 for queries.
	Presign int
	// FloorDuration is how long the crypto floor is measured, once before the load and once
	// after it (0: 2 s each; negative: not measured). A virtual machine's speed drifts; the
	// ratio is taken to the mean of the two.
	FloorDuration time.Duration
	// FsyncDir, when set, is the directory of the server's data on this machine (latchkey
	// bench --embedded): the run measures how long the disk takes to make a small write durable
	// there, the floor of one client's latency.
	FsyncDir string
	// OnStart, when set, is called as the measured window opens (a profiler starts there), and
	// OnEnd as it closes.
	OnStart, OnEnd func()
	// TransitKey and TransitToken (op transit_sign) name an OpenBao or Vault transit key and the
	// token that may sign with it: the run measures that server's signing beside the same crypto
	// floor, so the two servers' ratios compare (docs/performance.md "Against OpenBao").
	TransitKey, TransitToken string
	// Seed, when > 0, first creates that many sub-organizations of the bench's organization,
	// each with a root user holding an API key and an Ethereum wallet, so the load runs against
	// a store that is not empty (not measured).
	Seed int
}

// Ops lists the operations the tool can send.
var Ops = []string{"whoami", "create_user_tag", "sign_raw_payload", "create_sub_organization", "transit_sign"}

// Result is what a run measured.
type Result struct {
	Op          string        `json:"op"`
	Concurrency int           `json:"concurrency"`
	Duration    time.Duration `json:"-"`
	Seconds     float64       `json:"seconds"`
	Requests    int           `json:"requests"`
	Errors      int           `json:"errors"`
	RPS         float64       `json:"requestsPerSecond"`
	P50         time.Duration `json:"-"`
	P99         time.Duration `json:"-"`
	P50ms       float64       `json:"p50Ms"`
	P99ms       float64       `json:"p99Ms"`
	FirstError  string        `json:"firstError,omitempty"`
	// Presigned is how many stamped requests were prepared; Exhausted says the run ended
	// because its activities ran out, before Duration.
	Presigned int  `json:"presigned"`
	Exhausted bool `json:"exhausted,omitempty"`
	// Floor is the crypto floor measured in the same run (nil when not measured), and Ratio
	// the throughput as a fraction of the floor that applies to the operation: verification
	// plus signature for sign_raw_payload, verification alone otherwise.
	Floor *Floor  `json:"floor,omitempty"`
	Ratio float64 `json:"ratioToFloor,omitempty"`
	// FloorDrift is how far the floor measured after the load was from the one measured before
	// it, as a fraction of their mean: how much the machine's speed moved during the run.
	FloorDrift float64 `json:"floorDrift,omitempty"`
	// FsyncP50 is the median time to write 4 KiB and fsync it in Config.FsyncDir (0: not
	// measured): a durable request on one client cannot answer faster.
	FsyncP50   time.Duration `json:"-"`
	FsyncP50ms float64       `json:"fsyncP50Ms,omitempty"`
	// PeakRSSMiB is the peak resident memory of a process that ran the server in process
	// (latchkey bench --embedded / --database-url), client included; 0 otherwise.
	PeakRSSMiB float64 `json:"peakRssMiB,omitempty"`
	// Process is what the process that ran the server in process spent during the window
	// (nil otherwise).
	Process *Process `json:"process,omitempty"`
}

// Process is the CPU and store commits of a process that ran the server and the load generator
// during the measured window: whether the run was bound by the two cores (Cores near 2) or by
// something serial, such as the store's commits (CommitShare near 1: one commit always under way).
type Process struct {
	// Cores is the CPU time (user and system) over the window's wall time, and CPUPerRequestUs
	// that CPU time per answered request, load generator included.
	Cores           float64 `json:"cores"`
	CPUPerRequestUs float64 `json:"cpuPerRequestUs"`
	// Commits is how many durable commits the store made, UpdatesPerCommit the transactions
	// each carried on average, CommitMeanMs the mean time of one commit (for SQLite the COMMIT
	// statement with its WAL writes and fsync, not the batch's statements before it), and
	// CommitShare the time spent committing over the window's wall time.
	Commits          uint64  `json:"commits"`
	UpdatesPerCommit float64 `json:"updatesPerCommit"`
	CommitMeanMs     float64 `json:"commitMeanMs"`
	CommitShare      float64 `json:"commitShare"`
}

func (r Result) String() string {
	s := fmt.Sprintf(
		"op=%s concurrency=%d duration=%.1fs requests=%d errors=%d rps=%.0f p50=%.2fms p99=%.2fms presigned=%d",
		r.Op,
		r.Concurrency,
		r.Seconds,
		r.Requests,
		r.Errors,
		r.RPS,
		r.P50ms,
		r.P99ms,
		r.Presigned,
	)
	if r.Exhausted {
		s += " (the pre-signed requests ran out before the duration: raise --presign)"
	}
	if r.PeakRSSMiB > 0 {
		s += fmt.Sprintf(" peak-rss=%.0fMiB", r.PeakRSSMiB)
	}
	if p := r.Process; p != nil {
		s += fmt.Sprintf(
			"\nprocess: %.2f cores, %.0f µs of CPU per request; store: %d commits, %.1f transactions each, "+
				"%.2f ms a commit, committing %.0f%% of the window",
			p.Cores,
			p.CPUPerRequestUs,
			p.Commits,
			p.UpdatesPerCommit,
			p.CommitMeanMs,
			100*p.CommitShare,
		)
	}
	if r.Floor != nil {
		s += fmt.Sprintf(
			"\nfloor (%d cores, mean of before and after the load, which differ by %.0f%%): p256-verify=%.0f/s p256-verify+%s-sign=%.0f/s; ratio=%.3f",
			r.Floor.Cores,
			100*r.FloorDrift,
			r.Floor.VerifyPerSecond,
			r.Floor.Curve,
			r.Floor.VerifySignPerSecond,
			r.Ratio,
		)
	}
	if r.FsyncP50 > 0 {
		s += fmt.Sprintf("\ndisk: 4 KiB write+fsync p50=%.3fms (one client's p50 above it: %.3fms)",
			r.FsyncP50ms, r.P50ms-r.FsyncP50ms)
	}
	return s
}

// Run sends load until cfg.Duration elapses or ctx ends.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if !slices.Contains(Ops, cfg.Op) {
		return Result{}, fmt.Errorf("--op must be one of %s", strings.Join(Ops, ", "))
	}
	if cfg.Concurrency < 1 {
		return Result{}, errors.New("--concurrency must be at least 1")
	}
	if cfg.Curve == "" {
		cfg.Curve = "secp256k1"
	}
	if cfg.Curve != "secp256k1" && cfg.Curve != "ed25519" {
		return Result{}, errors.New("--curve must be secp256k1 or ed25519")
	}
	var st stamp.Stamper
	var err error
	if cfg.Op == "transit_sign" {
		if cfg.TransitKey == "" || cfg.TransitToken == "" {
			return Result{}, errors.New("transit_sign needs --transit-key and a token (LATCHKEY_BENCH_TRANSIT_TOKEN)")
		}
		st = tokenHeader(cfg.TransitToken)
	} else if st, err = newStamper(cfg.Creds); err != nil {
		return Result{}, err
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: cfg.Concurrency * 2, MaxIdleConnsPerHost: cfg.Concurrency * 2, IdleConnTimeout: 90 * time.Second}}
	base := strings.TrimSuffix(cfg.APIURL, "/")
	if cfg.Op == "sign_raw_payload" && cfg.SignWith == "" {
		if cfg.SignWith, err = createWallet(ctx, client, base, st, cfg); err != nil {
			return Result{}, fmt.Errorf("creating a wallet to sign with: %w", err)
		}
	}
	if cfg.Op == "sign_raw_payload" && cfg.Policies > 0 {
		if st, err = policySigner(ctx, client, base, st, cfg); err != nil {
			return Result{}, fmt.Errorf("setting up %d policies: %w", cfg.Policies, err)
		}
	}
	if cfg.Seed > 0 {
		if err := seed(ctx, client, base, st, cfg); err != nil {
			return Result{}, fmt.Errorf("seeding %d sub-organizations: %w", cfg.Seed, err)
		}
	}
	// One request first, to fail fast on a wrong URL or key.
	if _, err := do(ctx, client, base, st, cfg, 0, 0); err != nil {
		return Result{}, fmt.Errorf("first request failed: %w", err)
	}
	var floor *Floor
	fd := cfg.FloorDuration
	if fd == 0 {
		fd = 2 * time.Second
	}
	if fd > 0 {
		f, err := MeasureFloor(ctx, cfg.Curve, fd)
		if err != nil {
			return Result{}, err
		}
		floor = &f
	}
	var fsyncP50 time.Duration
	if cfg.FsyncDir != "" {
		if fsyncP50, err = MeasureFsync(cfg.FsyncDir, 200); err != nil {
			return Result{}, err
		}
	}
	pools, total, err := presign(cfg, st)
	if err != nil {
		return Result{}, err
	}
	cycle := cfg.Op == "whoami"
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	// Each worker's connection is opened before the window, as a warm client pool would be.
	conns := make([]*conn, cfg.Concurrency)
	for w := range conns {
		if conns[w], err = newConn(ctx, base); err == nil {
			err = conns[w].dial()
		}
		if err != nil {
			return Result{}, fmt.Errorf("connecting to %s: %w", base, err)
		}
		defer conns[w].Close()
	}
	var mu sync.Mutex
	var lat []time.Duration
	errs := 0
	firstErr := ""
	exhausted := false
	if cfg.OnStart != nil {
		cfg.OnStart()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < cfg.Concurrency; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			pool := pools[w]
			local := make([]time.Duration, 0, 4096)
			lerrs, lfirst, lexhausted := 0, "", false
			for n := 0; ctx.Err() == nil; n++ {
				if n == len(pool) {
					if !cycle {
						lexhausted = true
						break
					}
					n = 0
				}
				t0 := time.Now()
				err := conns[w].send(pool[n])
				if ctx.Err() != nil {
					break
				}
				if err != nil {
					lerrs++
					if lfirst == "" {
						lfirst = err.Error()
					}
					continue
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, local...)
			errs += lerrs
			exhausted = exhausted || lexhausted
			if firstErr == "" {
				firstErr = lfirst
			}
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	if cfg.OnEnd != nil {
		cfg.OnEnd()
	}
	slices.Sort(lat)
	r := Result{Op: cfg.Op, Concurrency: cfg.Concurrency, Duration: elapsed, Seconds: elapsed.Seconds(),
		Requests: len(lat), Errors: errs, FirstError: firstErr, Presigned: total, Exhausted: exhausted, Floor: floor}
	r.RPS = float64(len(lat)) / elapsed.Seconds()
	r.P50, r.P99 = pct(lat, 0.50), pct(lat, 0.99)
	r.P50ms, r.P99ms = ms(r.P50), ms(r.P99)
	r.FsyncP50, r.FsyncP50ms = fsyncP50, ms(fsyncP50)
	if floor != nil {
		after, err := MeasureFloor(parent, cfg.Curve, fd)
		if err != nil {
			return Result{}, err
		}
		pick := func(f Floor) float64 {
			if cfg.Op == "sign_raw_payload" || cfg.Op == "transit_sign" {
				return f.VerifySignPerSecond
			}
			return f.VerifyPerSecond
		}
		before := pick(*floor)
		floor.VerifyPerSecond = (floor.VerifyPerSecond + after.VerifyPerSecond) / 2
		floor.VerifySignPerSecond = (floor.VerifySignPerSecond + after.VerifySignPerSecond) / 2
		if f := pick(*floor); f > 0 {
			r.Ratio = r.RPS / f
			r.FloorDrift = math.Abs(pick(after)-before) / f
		}
	}
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

func newStamper(c *Credentials) (stamp.Stamper, error) {
	switch c.Curve {
	case "", string(stamp.CurveP256):
		return stamp.NewP256Stamper(c.APIPrivateKey)
	case string(stamp.CurveSecp256k1):
		return stamp.NewSecp256k1Stamper(c.APIPrivateKey)
	case string(stamp.CurveEd25519):
		return stamp.NewEd25519Stamper(c.APIPrivateKey)
	}
	return nil, fmt.Errorf("unknown curve %q", c.Curve)
}

var runID = func() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

// tokenHeader "stamps" a transit request with its Vault token header.
type tokenHeader string

func (t tokenHeader) Stamp([]byte) (string, string, error) { return "X-Vault-Token", string(t), nil }

func body(cfg Config, worker, n int) (path string, b []byte) {
	if cfg.Op == "transit_sign" { // a fresh SHA-256 digest, signed as it is (prehashed)
		var d [32]byte
		_, _ = rand.Read(d[:])
		return "/v1/transit/sign/" + url.PathEscape(cfg.TransitKey) + "/sha2-256",
			[]byte(`{"input":"` + base64.StdEncoding.EncodeToString(d[:]) + `","prehashed":true}`)
	}
	org := cfg.Creds.OrganizationID
	ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
	switch cfg.Op {
	case "whoami":
		return "/public/v1/query/whoami", []byte(`{"organizationId":"` + org + `"}`)
	case "create_user_tag":
		name := fmt.Sprintf("bench-%s-%d-%d", runID, worker, n)
		return "/public/v1/submit/create_user_tag", []byte(
			`{"type":"ACTIVITY_TYPE_CREATE_USER_TAG","timestampMs":"` + ts +
				`","organizationId":"` + org + `","parameters":{"userTagName":"` + name + `","userIds":[]}}`,
		)
	case "create_sub_organization": // with one root user and one Ethereum wallet (a new mnemonic each)
		name := fmt.Sprintf("bench-%s-%d-%d", runID, worker, n)
		return "/public/v1/submit/create_sub_organization", []byte(
			`{"type":"ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7","timestampMs":"` + ts +
				`","organizationId":"` + org + `","parameters":{"subOrganizationName":"` + name + `","rootQuorumThreshold":1,` +
				`"rootUsers":[{"userName":"root","apiKeys":[],"authenticators":[],"oauthProviders":[]}],` +
				`"wallet":{"walletName":"main","accounts":[{"curve":"CURVE_SECP256K1","pathFormat":"PATH_FORMAT_BIP32","path":"m/44'/60'/0'/0/0","addressFormat":"ADDRESS_FORMAT_ETHEREUM"}]}}}`,
		)
	default: // sign_raw_payload: a distinct 32-byte payload each time
		var d [32]byte
		_, _ = rand.Read(d[:])
		hashFn := "HASH_FUNCTION_NO_OP"
		if cfg.Curve == "ed25519" {
			hashFn = "HASH_FUNCTION_NOT_APPLICABLE"
		}
		return "/public/v1/submit/sign_raw_payload", []byte(
			`{"type":"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2","timestampMs":"` + ts +
				`","organizationId":"` + org + `","parameters":{"signWith":"` + cfg.SignWith + `","payload":"` + hex.EncodeToString(d[:]) +
				`","encoding":"PAYLOAD_ENCODING_HEXADECIMAL","hashFunction":"` + hashFn + `"}}`,
		)
	}
}

// createWallet makes a wallet with one account on cfg.Curve and returns its address.
func createWallet(ctx context.Context, client *http.Client, base string, st stamp.Stamper, cfg Config) (string, error) {
	account := `{"curve":"CURVE_SECP256K1","pathFormat":"PATH_FORMAT_BIP32","path":"m/44'/60'/0'/0/0","addressFormat":"ADDRESS_FORMAT_ETHEREUM"}`
	if cfg.Curve == "ed25519" {
		account = `{"curve":"CURVE_ED25519","pathFormat":"PATH_FORMAT_BIP32","path":"m/44'/501'/0'/0'","addressFormat":"ADDRESS_FORMAT_SOLANA"}`
	}
	b := []byte(
		`{"type":"ACTIVITY_TYPE_CREATE_WALLET","timestampMs":"` + strconv.FormatInt(time.Now().UnixMilli(), 10) +
			`","organizationId":"` + cfg.Creds.OrganizationID + `","parameters":{"walletName":"bench-` + runID + `-` + cfg.Curve + `","accounts":[` + account + `]}}`,
	)
	out, err := post(ctx, client, base, "/public/v1/submit/create_wallet", b, st)
	if err != nil {
		return "", err
	}
	var r struct {
		Activity struct {
			Result struct {
				CreateWalletResult struct {
					Addresses []string `json:"addresses"`
				} `json:"createWalletResult"`
			} `json:"result"`
		} `json:"activity"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Activity.Result.CreateWalletResult.Addresses) != 1 {
		return "", fmt.Errorf("unexpected create_wallet answer: %s", truncate(out, 300))
	}
	return r.Activity.Result.CreateWalletResult.Addresses[0], nil
}

func do(
	ctx context.Context,
	client *http.Client,
	base string,
	st stamp.Stamper,
	cfg Config,
	worker, n int,
) ([]byte, error) {
	path, b := body(cfg, worker, n)
	return post(ctx, client, base, path, b, st)
}

// stamped is a request prepared before the measured window.
type stamped struct {
	path, header, value string
	body                []byte
}

// presign prepares cfg's requests for every worker, on every core, and returns them per
// worker with their total.
func presign(cfg Config, st stamp.Stamper) ([][]stamped, int, error) {
	total := cfg.Presign
	if total <= 0 {
		total = int(cfg.Duration.Seconds()*12000) + cfg.Concurrency
		if cfg.Op == "whoami" {
			total = 4096
		}
	}
	per := max(total/cfg.Concurrency, 1)
	pools := make([][]stamped, cfg.Concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range next {
				pool := make([]stamped, per)
				for n := range pool {
					path, b := body(cfg, w, n+1)
					name, value, err := st.Stamp(b)
					if err != nil {
						mu.Lock()
						firstErr = err
						mu.Unlock()
						break
					}
					pool[n] = stamped{path: path, header: name, value: value, body: b}
				}
				pools[w] = pool
			}
		}()
	}
	for w := range cfg.Concurrency {
		next <- w
	}
	close(next)
	wg.Wait()
	return pools, per * cfg.Concurrency, firstErr
}

func post(ctx context.Context, client *http.Client, base, path string, b []byte, st stamp.Stamper) ([]byte, error) {
	name, value, err := st.Stamp(b)
	if err != nil {
		return nil, err
	}
	return roundTrip(ctx, client, base+path, b, name, value)
}

func roundTrip(ctx context.Context, client *http.Client, url string, b []byte, name, value string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(name, value)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, truncate(out, 300))
	}
	return out, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// policySigner creates a non-root user with a fresh P-256 key and cfg.Policies policies, the last
// of which allows that user to sign with cfg.SignWith's wallet; the others do not match. It
// returns the user's stamper.
func policySigner(
	ctx context.Context,
	client *http.Client,
	base string,
	root stamp.Stamper,
	cfg Config,
) (stamp.Stamper, error) {
	priv, pub, err := stamp.GenerateKey(stamp.CurveP256)
	if err != nil {
		return nil, err
	}
	org := cfg.Creds.OrganizationID
	ts := func() string { return strconv.FormatInt(time.Now().UnixMilli(), 10) }
	out, err := post(
		ctx,
		client,
		base,
		"/public/v1/submit/create_users",
		[]byte(`{"type":"ACTIVITY_TYPE_CREATE_USERS_V4","timestampMs":"`+ts()+
			`","organizationId":"`+org+`","parameters":{"users":[{"userName":"bench-signer-`+runID+`","apiKeys":[{"apiKeyName":"bench","publicKey":"`+pub+
			`","curveType":"API_KEY_CURVE_P256"}],"authenticators":[],"oauthProviders":[],"userTags":[]}]}}`),
		root,
	)
	if err != nil {
		return nil, err
	}
	var u struct {
		Activity struct {
			Result struct {
				CreateUsersResult struct {
					UserIDs []string `json:"userIds"`
				} `json:"createUsersResult"`
			} `json:"result"`
		} `json:"activity"`
	}
	if err := json.Unmarshal(out, &u); err != nil || len(u.Activity.Result.CreateUsersResult.UserIDs) != 1 {
		return nil, fmt.Errorf("unexpected create_users answer: %s", truncate(out, 300))
	}
	userID := u.Activity.Result.CreateUsersResult.UserIDs[0]
	for i := 0; i < cfg.Policies; i++ {
		cond := fmt.Sprintf(`activity.action == 'SIGN' && wallet_account.address == '0x%040d'`, i)
		if i == cfg.Policies-1 {
			cond = `activity.action == 'SIGN' && wallet_account.address == '` + cfg.SignWith + `'`
		}
		body, _ := json.Marshal(
			map[string]any{"type": "ACTIVITY_TYPE_CREATE_POLICY_V3", "timestampMs": ts(), "organizationId": org,
				"parameters": map[string]any{
					"policyName": fmt.Sprintf("bench-%s-%d", runID, i),
					"effect":     "EFFECT_ALLOW",
					"notes":      "latchkey bench",
					"consensus":  "approvers.any(user, user.id == '" + userID + "')",
					"condition":  cond,
				}},
		)
		if _, err := post(ctx, client, base, "/public/v1/submit/create_policy", body, root); err != nil {
			return nil, err
		}
	}
	return stamp.NewP256Stamper(priv)
}

// seed creates cfg.Seed sub-organizations (a root user with an API key, an Ethereum wallet) with
// cfg.Concurrency workers.
func seed(ctx context.Context, client *http.Client, base string, st stamp.Stamper, cfg Config) error {
	next := make(chan int)
	errs := make(chan error, cfg.Concurrency)
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				_, pub, err := stamp.GenerateKey(stamp.CurveP256)
				if err == nil {
					b := []byte(
						`{"type":"ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7","timestampMs":"` + strconv.FormatInt(
							time.Now().UnixMilli(),
							10,
						) +
							`","organizationId":"` + cfg.Creds.OrganizationID + `","parameters":{"subOrganizationName":"seed-` + runID + `-` + strconv.Itoa(
							i,
						) +
							`","rootQuorumThreshold":1,"rootUsers":[{"userName":"root","apiKeys":[{"apiKeyName":"k","publicKey":"` + pub +
							`","curveType":"API_KEY_CURVE_P256"}],"authenticators":[],"oauthProviders":[]}],` +
							`"wallet":{"walletName":"main","accounts":[{"curve":"CURVE_SECP256K1","pathFormat":"PATH_FORMAT_BIP32","path":"m/44'/60'/0'/0/0","addressFormat":"ADDRESS_FORMAT_ETHEREUM"}]}}}`,
					)
					_, err = post(ctx, client, base, "/public/v1/submit/create_sub_organization", b, st)
				}
				if err != nil {
					errs <- err
					for range next {
					}
					return
				}
			}
		}()
	}
	for i := range cfg.Seed {
		select {
		case next <- i:
		case err := <-errs:
			close(next)
			wg.Wait()
			return err
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}
