package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/internal/api"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/clientaddr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/dashboard"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/metrics"
	"github.com/latchkey/latchkey/internal/stamp"
	"github.com/latchkey/latchkey/internal/store"
)

// The seal endpoints, on the API listener (the shape OpenBao and Vault operators know).
const (
	// UnsealPath takes one share: PUT or POST {"key": "<share>"} ({"reset": true} forgets the
	// shares given so far). Unauthenticated: the share is the credential.
	UnsealPath = "/v1/sys/unseal"
	// SealStatusPath answers GET with the seal status.
	SealStatusPath = "/v1/sys/seal-status"
	// SealPath seals a running server: PUT or POST, stamped by an API key of a root user of a
	// top-level organization, body {"organizationId": …, "timestampMs": …}.
	SealPath = "/v1/sys/seal"
)

// Audit actions of the seal.
const (
	ActionUnsealed = "unsealed"
	ActionSealed   = "sealed"
)

// Body limits of the seal endpoints, read before anything else (docs/limits.md §9).
const (
	// MaxUnsealBodyBytes bounds an unseal request, {"key": "<share>"}: a share is about 100
	// bytes of text.
	MaxUnsealBodyBytes = 4 << 10
	// MaxSealBodyBytes bounds a seal request, a stamped {"organizationId", "timestampMs"} of
	// about 100 bytes.
	MaxSealBodyBytes = 64 << 10
)

const (
	// unsealFailures wrong shares from one client address in unsealWindow, and it waits.
	unsealFailures = 5
	unsealWindow   = 10 * time.Minute
	// maxUnsealClients bounds the addresses whose wrong shares are counted one by one; beyond
	// it (a flood from many addresses, an IPv6 prefix), new addresses share one count,
	// overflowClient. The expired counts are swept when the table is full, at most once per
	// unsealSweepEvery, so a flood costs each request no scan of the table.
	maxUnsealClients = 10000
	overflowClient   = "(addresses past the table of counts)"
	unsealSweepEvery = time.Second
	// sealSkew is how far a seal request's timestampMs may be from now (a replayed request
	// seals again only within it).
	sealSkew = 5 * time.Minute
)

// SealStatus is what the seal endpoints answer.
type SealStatus struct {
	Sealed    bool `json:"sealed"`
	Threshold int  `json:"threshold"`
	Shares    int  `json:"shares"`
	Progress  int  `json:"progress"`
}

// Sealed is a --seal shamir server: its listeners serve from the start, every store-backed call
// answers 503 until share holders give Threshold shares; then the server opens as Open does,
// and its handlers take over. Seal returns it to the sealed state.
type Sealed struct {
	cfg     Config
	seal    *custody.ShamirSeal
	tls     map[string]*tlsListener
	lock    *os.File
	metrics *metrics.Metrics
	log     *slog.Logger
	drain   time.Duration

	// mu serialises the transitions (unseal, seal) and guards the unsealer and the failures.
	mu       sync.Mutex
	unsealer *custody.ShamirUnsealer
	failures map[string][]time.Time
	swept    time.Time    // when failures was last swept
	progress atomic.Int32 // the unsealer's progress, read without mu
	live     atomic.Pointer[liveServer]
	draining atomic.Bool
	listenerURLs
}

// liveServer is an unsealed server with the count of the requests it is serving.
type liveServer struct {
	srv      *Server
	handlers map[string]http.Handler
	stop     func()
	mu       sync.Mutex
	n        int
	closing  bool
	idle     chan struct{}
}

func (l *liveServer) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return false
	}
	l.n++
	return true
}

func (l *liveServer) leave() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n--; l.n == 0 && l.closing {
		close(l.idle)
	}
}

// waitIdle refuses new requests and waits (up to d) for those in flight.
func (l *liveServer) waitIdle(d time.Duration) bool {
	l.mu.Lock()
	l.closing = true
	if l.n == 0 {
		close(l.idle)
	}
	l.mu.Unlock()
	select {
	case <-l.idle:
		return true
	case <-time.After(d):
		return false
	}
}

