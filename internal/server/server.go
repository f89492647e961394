package server

import (
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/admission"
	"github.com/latchkey/latchkey/internal/api"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/authproxy"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/dashboard"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/frames"
	"github.com/latchkey/latchkey/internal/gasstation"
	"github.com/latchkey/latchkey/internal/hot"
	"github.com/latchkey/latchkey/internal/messages"
	"github.com/latchkey/latchkey/internal/metrics"
	"github.com/latchkey/latchkey/internal/notify"
	"github.com/latchkey/latchkey/internal/oidc"
	"github.com/latchkey/latchkey/internal/ops/activities"
	"github.com/latchkey/latchkey/internal/ops/allowlists"
	"github.com/latchkey/latchkey/internal/ops/chaindata"
	"github.com/latchkey/latchkey/internal/ops/credentials"
	"github.com/latchkey/latchkey/internal/ops/mfa"
	"github.com/latchkey/latchkey/internal/ops/oauth"
	"github.com/latchkey/latchkey/internal/ops/organizations"
	"github.com/latchkey/latchkey/internal/ops/otp"
	"github.com/latchkey/latchkey/internal/ops/policies"
	"github.com/latchkey/latchkey/internal/ops/profiles"
	"github.com/latchkey/latchkey/internal/ops/secrets"
	"github.com/latchkey/latchkey/internal/ops/tvc"
	"github.com/latchkey/latchkey/internal/ops/users"
	"github.com/latchkey/latchkey/internal/ops/wallets"
	"github.com/latchkey/latchkey/internal/stamp"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/sqlite"
	"github.com/latchkey/latchkey/internal/webhooks"
)

// Version is the build's version, set with -ldflags "-X .../server.Version=...".
var Version = "0.1.0-dev"

// Commit and BuildDate are set by scripts/build.sh (-ldflags -X); when they are not, BuildInfo
// falls back to what the Go toolchain recorded of the checkout (a go build or go install from a
// clone records its commit and the commit's date; go run records none).
var Commit, BuildDate string

// BuildInfo describes the build: version, commit, build date and Go version.
func BuildInfo() string {
	bi, _ := debug.ReadBuildInfo()
	return buildInfo(Commit, BuildDate, bi)
}

func buildInfo(commit, built string, bi *debug.BuildInfo) string {
	var parts []string
	if commit != "" || built != "" {
		// Stamped by the build script.
		parts = append(parts, "commit "+orUnknown(commit), "built "+orUnknown(built))
	} else {
		var revision, date string
		modified := false
		if bi != nil {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					revision = s.Value
				case "vcs.time":
					date = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
		}
		if revision == "" {
			parts = append(parts, "commit unknown: built without version control information (go run, or -buildvcs=false)")
		} else {
			parts = append(parts, "commit "+revision, "committed "+orUnknown(date))
			if modified {
				parts = append(parts, "with uncommitted changes")
			}
		}
	}
	return fmt.Sprintf("%s (%s, %s)", Version, strings.Join(parts, ", "), runtime.Version())
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// Config is the operator's configuration, validated once at start.
type Config struct {
	DataDir     string
	DatabaseURL string // postgres://... ; empty: SQLite in DataDir
	// RequireSyncStandby refuses writes (503) while the PostgreSQL primary has no synchronous
	// standby streaming (postgres.Options.RequireSyncStandby).
	RequireSyncStandby bool
	// StoreRetryFor bounds how long a request waits for a lost PostgreSQL to come back (a
	// failover) before it is answered 503 (postgres.Options.RetryFor; 0: its default, 30s).
	StoreRetryFor time.Duration
	MasterKeyFile string
	// Seal is where the master key comes from: custody.SealFile ("" too: MasterKeyFile or
	// LATCHKEY_MASTER_KEY) or custody.SealTransit (Transit unwraps the seal record).
	Seal    string
	Transit custody.Transit
	PKCS11  custody.PKCS11  // --seal pkcs11: an AES key on a PKCS#11 token wraps the master key
	AWSKMS  custody.AWSKMS  // --seal awskms: an AWS KMS key wraps the master key
	GCPKMS  custody.GCPKMS  // --seal gcpkms: a Cloud KMS key wraps the master key
	AzureKV custody.AzureKV // --seal azurekv: an Azure Key Vault key wraps the master key
	Dev     bool
	// MustExist refuses a data directory or database that holds no deployment yet (every
	// command but init and serve --dev): a mistyped --data-dir is an error, not a new deployment.
	MustExist bool
	// Exclusive takes the data directory's lock for the server's life (serve): a second serve on
	// the same SQLite data directory is refused, naming the first.
	Exclusive bool
	APIAddr   string
	// ProxyAddr is the auth proxy's listen address; empty serves no proxy.
	ProxyAddr string
	// CoordinatorURL, when set, is the activity API the auth proxy forwards to (another
	// Latchkey); empty: this process's engine, in process.
	CoordinatorURL string
	// MetricsAddr is the Prometheus metrics listener's address (GET /metrics); empty serves none.
	MetricsAddr string
	// FramesAddr is the listener of Latchkey's own export, import and auth iframe pages
	// (internal/frames; docs/frames.md); empty serves none.
	FramesAddr string
	// FramesAncestors are the origins that may always frame those pages (--frames-ancestors):
	// exact origins, or "*" alone.
	FramesAncestors []string
	// APITLS, ProxyTLS, DashboardTLS, MetricsTLS and FramesTLS serve each listener over TLS when
	// given a certificate; DashboardTLS.ClientCAFile asks dashboard clients for a certificate too.
	APITLS, ProxyTLS, DashboardTLS, MetricsTLS, FramesTLS TLSFiles
	// ProxySignupRate and ProxyOTPRate limit the auth proxy's sign-ups and code sends per
	// client address (nil: authproxy's defaults; a zero Rate: no limit).
	ProxySignupRate, ProxyOTPRate *authproxy.Rate
	DashboardAddr                 string
	// WebAuthn: relying party ids and origins accepted for passkeys; empty accepts any.
	WebAuthnRPIDs   []string
	WebAuthnOrigins []string
	MaxBodyBytes    int64
	// MaxInFlightBodyBytes bounds the request-body bytes the process holds at once, on every
	// listener (admission.DefaultMaxInFlight when zero): beyond it, 503 before reading.
	MaxInFlightBodyBytes int64
	// MaxHeaderBytes bounds each listener's request headers (DefaultMaxHeaderBytes when zero).
	MaxHeaderBytes int
	// TrustedProxies are the peers whose X-Forwarded-For is believed (IP allowlists).
	TrustedProxies []netip.Prefix
	// LoopbackWebhooks allows http:// webhook URLs on loopback (always with --dev).
	LoopbackWebhooks bool
	// Limits are the resource limits; zero values take directory.DefaultLimits.
	Limits directory.Limits
	// TVCQOSVersions are the QuorumOS versions TVC deployments may name, oldest first (the
	// last is the latest); empty records any well-formed version label (see docs/tvc.md).
	TVCQOSVersions []string
	// OIDCTrustedIssuers are issuers trusted beyond the well-known public ones (Google, Apple,
	// Facebook, …); plain http only on loopback.
	OIDCTrustedIssuers []string
	// OIDCIssuerURL is Latchkey's own issuer identifier (default http://<api-addr>/oidc); set it
	// to the public https URL of <api>/oidc when others must verify Latchkey's tokens.
	OIDCIssuerURL string
	// ChainRPC are the chain providers: canonical CAIP-2 id -> JSON-RPC URL (--chain-rpc).
	ChainRPC map[string]string
	// AssetsFile extends or replaces the built-in asset list (docs/operations.md).
	AssetsFile string
	// PricesFile gives balances a display.usd: {"<caip19>": "<usd price>"}.
	PricesFile string
	// GasStationFile turns gas sponsorship on (internal/gasstation; "" sponsors nothing).
	GasStationFile string
	// BalanceCacheTTL is how long balances are served from memory (default 10 s).
	BalanceCacheTTL time.Duration
	// OAuth2 overrides the token and user-info endpoints of "discord" and "x".
	OAuth2 map[string]OAuth2Endpoints
	// Emailer and Texter deliver one-time codes. Without them, --dev writes every message to
	// DataDir/outbox.jsonl; otherwise the OTP type without a transport is refused clearly.
	Emailer notify.Emailer
	Texter  notify.Texter
	Log     *slog.Logger
	// KeyShares and KeyThreshold split a new --seal shamir deployment's master key (init);
	// NewShares is given the shares, to show them once, before the seal record is stored.
	KeyShares, KeyThreshold int
	NewShares               func(*custody.Shares) error
	// unsealed is a --seal shamir master key rebuilt from shares (a server being unsealed);
	// metrics, when set, are the process's metrics (they outlive a sealed server's openings).
	unsealed *custody.MasterKey
	metrics  *metrics.Metrics
}

// Server is one assembled Latchkey.
type Server struct {
	cfg   Config
	Store store.Store
	// Hot versions the organizations' records held in memory (package hot).
	Hot       *hot.Versions
	Signers   *wallets.Signers // the signing keys held in memory (hot.go)
	Keyring   *custody.Keyring
	Keys      *custody.ServerKeys
	Custodian *custody.Custodian
	Webhooks  *webhooks.Deliverer
	listenerURLs
	// Outbox is the --dev delivery file (nil when real transports are configured).
	Outbox *notify.Outbox
	Engine *activity.Engine
	API    *api.Server
	// Proxy manages the organizations' auth proxy configurations; ProxyServer serves /v1/*.
	Proxy       *authproxy.Manager
	ProxyServer *authproxy.Server
	// Dashboard is the operator dashboard (--dashboard-addr).
	Dashboard *dashboard.Server
	// Frames serves the export, import and auth iframe pages (--frames-addr).
	Frames *frames.Handler
	// OIDCIssuer mints Latchkey's id_tokens (served at <api>/oidc); OIDCVerifier verifies id_tokens.
	OIDCIssuer   *oidc.Issuer
	OIDCVerifier *oidc.Verifier
	chain        *chaindata.Deps
	sponsor      sponsorBalances
	owned        []string // OwnedKinds
	Log          *slog.Logger
	// Messages is the outbox of the e-mails and SMS activities send.
	Messages *messages.Outbox
	// Metrics are the process's Prometheus metrics, served on --metrics-addr.
	Metrics *metrics.Metrics
	// tls holds each TLS listener's certificate by listener name (api, proxy, dashboard,
	// metrics, frames), reloaded by ReloadTLS.
	tls  map[string]*tlsListener
	lock *os.File // the data directory's lock (Config.Exclusive)
}

// listenerURLs are the listeners' base URLs once they listen.
type listenerURLs struct{ apiURL, proxyURL, dashboardURL, metricsURL, framesURL string }

// MetricsURL is the metrics listener's address once Run listens ("" without one).
func (u *listenerURLs) MetricsURL() string { return u.metricsURL }

// APIURL is the activity API's base URL once Run listens (https:// when it serves TLS).
func (u *listenerURLs) APIURL() string { return u.apiURL }

// DashboardURL is the dashboard's address once Run listens ("" before, or without one).
func (u *listenerURLs) DashboardURL() string { return u.dashboardURL }

// ProxyURL is the auth proxy's address once Run listens ("" before, or without a proxy).
func (u *listenerURLs) ProxyURL() string { return u.proxyURL }

// FramesURL is the frames' base URL once Run listens ("" before, or without --frames-addr).
func (u *listenerURLs) FramesURL() string { return u.framesURL }

// bound records a listener's base URL.
func (u *listenerURLs) bound(name, url string) {
	switch name {
	case "api":
		u.apiURL = url
	case "proxy":
		u.proxyURL = url
	case "dashboard":
		u.dashboardURL = url
	case "metrics":
		u.metricsURL = url
	case "frames":
		u.framesURL = url
	}
}

// DatabaseFile is the SQLite file inside the data directory.
const DatabaseFile = "latchkey.db"

// OutboxFile is where --dev writes the e-mails and text messages it would send.
const OutboxFile = "outbox.jsonl"

// MasterKeyFile is where --dev keeps its generated master key.
const MasterKeyFile = "master.key"

// withDefaults fills in the logger, data directory and limits when unset.
func (cfg Config) withDefaults() Config {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.DataDir == "" {
		cfg.DataDir = "./latchkey-data"
	}
	if cfg.Limits == (directory.Limits{}) {
		cfg.Limits = directory.DefaultLimits
	}
	return cfg
}

// Validate checks the configuration that can be checked without opening anything: Open calls
// it first, so a mistake is refused before the data directory or the database is touched (the
// TLS files, the asset and price files are read and checked next, still before the store).
func (cfg Config) Validate() error {
	if err := tvc.CheckQOSVersions(cfg.TVCQOSVersions); err != nil {
		return err
	}
	if cfg.Seal != custody.SealShamir && (cfg.KeyShares != 0 || cfg.KeyThreshold != 0) {
		return errors.New(
			"--key-shares and --key-threshold split the master key of a --seal shamir deployment: give --seal shamir",
		)
	}
	switch cfg.Seal {
	case "", custody.SealFile:
		if cfg.MasterKeyFile == "" && os.Getenv("LATCHKEY_MASTER_KEY") == "" && !cfg.Dev {
			return errNoMasterKey
		}
	case custody.SealShamir:
		if err := cfg.checkNoFileKey(); err != nil {
			return err
		}
		if cfg.KeyShares != 0 || cfg.KeyThreshold != 0 {
			return custody.CheckShamir(cfg.KeyShares, cfg.KeyThreshold)
		}
	default:
		w, err := cfg.wrapper()
		if err != nil {
			return err
		}
		if err := cfg.checkNoFileKey(); err != nil {
			return err
		}
		if err := w.Check(); err != nil {
			return err
		}
	}
	if cfg.CoordinatorURL != "" {
		if err := checkCoordinatorURL(cfg.CoordinatorURL); err != nil {
			return err
		}
	}
	if cfg.OIDCIssuerURL != "" {
		if err := oidc.CheckIssuerURL(cfg.OIDCIssuerURL); err != nil {
			return fmt.Errorf("--oidc-issuer-url: %w", err)
		}
	}
	for _, l := range cfg.listenerTLS() {
		if err := l.files.check(l.name); err != nil {
			return err
		}
	}
	if _, err := frames.CheckAncestors(cfg.FramesAncestors); err != nil {
		return fmt.Errorf("--frames-ancestors: %w", err)
	}
	return nil
}

// Open assembles a server from cfg.
func Open(ctx context.Context, cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	tlsListeners, lock, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, cfg)
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		return nil, err
	}
	s.lock, s.tls = lock, tlsListeners
	return s, nil
}