// OpenSealed checks a --seal shamir deployment (its seal record, without the master key) and
// returns it sealed. With cfg.Exclusive it holds the data directory's lock.
func OpenSealed(ctx context.Context, cfg Config) (*Sealed, error) {
	cfg = cfg.withDefaults()
	if cfg.Seal != custody.SealShamir {
		return nil, fmt.Errorf("--seal %s does not start sealed", cfg.Seal)
	}
	if cfg.KeyShares != 0 || cfg.KeyThreshold != 0 {
		return nil, errors.New(
			"--key-shares and --key-threshold are given to latchkey init, which splits the master key; serve takes the split from the seal record",
		)
	}
	tlsListeners, lock, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	z := &Sealed{
		cfg:      cfg,
		tls:      tlsListeners,
		lock:     lock,
		metrics:  metrics.New(),
		log:      cfg.Log,
		failures: map[string][]time.Time{},
	}
	st, err := openStore(ctx, cfg, z.metrics)
	if err == nil {
		if err = checkDatabase(ctx, cfg, st); err == nil {
			z.seal, err = shamirSeal(ctx, cfg, st)
		}
		st.Close()
	}
	if err != nil {
		if z.lock != nil {
			z.lock.Close()
		}
		return nil, err
	}
	z.unsealer = custody.NewShamirUnsealer(z.seal)
	// The process's server opens with the master key rebuilt; it shares the lock and metrics.
	z.cfg.Exclusive, z.cfg.metrics = false, z.metrics
	return z, nil
}

// shamirSeal reads the deployment's Shamir seal, refusing a deployment sealed otherwise.
func shamirSeal(ctx context.Context, cfg Config, st store.Store) (*custody.ShamirSeal, error) {
	rec, err := custody.LoadSealRecord(ctx, st)
	if err != nil && !errors.Is(err, custody.ErrNoSealRecord) {
		return nil, err
	}
	if rec == nil {
		exists, err := custody.KeyringExists(ctx, st)
		if err != nil {
			return nil, err
		}
		if exists {
			return nil, errors.New(
				"this deployment's master key is a file (it has no shamir seal record): --seal shamir applies to new deployments (latchkey init --seal shamir); see docs/operations.md, \"Production custody\"",
			)
		}
		return nil, errors.New(
			"this deployment has no shamir seal record: make it with latchkey init --seal shamir --key-shares N --key-threshold K",
		)
	}
	if rec.Type != custody.SealShamir {
		return nil, fmt.Errorf(
			"this deployment's seal is %q, not shamir: start it with --seal %s and that seal's flags",
			rec.Type,
			rec.Type,
		)
	}
	if rec.Shamir == nil || custody.CheckShamir(rec.Shamir.Shares, rec.Shamir.Threshold) != nil ||
		len(rec.Shamir.ShareTags) != rec.Shamir.Shares {
		return nil, errors.New("the shamir seal record is malformed")
	}
	return rec.Shamir, nil
}