// prepare refuses everything that can be refused before anything is opened or written (the
// configuration, the TLS files, the data directory), then takes the data directory's lock
// when cfg.Exclusive asks for it.
func prepare(cfg Config) (map[string]*tlsListener, *os.File, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	tlsListeners, err := loadTLS(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := checkDataDir(cfg); err != nil {
		return nil, nil, err
	}
	var lock *os.File
	if cfg.Exclusive && cfg.DatabaseURL == "" {
		if lock, err = LockDataDir(cfg.DataDir); err != nil {
			return nil, nil, err
		}
	}
	return tlsListeners, lock, nil
}

func open(ctx context.Context, cfg Config) (*Server, error) {
	m := cfg.metrics
	if m == nil {
		m = metrics.New()
	}
	s := &Server{cfg: cfg, Log: cfg.Log, Metrics: m}
	// The chain providers, asset list and prices are configuration: read before anything is
	// written (--dev's master key included).
	var err error
	if s.chain, err = newChainDeps(cfg, func(network string) {
		s.Metrics.ChainRPCError(network)
		s.Dashboard.Health.Failed(network, time.Now().UTC())
	}); err != nil {
		return nil, err
	}
	var master *custody.MasterKey
	if cfg.fileSeal() {
		if master, err = loadMasterKey(cfg); err != nil {
			return nil, err
		}
	}
	raw, err := openStore(ctx, cfg, m)
	if err != nil {
		return nil, err
	}
	st := s.hotStore(raw)
	s.Store = st
	m.WatchStore(func(ctx context.Context) (store.Role, error) { return store.ReadRole(ctx, st) })
	opened := false
	defer func() {
		if !opened {
			st.Close()
		}
	}()
	if err := checkDatabase(ctx, cfg, st); err != nil {
		return nil, err
	}
	if master, err = unseal(ctx, cfg, st, master); err != nil {
		return nil, err
	}
	if s.Keyring, err = custody.OpenKeyring(ctx, st, master); err != nil {
		return nil, err
	}
	s.Keyring.SetMasterSource(masterSource(cfg, st))
	if s.Keys, err = custody.LoadServerKeys(ctx, st, s.Keyring); err != nil {
		return nil, err
	}
	if s.chain.Sponsor, err = custody.LoadSponsorKeys(ctx, st, s.Keyring); err != nil {
		return nil, err
	}
	sponsor := s.chain.Sponsor.Addresses()
	cfg.Log.Info("gas station sponsor keys", "paymaster", sponsor.EVMPaymaster, "feePayer", sponsor.SolanaFeePayer)
	s.Custodian = custody.NewCustodian(s.Keyring, s.Keys)
	if cfg.Dev && cfg.Emailer == nil && cfg.Texter == nil {
		if s.Outbox, err = notify.NewOutbox(filepath.Join(cfg.DataDir, OutboxFile)); err != nil {
			return nil, err
		}
		s.cfg.Emailer, s.cfg.Texter = s.Outbox, s.Outbox
		cfg.Log.Warn(
			"DEVELOPMENT MODE: one-time codes are not sent; they are written to the outbox file",
			"path",
			s.Outbox.Path(),
		)
	}
	s.Messages = &messages.Outbox{
		Store:   st,
		Keyring: s.Keyring,
		Emailer: s.cfg.Emailer,
		Texter:  s.cfg.Texter,
		Log:     cfg.Log,
		Sent: func(channel string, ok bool) {
			s.Metrics.OTPSend(channel, ok)
			if !ok {
				s.Metrics.OutboxFailure("messages")
				s.Dashboard.Health.Failed(channel, time.Now().UTC())
			}
		},
		Backlog: func(n int) { s.Metrics.OutboxBacklog("messages", n) },
	}
	s.Webhooks = &webhooks.Deliverer{
		Store:   st,
		Keys:    s.Keys,
		Client:  &http.Client{Timeout: 10 * time.Second},
		Log:     cfg.Log,
		Backlog: func(n int) { s.Metrics.OutboxBacklog("webhooks", n) },
		Failed:  func() { s.Metrics.OutboxFailure("webhooks"); s.Dashboard.Health.Failed("webhooks", time.Now().UTC()) },
	}
	s.Webhooks.Prepare()
	svc := &activity.Services{
		Store:        st,
		Keyring:      s.Keyring,
		ServerKeys:   s.Keys,
		Custodian:    s.Custodian,
		Policies:     policies.NewSource(),
		SessionScope: profiles.Scope,
		MFA:          mfa.Source(mfa.NewPolicies(s.Hot)),
		OnActivity:   webhooks.Enqueuer(webhooks.NewParents(s.Hot)),
		Committed:    s.Webhooks.Wake,
		Log:          cfg.Log,
		Recorded: func(typ, status, decision string) {
			s.Metrics.Activity(typ, status)
			if decision != "" {
				s.Metrics.PolicyDecision(decision)
			}
		},
	}
	if err := s.setUpOIDC(func() time.Time { return svc.Now() }); err != nil {
		return nil, err
	}
	svc.VerifyOIDC = s.verifyOIDC
	if s.OIDCVerifier != nil {
		svc.PrefetchOIDC = s.OIDCVerifier.Prefetch
	}
	s.Engine = activity.NewEngine(svc, s.registry())
	s.Proxy = &authproxy.Manager{Store: st, Custodian: s.Custodian, Env: s.env}
	wellKnown := func() []byte {
		b, _ := json.MarshalIndent(s.PublicKeys(), "", "  ")
		return b
	}
	s.API = &api.Server{
		Engine:         s.Engine,
		Store:          st,
		WebAuthn:       s.webAuthnPolicy(),
		WellKnown:      wellKnown,
		WebhookJWKS:    webhooks.JWKS(s.Keys),
		MaxBody:        cfg.MaxBodyBytes,
		Log:            cfg.Log,
		Version:        Version,
		TrustedProxies: cfg.TrustedProxies,
		Notarizers:     func() []*ecdsa.PublicKey { return s.Keys.VerifyKeys(custody.Notarizer) },
		Callers:        directory.NewCallerCache(s.Hot),
	}
	s.API.Attested = otp.Attested{
		OTPKeys:    func() []*ecdsa.PublicKey { return s.Keys.VerifyKeys(custody.OTP) },
		Now:        func() time.Time { return svc.Now() },
		VerifyOIDC: s.verifyOIDC,
	}.Resolve
	s.API.OIDC = s.OIDCIssuer
	var coord authproxy.Coordinator = authproxy.InProcess{API: s.API.Handler()}
	if cfg.CoordinatorURL != "" {
		coord = authproxy.NewRemote(cfg.CoordinatorURL) // checked by Validate
	}
	s.Dashboard = &dashboard.Server{
		Store:          st,
		Proxy:          s.Proxy,
		Keys:           func() any { return s.PublicKeys() },
		Keyring:        s.KeyringStatus,
		Version:        Version,
		Log:            cfg.Log,
		TrustedProxies: cfg.TrustedProxies,
	}
	s.Dashboard.Health = dashboard.Health{
		KeyringVersion: s.Keyring.ActiveVersion,
		Email:          s.Messages.CanEmail(),
		SMS:            s.Messages.CanSMS(),
	}
	s.Dashboard.Health.GasStation = s.gasStationHealth
	if cfg.DatabaseURL == "" {
		s.Dashboard.Health.DatabaseFile = filepath.Join(cfg.DataDir, DatabaseFile)
	}
	if s.Outbox != nil {
		s.Dashboard.Health.EmailDetail, s.Dashboard.Health.SMSDetail = "development outbox file (not sent)", "development outbox file (not sent)"
	}
	for network := range cfg.ChainRPC {
		s.Dashboard.Health.Chains = append(s.Dashboard.Health.Chains, chaindata.Canonical(network))
	}
	s.ProxyServer = &authproxy.Server{Configs: s.Proxy, Coordinator: coord, Log: cfg.Log,
		SignupRate: cfg.ProxySignupRate, OTPRate: cfg.ProxyOTPRate, TrustedProxies: cfg.TrustedProxies}
	ancestors, _ := frames.CheckAncestors(cfg.FramesAncestors) // checked by Validate
	s.Frames = &frames.Handler{SignerKeys: s.signerKeys, Ancestors: ancestors, OrgOrigins: s.proxyOrigins,
		Dev: cfg.Dev, Log: cfg.Log}
	opened = true
	return s, nil
}

// signerKeys are the signer public keys the frames trust now: the key in use, a pending next
// key, and replaced keys still in their grace period (custody.ServerKeys.VerifyKeys).
func (s *Server) signerKeys() []string {
	var out []string
	for _, k := range s.Keys.VerifyKeys(custody.Signer) {
		if b, err := k.Bytes(); err == nil {
			out = append(out, hex.EncodeToString(b))
		}
	}
	return out
}

// proxyOrigins are the allowed origins of orgID's auth proxy while it is enabled, which may
// frame the frames (docs/frames.md, "Who may frame the pages"); none without one.
func (s *Server) proxyOrigins(ctx context.Context, orgID string) ([]string, error) {
	c, err := s.Proxy.Get(ctx, orgID)
	switch {
	case err != nil && apierr.From(err).Code == apierr.NotFound:
		return nil, nil
	case err != nil:
		return nil, err
	case !c.Settings.Enabled:
		return nil, nil
	}
	return c.Settings.AllowedOrigins, nil
}

func (s *Server) env(now time.Time) directory.Env {
	return directory.Env{Now: now, WebAuthn: s.webAuthnPolicy(), Limits: s.cfg.Limits, VerifyOIDC: s.verifyOIDC}
}

func (s *Server) webAuthnPolicy() stamp.WebAuthnPolicy {
	return stamp.WebAuthnPolicy{RPIDs: s.cfg.WebAuthnRPIDs, Origins: s.cfg.WebAuthnOrigins}
}

// registry wires every domain in one place: each package's Register gets its one Deps value,
// built here, and returns the record kinds it keeps under an organization. Deleting a
// sub-organization removes the union of those (OwnedKinds). A new domain is one more line.
func (s *Server) registry() *activity.Registry {
	reg := activity.NewRegistry()
	env := func(x *activity.Exec) directory.Env { return s.env(x.Now) }
	s.Signers = wallets.NewSigners(s.Hot)
	wd := wallets.Deps{Custodian: s.Custodian, Signers: s.Signers, Env: env}
	s.chain.SignSolana, s.chain.SignEthereum, s.chain.SignEthereumDigest = wd.SignSolana, wd.SignEthereum, wd.SignEthereumDigest
	s.chain.Store, s.chain.Log = s.Store, s.Log
	// Arguments are evaluated in order: the operations register in this order.
	owned := slices.Concat(
		wallets.Register(reg, wd),
		users.Register(reg, users.Deps{Env: env, ProveContact: otp.ProveContact}),
		credentials.Register(reg, credentials.Deps{Env: env}),
		activities.Register(reg, activities.Deps{}),
		policies.Register(reg, policies.Deps{Env: env}),
		allowlists.Register(reg, allowlists.Deps{}),
		profiles.Register(reg, profiles.Deps{}),
		secrets.Register(reg, secrets.Deps{Custodian: s.Custodian}),
		mfa.Register(reg, mfa.Deps{}),
		otp.Register(reg, otp.Deps{Env: env, Messages: s.Messages}),
		webhooks.Register(reg, webhooks.Deps{AllowLoopback: s.cfg.Dev || s.cfg.LoopbackWebhooks,
			Networks: func() []string { return slices.Sorted(maps.Keys(s.chain.Providers)) }}),
		chaindata.Register(reg, s.chain),
		gasstation.Register(reg),
		oauth.Register(reg, oauth.Deps{Env: env, Issuer: s.OIDCIssuer, Providers: s.oauth2Provider}),
		tvc.Register(
			reg,
			tvc.Deps{
				QOSVersions: s.cfg.TVCQOSVersions,
				OperatorAccounts: func(x *activity.Exec, name, walletID, path string) (string, string, string, error) {
					id, accts, err := wd.TVCOperatorAccounts(x, name, walletID, path)
					if err != nil {
						return "", "", "", err
					}
					return id, accts[0].Address, accts[1].Address, nil
				},
			},
		),
		// Kept under an organization by packages that register no operations: the engine's
		// activities awaiting consensus, the auth proxy's configuration.
		[]string{activity.PendingKind, authproxy.KindConfig},
	)
	// Organizations come last: deleting one removes what every other domain declared.
	s.owned = append(organizations.Register(reg, organizations.Deps{Env: env, ExportGuard: wallets.ExportGuard,
		MintSubOrgWallet: wd.MintSubOrgWallet, SubOrgWallet: wallets.SaveSubOrgWallet, OwnedKinds: owned,
		SignupToken: otp.CheckSignupToken}), owned...)
	for path, why := range notSupported {
		reg.NotSupported(path, why)
	}
	return reg
}

// OwnedKinds are the record kinds an organization owns, as the registered packages declare
// them, and that go when a sub-organization is deleted (its activities stay, as the audit
// trail).
func (s *Server) OwnedKinds() []string { return slices.Clone(s.owned) }

// Close releases the store.
func (s *Server) Close() error {
	err := s.Store.Close()
	if s.lock != nil {
		s.lock.Close()
	}
	return err
}

var errNoMasterKey = errors.New(
	"no master key: pass --master-key-file FILE (64 hex characters) or set LATCHKEY_MASTER_KEY; " +
		"for a development server use --dev",
)

// checkNoFileKey refuses --dev and a master key file with a seal that keeps the master key
// elsewhere.
func (cfg Config) checkNoFileKey() error {
	if cfg.Dev {
		return fmt.Errorf(
			"--seal %s is for production deployments: --dev keeps its master key in the data directory",
			cfg.Seal,
		)
	}
	if cfg.MasterKeyFile != "" || os.Getenv("LATCHKEY_MASTER_KEY") != "" {
		return fmt.Errorf(
			"--seal %s keeps the master key outside Latchkey's files: give no --master-key-file (nor LATCHKEY_MASTER_KEY)",
			cfg.Seal,
		)
	}
	return nil
}

// fileSeal reports whether the master key comes from a file or the environment.
func (cfg Config) fileSeal() bool { return cfg.Seal == "" || cfg.Seal == custody.SealFile }

// sealNames lists the --seal values, for the message that refuses another.
const sealNames = "file, transit, pkcs11, awskms, gcpkms, azurekv or shamir"

// wrapper is the seal that keeps the master key wrapped outside Latchkey (--seal other than file).
func (cfg Config) wrapper() (custody.Wrapper, error) { return cfg.wrapperFor(cfg.Seal) }

// wrapperFor is the wrapping seal named seal, configured by cfg's flags for it.
func (cfg Config) wrapperFor(seal string) (custody.Wrapper, error) {
	switch seal {
	case custody.SealTransit:
		return cfg.Transit, nil
	case custody.SealPKCS11:
		return cfg.PKCS11, nil
	case custody.SealAWSKMS:
		return cfg.AWSKMS, nil
	case custody.SealGCPKMS:
		return cfg.GCPKMS, nil
	case custody.SealAzureKV:
		return cfg.AzureKV, nil
	}
	return nil, fmt.Errorf("--seal %q: use %s", seal, sealNames)
}

// unseal returns the master key by the deployment's seal: the file's key as given, checked
// against the seal record (a deployment sealed by a wrapper refuses a file); or, with a wrapping
// seal (transit…), the seal record unwrapped by it, and for a new deployment a new master key
// wrapped by it and recorded. The wrapper's calls are made outside any transaction.
func unseal(ctx context.Context, cfg Config, st store.Store, fromFile *custody.MasterKey) (*custody.MasterKey, error) {
	rec, err := custody.LoadSealRecord(ctx, st)
	if err != nil && !errors.Is(err, custody.ErrNoSealRecord) {
		return nil, err
	}
	if cfg.Seal == custody.SealShamir || rec != nil && rec.Type == custody.SealShamir && cfg.fileSeal() {
		return unsealShamir(ctx, cfg, st, rec)
	}
	m, err := recordedMaster(ctx, cfg, rec, func() (*custody.MasterKey, error) { return fromFile, nil })
	if !errors.Is(err, custody.ErrNoSealRecord) {
		return m, err
	}
	// A wrapping seal and no seal record: a new deployment, unless it already has a keyring.
	w, err := cfg.wrapper()
	if err != nil {
		return nil, err
	}
	exists, err := custody.KeyringExists(ctx, st)
	if err != nil {
		return nil, err
	}
	if exists {
		return nil, fmt.Errorf(
			"this deployment's master key is a file (it has no %s seal record): --seal %s applies to new deployments (latchkey init --seal %s); see docs/operations.md, \"Production custody\"",
			w.Type(),
			w.Type(),
			w.Type(),
		)
	}
	if m, err = custody.NewMasterKey(); err != nil {
		return nil, err
	}
	ct, err := w.Wrap(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("wrapping the new master key through %s: %w", w.Type(), err)
	}
	rec = &custody.SealRecord{Type: w.Type(), Ciphertext: ct, Created: time.Now().UTC()}
	w.Locate(rec)
	if err := custody.SaveSealRecord(ctx, st, rec); err != nil {
		return nil, err
	}
	return m, nil
}

// recordedMaster is the master key that cfg's seal and the deployment's seal record (nil: none)
// give: a file seal's key from file (refused when the deployment has a seal record), or the
// record unwrapped by cfg's wrapping seal; custody.ErrNoSealRecord when a wrapping seal finds no
// record. A start (unseal) and a running server fetching the key again after a rewrap
// (masterSource) both use it.
func recordedMaster(
	ctx context.Context,
	cfg Config,
	rec *custody.SealRecord,
	file func() (*custody.MasterKey, error),
) (*custody.MasterKey, error) {
	if cfg.fileSeal() {
		if rec != nil {
			return nil, fmt.Errorf(
				"this deployment's master key is held by a %s seal (key %q at %s): start it with --seal %s and that seal's flags (docs/operations.md, \"Production custody\")",
				rec.Type,
				rec.Key,
				rec.Addr,
				rec.Type,
			)
		}
		return file()
	}
	w, err := cfg.wrapper()
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, custody.ErrNoSealRecord
	}
	if rec.Type != w.Type() {
		return nil, fmt.Errorf("this deployment's seal is %q, not %s", rec.Type, w.Type())
	}
	m, err := w.Unwrap(ctx, rec.Ciphertext)
	if err != nil {
		return nil, fmt.Errorf("unsealing the master key through %s: %w", w.Type(), err)
	}
	return m, nil
}

func loadMasterKey(cfg Config) (*custody.MasterKey, error) {
	if v := os.Getenv("LATCHKEY_MASTER_KEY"); v != "" && cfg.MasterKeyFile == "" {
		return custody.ParseMasterKey([]byte(v))
	}
	path := cfg.MasterKeyFile
	if path == "" {
		if !cfg.Dev {
			return nil, errNoMasterKey
		}
		path = filepath.Join(cfg.DataDir, MasterKeyFile)
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
				return nil, err
			}
			m, err := custody.GenerateMasterKeyFile(path)
			if err != nil {
				return nil, err
			}
			cfg.Log.Warn(
				"DEVELOPMENT MODE: generated a master key and stored it NEXT TO THE DATA it protects; anyone who can read the data directory can read every key. Never use --dev in production.",
				"path",
				path,
			)
			return m, nil
		}
		cfg.Log.Warn(
			"DEVELOPMENT MODE: using the master key stored in the data directory; never do this in production",
			"path",
			path,
		)
	}
	return custody.LoadMasterKeyFile(path)
}

func openStore(ctx context.Context, cfg Config, m *metrics.Metrics) (store.Store, error) {
	if cfg.DatabaseURL != "" {
		if !strings.HasPrefix(cfg.DatabaseURL, "postgres://") && !strings.HasPrefix(cfg.DatabaseURL, "postgresql://") {
			return nil, errors.New("--database-url must be a postgres:// URL")
		}
		return postgres.Open(
			ctx,
			cfg.DatabaseURL,
			postgres.Options{
				OnCommit:           func(n int, d time.Duration) { m.Commit("postgres", n, d) },
				RequireSyncStandby: cfg.RequireSyncStandby,
				RetryFor:           cfg.StoreRetryFor,
			},
		)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	return sqlite.Open(
		ctx,
		filepath.Join(cfg.DataDir, DatabaseFile),
		sqlite.Options{OnCommit: func(n int, d time.Duration) { m.Commit("sqlite", n, d) }},
	)
}

// PublicKeys are the server's public keys as served at /.well-known/latchkey.json and printed by
// `latchkey keys`: uncompressed P-256, lowercase hex, the exact strings the Turnkey SDKs take as
// overrides.
type PublicKeys struct {
	// SignerPublicKey signs export bundles and import bundles: pass it as
	// dangerouslyOverrideSignerPublicKey to @turnkey/crypto decryptExportBundle and
	// encrypt{Wallet,PrivateKey}ToBundle.
	SignerPublicKey string `json:"signerPublicKey"`
	// NotarizerPublicKey signs session JWTs: pass it to verifySessionJwtSignature.
	NotarizerPublicKey string `json:"notarizerPublicKey"`
	// OTPPublicKey signs OTP verification tokens and OTP encryption target bundles: pass it to
	// verifyOtpVerificationToken and encryptOtpCodeToBundle.
	OTPPublicKey string `json:"otpPublicKey"`
	// AppProofPublicKey signs app proofs.
	AppProofPublicKey string `json:"appProofPublicKey"`
	// WebhookPublicKey signs webhook deliveries (X-Latchkey-Signature; docs/webhooks.md).
	WebhookPublicKey string `json:"webhookPublicKey"`
	// ClientSecretsPublicKey is what clients encrypt OAuth 2.0 client secrets to: pass it to
	// @turnkey/crypto encryptOauth2ClientSecret as dangerouslyOverrideTlsFetcherPublicKey.
	ClientSecretsPublicKey string `json:"clientSecretsPublicKey"`
	// Rotations lists the keys being rotated (latchkey keys rotate): the next key, published
	// here for the overlap before it takes over at activatesAt, and afterwards the replaced key
	// for as long as it still verifies. A client that pins a key adds the next one during the
	// overlap.
	Rotations []custody.Rotation `json:"rotations,omitempty"`
	Version   string             `json:"version"`
}

// SponsorAddresses are the gas sponsor keys' addresses, for the operator to fund.
func (s *Server) SponsorAddresses() custody.SponsorAddresses { return s.chain.Sponsor.Addresses() }

// PublicKeys returns the server's public keys.
func (s *Server) PublicKeys() PublicKeys {
	return PublicKeys{
		SignerPublicKey:        s.Keys.PublicKey(custody.Signer),
		NotarizerPublicKey:     s.Keys.PublicKey(custody.Notarizer),
		OTPPublicKey:           s.Keys.PublicKey(custody.OTP),
		AppProofPublicKey:      s.Keys.PublicKey(custody.AppProof),
		WebhookPublicKey:       s.Keys.PublicKey(custody.Webhook),
		ClientSecretsPublicKey: s.Keys.PublicKey(custody.ClientSecrets),
		Rotations:              s.Keys.Rotations(),
		Version:                Version,
	}
}

func checkCoordinatorURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" ||
		u.Fragment != "" {
		return fmt.Errorf(
			"--coordinator-url %q must be an http(s) URL of a Latchkey activity API (e.g. https://api.example.com)",
			raw,
		)
	}
	return nil
}