// unsealShamir is unseal for --seal shamir: the master key rebuilt from shares (Config.unsealed)
// checked against the seal record, or, for latchkey init of a new deployment, a new master key
// split into shares (given to Config.NewShares) and its seal record stored.
func unsealShamir(
	ctx context.Context,
	cfg Config,
	st store.Store,
	rec *custody.SealRecord,
) (*custody.MasterKey, error) {
	if cfg.fileSeal() && rec.Shamir != nil {
		return nil, fmt.Errorf(
			"this deployment's master key is split into %d shares (any %d unseal it): start it with latchkey serve --seal shamir and unseal it with latchkey unseal (docs/operations.md, \"Production custody\")",
			rec.Shamir.Shares,
			rec.Shamir.Threshold,
		)
	}
	if rec != nil || cfg.KeyShares == 0 {
		seal, err := shamirSeal(ctx, cfg, st)
		if err != nil {
			return nil, err
		}
		if cfg.KeyShares != 0 {
			return nil, errors.New(
				"this deployment's master key is already split into shares: latchkey init --seal shamir makes a new deployment",
			)
		}
		if cfg.unsealed == nil {
			return nil, fmt.Errorf(
				"this deployment's master key is split into %d shares (any %d unseal it): only a served, unsealed Latchkey has it; "+
					"start latchkey serve --seal shamir and unseal it with latchkey unseal",
				seal.Shares,
				seal.Threshold,
			)
		}
		if !seal.Check(cfg.unsealed) {
			return nil, custody.ErrWrongMasterKey
		}
		return cfg.unsealed, nil
	}
	exists, err := custody.KeyringExists(ctx, st)
	if err != nil {
		return nil, err
	}
	if exists {
		return nil, errors.New(
			"this deployment's master key is a file (it has no shamir seal record): --seal shamir applies to new deployments",
		)
	}
	if cfg.NewShares == nil {
		return nil, errors.New("a new --seal shamir deployment is made by latchkey init, which shows its shares")
	}
	m, err := custody.NewMasterKey()
	if err != nil {
		return nil, err
	}
	seal, shares, err := custody.SplitMasterKey(m, cfg.KeyShares, cfg.KeyThreshold)
	if err != nil {
		return nil, err
	}
	defer shares.Wipe()
	if err := cfg.NewShares(shares); err != nil {
		return nil, err
	}
	if err := custody.SaveSealRecord(ctx, st, &custody.SealRecord{Type: custody.SealShamir, Shamir: seal, Created: time.Now().UTC()}); err != nil {
		return nil, err
	}
	return m, nil
}

// Status is the seal status.
func (z *Sealed) Status() SealStatus {
	return SealStatus{
		Sealed:    z.live.Load() == nil,
		Threshold: z.seal.Threshold,
		Shares:    z.seal.Shares,
		Progress:  int(z.progress.Load()),
	}
}

// Server is the unsealed server (nil while sealed).
func (z *Sealed) Server() *Server {
	if l := z.live.Load(); l != nil {
		return l.srv
	}
	return nil
}

// Run serves the listeners until ctx ends (sealed until unsealed), then drains in-flight
// requests (up to drain) and closes the unsealed server, if any.
func (z *Sealed) Run(ctx context.Context, drain time.Duration, ready func(apiAddr string)) error {
	z.drain = drain
	defer func() {
		z.mu.Lock()
		z.sealLocked()
		z.mu.Unlock()
		if z.lock != nil {
			z.lock.Close()
		}
	}()
	l := listenerSet{cfg: z.cfg, tls: z.tls, log: z.log, metrics: z.metrics, bound: z.bound,
		handlers: map[string]http.Handler{
			"api":       z.front("api"),
			"proxy":     z.front("proxy"),
			"dashboard": z.front("dashboard"),
			"frames":    z.front("frames"),
		},
		draining: func() {
			z.draining.Store(true)
			if l := z.live.Load(); l != nil {
				l.srv.API.Drain()
			}
		}}
	return l.run(ctx, drain, func(apiAddr string) {
		z.log.Warn("latchkey is SEALED: every API call answers 503 until share holders unseal it (latchkey unseal)",
			"threshold", z.seal.Threshold, "shares", z.seal.Shares)
		if ready != nil {
			ready(apiAddr)
		}
	})
}

// front is a listener's handler: the seal endpoints, then the unsealed server's handler, or
// the sealed answer.
func (z *Sealed) front(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name == "api" {
			switch strings.TrimRight(r.URL.Path, "/") {
			case UnsealPath:
				z.unsealHTTP(w, r)
				return
			case SealStatusPath:
				writeSealJSON(w, http.StatusOK, z.Status())
				return
			case SealPath:
				z.sealHTTP(w, r)
				return
			}
		}
		if l := z.live.Load(); l != nil && l.enter() {
			defer l.leave()
			l.handlers[name].ServeHTTP(w, r)
			return
		}
		z.sealedAnswer(w, r, name)
	})
}