// Run serves the API listener and the auth proxy's until ctx ends, then drains in-flight
// requests (up to drain) and returns. ready, when not nil, is called with the API's bound
// address once listening.
func (s *Server) Run(ctx context.Context, drain time.Duration, ready func(apiAddr string)) error {
	// A gas station whose delegate does not answer as it must would sponsor nothing that
	// works: refuse to start (the error names the network).
	if err := s.chain.CheckDelegates(ctx); err != nil {
		return err
	}
	stop := func() {}
	defer func() { stop() }()
	l := listenerSet{
		cfg:      s.cfg,
		tls:      s.tls,
		log:      s.Log,
		metrics:  s.Metrics,
		handlers: s.handlers(),
		bound:    s.bound,
		draining: s.API.Drain,
	}
	if len(s.tls) > 0 {
		l.hangup = append(l.hangup, hangupAction{"TLS certificates", "serving the previous ones", s.ReloadTLS})
	}
	if s.cfg.GasStationFile != "" {
		l.hangup = append(l.hangup,
			hangupAction{"the gas-station file", "its kill switch is as it was", s.ReloadGasStation})
	}
	return l.run(ctx, drain, func(apiAddr string) {
		stop = s.startWorkers()
		if ready != nil {
			ready(apiAddr)
		}
	})
}

// handlers are the store-backed handlers of the API, auth proxy and dashboard listeners.
func (s *Server) handlers() map[string]http.Handler {
	return map[string]http.Handler{
		"api":       s.Hot.PerRequest(s.Dashboard.Observe(s.API.Handler())),
		"proxy":     s.Hot.PerRequest(s.ProxyServer.Handler()),
		"dashboard": s.Dashboard.Handler(),
		"frames":    s.Frames,
	}
}

// startWorkers starts the webhook and message deliveries and the chain follower; stop ends
// them and waits for them.
func (s *Server) startWorkers() (stop func()) {
	dctx, stopDeliveries := context.WithCancel(context.Background())
	delivered := make(chan struct{})
	go func() { s.Webhooks.Run(dctx); close(delivered) }()
	sent := make(chan struct{})
	go func() { s.Messages.Run(dctx); close(sent) }()
	followed := make(chan struct{})
	go func() { s.chain.Follow(dctx, s.Webhooks.Wake); close(followed) }()
	reloaded := make(chan struct{})
	go func() { s.reloadServerKeys(dctx, ServerKeyReload); close(reloaded) }()
	balances := make(chan struct{})
	go func() { s.watchSponsorBalances(dctx, SponsorBalanceEvery); close(balances) }()
	s.Log.Info("latchkey serving", "store", s.Store.Dialect(), "version", Version)
	return func() {
		stopDeliveries()
		<-delivered
		<-sent
		<-followed
		<-reloaded
		<-balances
	}
}