func (z *Sealed) sealedError() *apierr.Error {
	st := z.Status()
	return &apierr.Error{
		Code: apierr.Unavailable,
		Message: fmt.Sprintf("Latchkey is sealed: unseal it with latchkey unseal (%d of %d shares given: %d)",
			st.Threshold, st.Shares, st.Progress),
	}
}

// sealedAnswer: health says sealed (liveness says the process runs), the dashboard shows its
// sealed page, everything else is the sealed 503.
func (z *Sealed) sealedAnswer(w http.ResponseWriter, r *http.Request, name string) {
	if name == "api" {
		api.SetCORS(w.Header())
	}
	switch {
	case name == "api" && r.Method == http.MethodOptions:
		w.WriteHeader(http.StatusNoContent)
	case name == "api" && r.URL.Path == "/livez":
		writeSealJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	case name == "api" && (r.URL.Path == "/healthz" || r.URL.Path == "/readyz"):
		status := "sealed"
		if z.draining.Load() {
			status = "draining"
		}
		st := z.Status()
		writeSealJSON(
			w,
			http.StatusServiceUnavailable,
			map[string]any{
				"status":    status,
				"sealed":    true,
				"threshold": st.Threshold,
				"shares":    st.Shares,
				"progress":  st.Progress,
				"version":   Version,
			},
		)
	case name == "dashboard":
		if !dashboard.SealedPage(w, r, z.Status().dashboard(), z.dashboardUnseal) {
			apierr.Render(w, z.sealedError())
		}
	default:
		apierr.Render(w, z.sealedError())
	}
}

func (st SealStatus) dashboard() dashboard.SealStatus {
	return dashboard.SealStatus{Sealed: st.Sealed, Threshold: st.Threshold, Shares: st.Shares, Progress: st.Progress}
}

// dashboardUnseal is the dashboard's share form.
func (z *Sealed) dashboardUnseal(r *http.Request, share []byte) (dashboard.SealStatus, error) {
	st, err := z.Unseal(r.Context(), z.client(r), share)
	return st.dashboard(), err
}

func writeSealJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func (z *Sealed) client(r *http.Request) string {
	if a, ok := clientaddr.From(r, z.cfg.TrustedProxies); ok {
		return a.String()
	}
	return "unknown"
}

// putOrPost refuses (and reports false for) a method other than PUT and POST.
func putOrPost(w http.ResponseWriter, r *http.Request, path string) bool {
	if r.Method == http.MethodPut || r.Method == http.MethodPost {
		return true
	}
	w.Header().Set("Allow", "PUT, POST")
	apierr.Render(w, apierr.Invalid("", "method %s not allowed: %s takes PUT or POST", r.Method, path))
	return false
}

func (z *Sealed) unsealHTTP(w http.ResponseWriter, r *http.Request) {
	if !putOrPost(w, r, UnsealPath) {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxUnsealBodyBytes))
	defer clear(body)
	var in struct {
		Key   json.RawMessage `json:"key"`
		Reset bool            `json:"reset"`
	}
	if err != nil || json.Unmarshal(body, &in) != nil {
		apierr.Render(
			w,
			apierr.Invalid("body", `want {"key": "<share>"} (at most %d bytes of JSON)`, MaxUnsealBodyBytes),
		)
		return
	}
	defer clear(in.Key)
	if in.Reset {
		z.mu.Lock()
		z.unsealer.Reset()
		z.progress.Store(0)
		z.mu.Unlock()
		writeSealJSON(w, http.StatusOK, z.Status())
		return
	}
	key := in.Key
	if len(key) < 2 || key[0] != '"' || key[len(key)-1] != '"' {
		apierr.Render(w, apierr.Required("key"))
		return
	}
	st, err := z.Unseal(r.Context(), z.client(r), key[1:len(key)-1])
	if err != nil {
		apierr.Render(w, err)
		return
	}
	writeSealJSON(w, http.StatusOK, st)
}