// listenerSet is the listeners of cfg (api always; proxy, dashboard, frames and metrics when
// their addresses are set) serving handlers by name, metrics observed.
type listenerSet struct {
	cfg     Config
	tls     map[string]*tlsListener
	log     *slog.Logger
	metrics *metrics.Metrics
	// hangup is what SIGHUP reads again (TLS certificates, the gas station's kill switch).
	hangup   []hangupAction
	handlers map[string]http.Handler
	bound    func(name, url string)
	draining func() // called when ctx ends, before the listeners drain
}

// hangupAction is one thing SIGHUP reloads: what, what a failure leaves in place, and how.
type hangupAction struct {
	what, onFailure string
	reload          func() error
}

// run binds the listeners, calls started with the API's address, serves until ctx ends, then
// drains in-flight requests (up to drain).
func (l listenerSet) run(ctx context.Context, drain time.Duration, started func(apiAddr string)) error {
	// One bound on the bytes of request bodies in flight, across the listeners.
	gate := admission.New(l.cfg.MaxInFlightBodyBytes)
	gate.Refused = l.metrics.Refused
	l.metrics.WatchInFlight(gate.Held)
	maxHeader := l.cfg.MaxHeaderBytes
	if maxHeader <= 0 {
		maxHeader = DefaultMaxHeaderBytes
	}
	newServer := func(h http.Handler) *http.Server {
		return &http.Server{Handler: h, ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: ReadTimeout,
			WriteTimeout: WriteTimeout, IdleTimeout: IdleTimeout, MaxHeaderBytes: maxHeader,
			ErrorLog: slog.NewLogLogger(l.log.Handler(), slog.LevelWarn)}
	}
	var (
		servers   []*http.Server
		listeners []net.Listener
		serve     []func() error
	)
	// listen binds one listener (TLS when configured) and records its base URL.
	listen := func(name, flag, addr string, h http.Handler) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return fmt.Errorf("%s listener (%s): %w", name, flag, err)
		}
		hs := newServer(h)
		tl := l.tls[name]
		servers, listeners = append(servers, hs), append(listeners, ln)
		serve = append(serve, func() error { return hs.Serve(tl.wrap(ln)) })
		url := tl.scheme() + ln.Addr().String()
		l.log.Info("latchkey "+name+" listening", "addr", ln.Addr().String(), "url", url)
		l.bound(name, url)
		return nil
	}
	maxAPIBody := l.cfg.MaxBodyBytes
	if maxAPIBody <= 0 {
		maxAPIBody = api.DefaultMaxBody
	}
	for _, ls := range []struct {
		name, flag, addr string
		operation        func(string) string
		maxBody          int64
	}{{"api", "--api-addr", l.cfg.APIAddr, api.Operation, maxAPIBody},
		{"proxy", "--proxy-addr", l.cfg.ProxyAddr, authproxy.Operation, authproxy.DefaultMaxBody},
		{"dashboard", "--dashboard-addr", l.cfg.DashboardAddr, dashboard.Operation, dashboard.MaxBodyBytes},
		// The frames are GET only: a request with a body is refused before it is read.
		{"frames", "--frames-addr", l.cfg.FramesAddr, frames.Operation, 0}} {
		if ls.addr == "" && ls.name != "api" {
			continue
		}
		h := gate.Wrap(ls.name, ls.maxBody, l.handlers[ls.name])
		if err := listen(ls.name, ls.flag, ls.addr, metrics.Observe(l.metrics, l.log, ls.name, ls.operation, h)); err != nil {
			return err
		}
		if ls.name == "proxy" {
			coordinator := "in process"
			if l.cfg.CoordinatorURL != "" {
				coordinator = l.cfg.CoordinatorURL
			}
			l.log.Info("latchkey auth proxy forwards", "coordinator", coordinator)
		}
	}
	apiAddr := listeners[0].Addr().String()
	if l.cfg.MetricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", l.metrics.Handler())
		if err := listen("metrics", "--metrics-addr", l.cfg.MetricsAddr, gate.Wrap("metrics", 0, mux)); err != nil {
			return err
		}
	}
	errc := make(chan error, len(serve))
	for _, fn := range serve {
		go func() { errc <- fn() }()
	}
	if len(l.hangup) > 0 {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		stopped := make(chan struct{})
		defer func() { signal.Stop(hup); close(stopped) }()
		go func() {
			for {
				select {
				case <-stopped:
					return
				case <-hup:
				}
				for _, a := range l.hangup {
					if err := a.reload(); err != nil {
						l.log.Error("SIGHUP: reloading "+a.what+" failed; "+a.onFailure, "err", err)
					} else {
						l.log.Info("SIGHUP: " + a.what + " reloaded")
					}
				}
			}
		}()
	}
	if started != nil {
		started(apiAddr)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	l.draining()
	l.log.Info("shutting down: draining in-flight requests")
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	for _, hs := range servers {
		if err := hs.Shutdown(sctx); err != nil {
			return fmt.Errorf("drain: %w", err)
		}
	}
	return nil
}

// Every listener's timeouts and header limit (docs/limits.md §1).
const (
	// ReadHeaderTimeout bounds the time a client may take to send its request's headers.
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds the time to read a whole request, body included.
	ReadTimeout = 60 * time.Second
	// WriteTimeout bounds the time from the end of the headers to the end of the answer.
	WriteTimeout = 60 * time.Second
	// IdleTimeout closes a kept-alive connection that sends nothing for this long.
	IdleTimeout = 120 * time.Second
	// DefaultMaxHeaderBytes bounds a request's headers (--max-header-bytes): the largest a real
	// client sends is an X-Stamp-Attested carrying an OIDC id_token, a few KiB.
	DefaultMaxHeaderBytes = 64 << 10
)

// ServerKeyReload is how often a serving process reads the server keys again, to pick up a
// rotation another process made (latchkey keys rotate). A rotation's overlap should be much
// longer: the next key is published from then on, and takes over by the clock in every process.
const ServerKeyReload = 30 * time.Second

func (s *Server) reloadServerKeys(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.Keys.Reload(ctx, s.Store, s.Keyring); err != nil && ctx.Err() == nil {
			s.Log.Error("reloading the server keys failed; keeping the ones loaded", "err", err)
		}
	}
}