// Unseal takes one share (the caller wipes it) from client; with the last one needed it opens
// the server. Its errors are *apierr.Error: a wrong share (400, named, progress reset), too
// many wrong shares from client (429), a failed opening (503).
func (z *Sealed) Unseal(ctx context.Context, client string, share []byte) (SealStatus, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.live.Load() != nil {
		return z.Status(), nil
	}
	now := time.Now()
	key, from := z.failureKey(client, now), client
	if key == overflowClient {
		from = client + " and other addresses"
	}
	recent := z.failures[key][:0]
	for _, t := range z.failures[key] {
		if now.Sub(t) < unsealWindow {
			recent = append(recent, t)
		}
	}
	z.failures[key] = recent
	if len(recent) == 0 {
		delete(z.failures, key)
	}
	if len(recent) >= unsealFailures {
		wait := unsealWindow - now.Sub(recent[0])
		return z.Status(), apierr.New(
			apierr.ResourceExhausted,
			"",
			"too many wrong unseal shares from %s: try again in %d s",
			from,
			int(wait.Seconds())+1,
		)
	}
	m, err := z.unsealer.Add(share)
	z.progress.Store(int32(z.unsealer.Progress()))
	if err != nil {
		var se *custody.ShareError
		if !errors.As(err, &se) || !se.Repeated {
			z.failures[key] = append(z.failures[key], now)
			z.log.Warn(
				"unseal: a wrong share was refused; the unseal progress is reset",
				"share",
				shareName(se),
				"client",
				client,
				"reason",
				reason(se, err),
			)
			return z.Status(), apierr.Invalid(
				"key",
				"%v; unseal progress reset: give %d shares again",
				err,
				z.seal.Threshold,
			)
		}
		return z.Status(), apierr.Invalid("key", "%v", err)
	}
	if m == nil {
		z.log.Info(
			"unseal: a share was accepted",
			"progress",
			z.unsealer.Progress(),
			"threshold",
			z.seal.Threshold,
			"client",
			client,
		)
		return z.Status(), nil
	}
	if err := z.openLocked(ctx, m, client); err != nil {
		m.Wipe()
		z.log.Error("unseal: the master key is rebuilt but the server did not open; it stays sealed", "err", err)
		return z.Status(), &apierr.Error{
			Code:    apierr.Unavailable,
			Message: "the shares rebuilt the master key but Latchkey could not open (see its log); it stays sealed: give the shares again",
			Cause:   err,
		}
	}
	return z.Status(), nil
}

// failureKey is the key client's wrong shares are counted under: its address, or, when
// maxUnsealClients other addresses are counted, overflowClient. z.mu is held.
func (z *Sealed) failureKey(client string, now time.Time) string {
	if _, counted := z.failures[client]; counted || len(z.failures) < maxUnsealClients {
		return client
	}
	if now.Sub(z.swept) >= unsealSweepEvery {
		// Forget the addresses whose failures left the window; at most once a second, so the
		// cost of a sweep is spread over the requests of a flood.
		z.swept = now
		for c, ts := range z.failures {
			if now.Sub(ts[len(ts)-1]) >= unsealWindow {
				delete(z.failures, c)
			}
		}
		if len(z.failures) < maxUnsealClients {
			return client
		}
	}
	return overflowClient
}

func shareName(se *custody.ShareError) int {
	if se == nil {
		return 0
	}
	return se.X
}

func reason(se *custody.ShareError, err error) string {
	if se != nil {
		return se.Reason
	}
	return err.Error()
}

// openLocked opens the store-backed server with the rebuilt master key as Open does, and lets
// it serve. z.mu is held.
func (z *Sealed) openLocked(ctx context.Context, m *custody.MasterKey, client string) error {
	cfg := z.cfg
	cfg.unsealed = m
	srv, err := open(context.WithoutCancel(ctx), cfg)
	if err != nil {
		return err
	}
	if err := srv.chain.CheckDelegates(ctx); err != nil {
		srv.Close()
		return err
	}
	srv.tls = z.tls
	srv.listenerURLs = z.listenerURLs
	l := &liveServer{srv: srv, handlers: srv.handlers(), idle: make(chan struct{})}
	l.stop = srv.startWorkers()
	z.live.Store(l)
	z.progress.Store(0)
	d, _ := json.Marshal(
		map[string]any{"threshold": z.seal.Threshold, "shares": z.seal.Shares, "lastShareFrom": client},
	)
	if err := dashboard.WriteAudit(ctx, srv.Store, dashboard.Audit{Operator: "(share holders)", Action: ActionUnsealed, Detail: string(d)}); err != nil {
		z.log.Error("unseal: the audit record was not written", "err", err)
	}
	z.log.Warn("latchkey is UNSEALED", "threshold", z.seal.Threshold, "client", client)
	return nil
}

// Seal returns a running server to the sealed state: new requests answer 503 at once, those in
// flight finish (up to the drain timeout), the workers stop, the store closes, and the master
// key and the keyring's data keys are wiped from memory. who names the caller in the audit
// log.
func (z *Sealed) Seal(ctx context.Context, who, detail string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	l := z.live.Load()
	if l == nil {
		return
	}
	if err := dashboard.WriteAudit(ctx, l.srv.Store, dashboard.Audit{Operator: who, Action: ActionSealed, Detail: detail}); err != nil {
		z.log.Error("seal: the audit record was not written", "err", err)
	}
	z.sealLocked()
	z.log.Warn("latchkey is SEALED by request", "by", who)
}

func (z *Sealed) sealLocked() {
	l := z.live.Swap(nil)
	if l == nil {
		return
	}
	if !l.waitIdle(z.drain) {
		z.log.Warn("seal: requests still in flight after the drain timeout are cut off")
	}
	l.srv.API.Drain()
	l.stop()
	if err := l.srv.Close(); err != nil {
		z.log.Warn("seal: closing the store", "err", err)
	}
	l.srv.Keyring.Forget()
	z.unsealer.Reset()
	z.progress.Store(0)
}

// sealHTTP authenticates a seal request (a stamp of an API key of a root user of a top-level
// organization, from an address its allowlists allow, with a fresh timestampMs) and seals.
func (z *Sealed) sealHTTP(w http.ResponseWriter, r *http.Request) {
	if !putOrPost(w, r, SealPath) {
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxSealBodyBytes))
	if err != nil {
		apierr.Render(
			w,
			apierr.Invalid("body", "could not read the request body (at most %d bytes)", MaxSealBodyBytes),
		)
		return
	}
	l := z.live.Load()
	if l == nil || !l.enter() {
		writeSealJSON(w, http.StatusOK, z.Status()) // already sealed
		return
	}
	caller, err := z.authorizeSeal(r, l.srv, raw)
	l.leave()
	if err != nil {
		z.log.Warn("seal: refused", "client", z.client(r), "err", err)
		apierr.Render(w, err)
		return
	}
	who := fmt.Sprintf(
		"user %s (%s) of organization %s, API key %s",
		caller.User.ID,
		caller.User.Name,
		caller.Org.ID,
		caller.PublicKey,
	)
	d, _ := json.Marshal(map[string]string{"client": z.client(r)})
	z.Seal(r.Context(), who, string(d))
	writeSealJSON(w, http.StatusOK, z.Status())
}

func (z *Sealed) authorizeSeal(r *http.Request, srv *Server, raw []byte) (*directory.Caller, error) {
	v := r.Header.Get("X-Stamp")
	if v == "" {
		return nil, apierr.Unauth(
			"MISSING_STAMP",
			"sealing needs a request stamped (X-Stamp) by an API key of a root user of a top-level organization",
		)
	}
	p, err := stamp.VerifyAPIKey(v, raw)
	if err != nil {
		return nil, apierr.Unauth("INVALID_STAMP", "invalid stamp: %v", err)
	}
	var in struct {
		OrganizationID string          `json:"organizationId"`
		TimestampMs    json.RawMessage `json:"timestampMs"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, apierr.Invalid("body", "malformed JSON: %v", err)
	}
	if in.OrganizationID == "" {
		return nil, apierr.Required("organizationId")
	}
	ms, err := strconv.ParseInt(strings.Trim(string(in.TimestampMs), `"`), 10, 64)
	if err != nil {
		return nil, apierr.Required("timestampMs")
	}
	if d := time.Since(time.UnixMilli(ms)); d > sealSkew || d < -sealSkew {
		return nil, apierr.Invalid("timestampMs", "must be within %v of the server's clock", sealSkew)
	}
	var caller *directory.Caller
	err = srv.Store.View(r.Context(), func(rd store.Reader) error {
		var err error
		caller, err = directory.Resolver{
			Now: func() time.Time { return time.Now().UTC() },
		}.ResolveAPIKey(
			r.Context(),
			rd,
			in.OrganizationID,
			p.PublicKey,
			string(p.Curve),
		)
		return err
	})
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, &apierr.Error{Code: apierr.Unavailable, Message: "the store is unavailable; try again", Cause: err}
	}
	if caller.ParentAccess || caller.Target.ParentID != "" || !caller.IsRoot() {
		return nil, apierr.Denied(
			"request not authorized: only a root user of a top-level organization can seal Latchkey",
		)
	}
	addr, known := clientaddr.From(r, z.cfg.TrustedProxies)
	for _, al := range []*directory.IPAllowlist{caller.Org.IPAllowlist, caller.KeyAllowlist} {
		if !al.Allows(addr, known) {
			return nil, apierr.New(
				apierr.PermissionDenied,
				"IP_NOT_ALLOWED",
				"request from %s is not allowed by the IP allowlist",
				addr,
			)
		}
	}
	return caller, nil
}

// OpenWithShares is Open for an operator command on a --seal shamir deployment: share is asked
// for shares (given the progress so far) until Threshold of them rebuild the master key; a
// wrong one ends it. share's buffers are wiped after use.
func OpenWithShares(ctx context.Context, cfg Config, share func(SealStatus) ([]byte, error)) (*Server, error) {
	cfg.Exclusive = false
	z, err := OpenSealed(ctx, cfg)
	if err != nil {
		return nil, err
	}
	for {
		b, err := share(z.Status())
		if err != nil {
			z.unsealer.Reset()
			return nil, err
		}
		m, err := z.unsealer.Add(b)
		clear(b)
		z.progress.Store(int32(z.unsealer.Progress()))
		if err != nil {
			z.unsealer.Reset()
			return nil, err
		}
		if m != nil {
			cfg.unsealed = m
			s, err := Open(ctx, cfg)
			if err != nil {
				m.Wipe()
			}
			return s, err
		}
	}
}

// shamirRewrap is a new master key split into shares for latchkey keyring rewrap --new-seal
// shamir, with its seal record.
type shamirRewrap struct {
	*custody.SealRecord
	m *custody.MasterKey
}

// splitForRewrap makes a new master key, splits it as to asks and hands the shares to
// to.NewShares (before the keyring is rewrapped: if that fails, the old key and shares stay).
func splitForRewrap(to RewrapTarget) (*shamirRewrap, error) {
	if to.MasterKeyFile != "" {
		return nil, errors.New(
			"--new-master-key-file is for a file seal; --new-seal shamir splits the new master key into shares",
		)
	}
	if to.NewShares == nil || to.KeyShares == 0 || to.KeyThreshold == 0 {
		return nil, errors.New(
			"--new-seal shamir needs --new-key-shares N and --new-key-threshold K: the new master key is split into N shares, any K of which unseal",
		)
	}
	m, err := custody.NewMasterKey()
	if err != nil {
		return nil, err
	}
	seal, shares, err := custody.SplitMasterKey(m, to.KeyShares, to.KeyThreshold)
	if err != nil {
		m.Wipe()
		return nil, err
	}
	defer shares.Wipe()
	if err := to.NewShares(shares); err != nil {
		m.Wipe()
		return nil, err
	}
	return &shamirRewrap{
		SealRecord: &custody.SealRecord{Type: custody.SealShamir, Shamir: seal, Created: time.Now().UTC()},
		m:          m,
	}, nil
}
