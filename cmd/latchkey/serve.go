package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/admission"
	"github.com/latchkey/latchkey/internal/authproxy"
	"github.com/latchkey/latchkey/internal/directory"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/notify"
	"github.com/latchkey/latchkey/internal/ops/chaindata"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/tracing"
)

// storeFlags are the flags every command that opens the store shares.
type storeFlags struct {
	dataDir, databaseURL, masterKeyFile string
	requireSyncStandby                  bool
	storeRetryFor                       time.Duration
	dev                                 bool
	seal                                string
	transit                             custody.Transit
	pkcs11                              custody.PKCS11
	awskms                              custody.AWSKMS
	gcpkms                              custody.GCPKMS
	azurekv                             custody.AzureKV
}

func (s *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(
		&s.dataDir,
		"data-dir",
		"./latchkey-data",
		"data directory (SQLite database, --dev master key and credentials)",
	)
	fs.StringVar(
		&s.databaseURL,
		"database-url",
		"",
		"PostgreSQL URL (postgres://...); empty uses embedded SQLite in the data directory",
	)
	fs.BoolVar(
		&s.requireSyncStandby,
		"require-sync-standby",
		false,
		"PostgreSQL: refuse writes (503) while the primary has no synchronous standby streaming, "+
			"rather than acknowledge what a single machine holds",
	)
	fs.DurationVar(
		&s.storeRetryFor,
		"store-retry-for",
		30*time.Second,
		"PostgreSQL: how long a request waits for a lost database to come back (a failover) before a 503",
	)
	fs.StringVar(
		&s.masterKeyFile,
		"master-key-file",
		"",
		"file holding the 32-byte master key as 64 hex characters (or set LATCHKEY_MASTER_KEY)",
	)
	fs.BoolVar(
		&s.dev,
		"dev",
		false,
		"development mode: generate a master key in the data directory and a demo organization",
	)
	fs.StringVar(
		&s.seal,
		"seal",
		custody.SealFile,
		"where the master key comes from: file (--master-key-file or LATCHKEY_MASTER_KEY), transit (wrapped by an OpenBao/Vault transit key), pkcs11 (wrapped by an AES key on a PKCS#11 token; a -tags pkcs11 build), awskms, gcpkms or azurekv (wrapped by an AWS KMS, Cloud KMS or Azure Key Vault key), or shamir (split into shares held by people: serve starts sealed); docs/operations.md",
	)
	fs.StringVar(
		&s.transit.Addr,
		"transit-addr",
		"",
		"--seal transit: the OpenBao or Vault server's URL (https://bao.example:8200)",
	)
	fs.StringVar(&s.transit.Mount, "transit-mount", "transit", "--seal transit: the transit engine's mount path")
	fs.StringVar(
		&s.transit.Key,
		"transit-key",
		"",
		"--seal transit: the name of the transit key that wraps the master key",
	)
	fs.StringVar(
		&s.transit.Namespace,
		"transit-namespace",
		"",
		"--seal transit: the namespace (X-Vault-Namespace), if any",
	)
	fs.StringVar(
		&s.transit.Token,
		"transit-token",
		"",
		"--seal transit: the token, from LATCHKEY_TRANSIT_TOKEN or LATCHKEY_TRANSIT_TOKEN_FILE only (a secret is refused on the command line)",
	)
	fs.StringVar(
		&s.pkcs11.Module,
		"pkcs11-module",
		"",
		"--seal pkcs11: absolute path of the token's PKCS#11 module (.so); needs a build with -tags pkcs11",
	)
	fs.StringVar(
		&s.pkcs11.TokenLabel,
		"pkcs11-token-label",
		"",
		"--seal pkcs11: the label of the token that holds the wrapping key",
	)
	fs.StringVar(
		&s.pkcs11.Slot,
		"pkcs11-slot",
		"",
		"--seal pkcs11: the token's slot ID, instead of --pkcs11-token-label",
	)
	fs.StringVar(
		&s.pkcs11.KeyLabel,
		"pkcs11-key-label",
		"",
		"--seal pkcs11: the label of the AES key on the token that wraps the master key",
	)
	fs.BoolVar(
		&s.pkcs11.CreateKey,
		"pkcs11-create-key",
		false,
		"--seal pkcs11, latchkey init: generate the AES key on the token (sensitive, not extractable) if it does not exist",
	)
	fs.StringVar(
		&s.pkcs11.PIN,
		"pkcs11-pin",
		"",
		"--seal pkcs11: the token's user PIN, from LATCHKEY_PKCS11_PIN or LATCHKEY_PKCS11_PIN_FILE only (a secret is refused on the command line)",
	)
	fs.StringVar(
		&s.awskms.KeyID,
		"awskms-key-id",
		"",
		"--seal awskms: the symmetric AWS KMS key that wraps the master key (key id, key ARN, alias/NAME or alias ARN); credentials by the AWS SDK's default chain",
	)
	fs.StringVar(
		&s.awskms.Region,
		"awskms-region",
		"",
		"--seal awskms: the key's AWS region (empty: a key ARN's, else AWS_REGION or the profile's)",
	)
	fs.StringVar(
		&s.awskms.Endpoint,
		"awskms-endpoint",
		"",
		"--seal awskms: a KMS endpoint URL instead of the region's (a VPC endpoint; http only on loopback)",
	)
	fs.StringVar(
		&s.gcpkms.Key,
		"gcpkms-key",
		"",
		"--seal gcpkms: the Cloud KMS key that wraps the master key (projects/P/locations/L/keyRings/R/cryptoKeys/K); Application Default Credentials",
	)
	fs.StringVar(
		&s.gcpkms.Endpoint,
		"gcpkms-endpoint",
		"",
		"--seal gcpkms: a Cloud KMS endpoint URL instead of https://cloudkms.googleapis.com (http only on loopback)",
	)
	fs.StringVar(
		&s.azurekv.Vault,
		"azurekv-vault",
		"",
		"--seal azurekv: the Key Vault's URL (https://NAME.vault.azure.net); DefaultAzureCredential",
	)
	fs.StringVar(
		&s.azurekv.Key,
		"azurekv-key",
		"",
		"--seal azurekv: the name of the vault's RSA key that wraps the master key (RSA-OAEP-256)",
	)
	fs.StringVar(
		&s.azurekv.Version,
		"azurekv-key-version",
		"",
		"--seal azurekv: the key version that wraps at init (empty: the current one; recorded either way)",
	)
}

// open assembles the server for an operator command (warnings only on stderr).
func (s *storeFlags) open(ctx context.Context, stderr io.Writer) (*server.Server, error) {
	log, _ := newLogger(stderr, "warn")
	cfg := s.config()
	cfg.Log = log
	if s.seal == custody.SealShamir {
		return server.OpenWithShares(ctx, cfg, shareReader(stderr))
	}
	return server.Open(ctx, cfg)
}

// config is the store configuration of an operator command: the deployment must exist (init
// and serve --dev change that).
func (s *storeFlags) config() server.Config {
	return server.Config{
		DataDir:            s.dataDir,
		DatabaseURL:        s.databaseURL,
		RequireSyncStandby: s.requireSyncStandby,
		StoreRetryFor:      s.storeRetryFor,
		MasterKeyFile:      s.masterKeyFile,
		Dev:                s.dev,
		MustExist:          true,
		Seal:               s.seal,
		Transit:            s.transit,
		PKCS11:             s.pkcs11,
		AWSKMS:             s.awskms,
		GCPKMS:             s.gcpkms,
		AzureKV:            s.azurekv,
	}
}

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	apiAddr := fs.String("api-addr", "127.0.0.1:8080", "activity API listen address")
	proxyAddr := fs.String(
		"proxy-addr",
		"127.0.0.1:8090",
		`auth proxy listen address (browser-facing /v1/*; "" serves no proxy)`,
	)
	coordinatorURL := fs.String(
		"coordinator-url",
		"",
		"activity API the auth proxy forwards to (another Latchkey's base URL); empty: this process's engine",
	)
	signupRate := fs.String(
		"proxy-signup-rate",
		authproxy.DefaultSignupRate.String(),
		"auth proxy sign-ups allowed per client address, COUNT/DURATION (0: no limit)",
	)
	otpRate := fs.String(
		"proxy-otp-rate",
		authproxy.DefaultOTPRate.String(),
		"auth proxy one-time-code sends allowed per client address, COUNT/DURATION (0: no limit)",
	)
	dashAddr := fs.String("dashboard-addr", "127.0.0.1:8070", "operator dashboard listen address (\"\" serves none)")
	var framesAddr optionalString
	fs.Var(
		&framesAddr,
		"frames-addr",
		`listen address of Latchkey's export, import and auth iframe pages (docs/frames.md); "" serves none (default "", with --dev `+devFramesAddr+`)`,
	)
	var framesAncestors listFlag
	fs.Var(
		&framesAncestors,
		"frames-ancestors",
		`comma-separated origins that may frame those pages (Content-Security-Policy frame-ancestors), beside an organization's auth proxy origins; "*" for any (empty: 'none', or * with --dev)`,
	)
	var rpIDs, origins listFlag
	fs.Var(&rpIDs, "webauthn-rp-ids", "comma-separated WebAuthn relying party ids accepted for passkeys (empty: any)")
	fs.Var(&origins, "webauthn-origins", "comma-separated origins accepted in passkey assertions (empty: any)")
	maxBody := fs.Int64("max-body-bytes", 2<<20, "largest request body accepted")
	maxInFlight := fs.Int64("max-inflight-body-bytes", admission.DefaultMaxInFlight,
		"request-body bytes held at once across the listeners; beyond it, 503 before reading")
	maxHeader := fs.Int("max-header-bytes", server.DefaultMaxHeaderBytes, "largest request headers accepted")
	var proxies listFlag
	fs.Var(
		&proxies,
		"trusted-proxies",
		"comma-separated CIDRs of reverse proxies whose X-Forwarded-For names the client (for IP allowlists)",
	)
	drain := fs.Duration("drain-timeout", 30*time.Second, "how long SIGTERM waits for in-flight requests")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	metricsAddr := fs.String(
		"metrics-addr",
		"",
		`Prometheus metrics listen address, GET /metrics (e.g. 127.0.0.1:9090; "" serves none)`,
	)
	debugAddr := fs.String(
		"debug-addr",
		"",
		"if set (e.g. 127.0.0.1:6060), serve Go's pprof profiles there; keep it on loopback",
	)
	var smtp notify.SMTP
	fs.StringVar(
		&smtp.Addr,
		"smtp-addr",
		"",
		"SMTP submission server host:port for one-time-code e-mails (empty: no e-mail; --dev writes an outbox file instead)",
	)
	fs.StringVar(&smtp.From, "smtp-from", "", "sender address of those e-mails")
	fs.StringVar(&smtp.FromName, "smtp-from-name", "", "sender display name")
	fs.StringVar(&smtp.Username, "smtp-username", "", "SMTP AUTH user (sent only over TLS)")
	fs.StringVar(
		&smtp.Password,
		"smtp-password",
		"",
		"SMTP AUTH password: from LATCHKEY_SMTP_PASSWORD or LATCHKEY_SMTP_PASSWORD_FILE only (a secret is refused on the command line)",
	)
	fs.StringVar(&smtp.Mode, "smtp-mode", notify.ModeSTARTTLS, "starttls, tls, or plain (plain only towards loopback)")
	var twilio notify.Twilio
	fs.StringVar(
		&twilio.AccountSID,
		"sms-twilio-account-sid",
		"",
		"Twilio account SID for one-time-code SMS (empty: no SMS)",
	)
	fs.StringVar(
		&twilio.AuthToken,
		"sms-twilio-auth-token",
		"",
		"Twilio auth token: from LATCHKEY_SMS_TWILIO_AUTH_TOKEN or LATCHKEY_SMS_TWILIO_AUTH_TOKEN_FILE only (a secret is refused on the command line)",
	)
	fs.StringVar(&twilio.From, "sms-twilio-from", "", "sending number (E.164) or messaging service")
	fs.StringVar(
		&twilio.BaseURL,
		"sms-twilio-base-url",
		notify.DefaultTwilioBaseURL,
		"base URL of a Twilio-compatible Messages API",
	)
	var trustedIssuers listFlag
	fs.Var(
		&trustedIssuers,
		"oidc-trusted-issuer",
		"OIDC issuer to trust beyond the well-known public ones (Google, Apple, Facebook, …); repeatable or comma-separated; plain http only on loopback",
	)
	issuerURL := fs.String(
		"oidc-issuer-url",
		"",
		"Latchkey's own OIDC issuer identifier: the public URL of <api>/oidc (default http://<api-addr>/oidc)",
	)
	discordToken := fs.String("oauth2-discord-token-url", "", "override Discord's OAuth 2.0 token endpoint")
	discordUser := fs.String("oauth2-discord-userinfo-url", "", "override Discord's user-info endpoint")
	xToken := fs.String("oauth2-x-token-url", "", "override X's OAuth 2.0 token endpoint")
	xUser := fs.String("oauth2-x-userinfo-url", "", "override X's user-info endpoint")
	var chainRPC listFlag
	fs.Var(
		&chainRPC,
		"chain-rpc",
		"CAIP2=URL chain providers (repeatable, or comma-separated), e.g. eip155:1=https://eth.example/rpc,solana:mainnet=https://sol.example (JSON-RPC; keep API keys in LATCHKEY_CHAIN_RPC)",
	)
	assetsFile := fs.String(
		"assets-file",
		"",
		"JSON file extending (or, with \"replace\": true, replacing) the built-in asset list; see docs/operations.md",
	)
	pricesFile := fs.String(
		"prices-file",
		"",
		"JSON {\"<caip19>\": \"<usd price>\"} giving balances a display.usd (Latchkey fetches no prices)",
	)
	gasStation := fs.String(
		"gas-station",
		"",
		"JSON file turning gas sponsorship on per network (delegate, caps, prices, kill switch); see docs/gas-station.md",
	)
	var qos listFlag
	fs.Var(
		&qos,
		"tvc-qos-versions",
		"comma-separated QuorumOS versions TVC deployments may name, oldest first, the last the latest (empty: any version label is recorded as given; see docs/tvc.md)",
	)
	limits := fs.String(
		"limits",
		"",
		"raise resource limits, e.g. users=1000,user-tags=100000 (names: users, user-tags, policies, api-keys-per-user, expiring-api-keys-per-user, authenticators-per-user, private-key-tags, smart-contract-interfaces; 0 or unlimited lifts a limit; default: Turnkey's documented limits)",
	)
	fs.String(
		configFlag,
		"",
		"YAML file giving any of these flags by name (api-addr: 127.0.0.1:8080); a flag or LATCHKEY_<FLAG> overrides it; secrets are refused in it",
	)
	var tlsAll server.TLSFiles
	fs.StringVar(
		&tlsAll.CertFile,
		"tls-cert-file",
		"",
		"PEM certificate (chain) every listener serves TLS with, unless it has its own; reloaded on SIGHUP",
	)
	fs.StringVar(&tlsAll.KeyFile, "tls-key-file", "", "PEM private key of --tls-cert-file")
	listenerTLS := map[string]*server.TLSFiles{
		"api":       new(server.TLSFiles),
		"proxy":     new(server.TLSFiles),
		"dashboard": new(server.TLSFiles),
		"metrics":   new(server.TLSFiles),
		"frames":    new(server.TLSFiles),
	}
	for _, l := range []string{"api", "proxy", "dashboard", "metrics", "frames"} {
		fs.StringVar(
			&listenerTLS[l].CertFile,
			l+"-tls-cert-file",
			"",
			"PEM certificate of the "+l+" listener (default --tls-cert-file)",
		)
		fs.StringVar(&listenerTLS[l].KeyFile, l+"-tls-key-file", "", "PEM private key of --"+l+"-tls-cert-file")
	}
	fs.StringVar(
		&listenerTLS["dashboard"].ClientCAFile,
		"dashboard-client-ca-file",
		"",
		"PEM CA certificates: the dashboard (served over TLS) then requires a client certificate signed by one of them, before its password sign-in",
	)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	if !sf.dev {
		// Production: no core dump of the process, no ptrace or /proc/<pid>/mem by other users.
		if err := custody.HardenProcess(); err != nil {
			log.Warn("could not make the process non-dumpable", "err", err)
		}
	}
	cfg := sf.config()
	cfg.MustExist, cfg.Exclusive = !sf.dev, true
	if cfg.Limits, err = parseLimits(*limits); err != nil {
		return err
	}
	cfg.APIAddr, cfg.ProxyAddr, cfg.DashboardAddr, cfg.CoordinatorURL = *apiAddr, *proxyAddr, *dashAddr, *coordinatorURL
	cfg.MetricsAddr = *metricsAddr
	cfg.FramesAddr, cfg.FramesAncestors = framesAddr.value, framesAncestors
	if sf.dev && !framesAddr.set {
		cfg.FramesAddr = devFramesAddr
	}
	for l, to := range map[string]*server.TLSFiles{"api": &cfg.APITLS, "proxy": &cfg.ProxyTLS, "dashboard": &cfg.DashboardTLS,
		"metrics": &cfg.MetricsTLS, "frames": &cfg.FramesTLS} {
		f := *listenerTLS[l]
		if f.CertFile == "" && f.KeyFile == "" {
			f.CertFile, f.KeyFile = tlsAll.CertFile, tlsAll.KeyFile
		}
		*to = f
	}
	for _, r := range []struct {
		flag, value string
		to          **authproxy.Rate
	}{{"--proxy-signup-rate", *signupRate, &cfg.ProxySignupRate}, {"--proxy-otp-rate", *otpRate, &cfg.ProxyOTPRate}} {
		rate, err := authproxy.ParseRate(r.value)
		if err != nil {
			return usageError{r.flag + ": " + err.Error()}
		}
		*r.to = &rate
	}
	if smtp.Addr != "" {
		if smtp.From == "" {
			return usageError{"--smtp-from is required with --smtp-addr"}
		}
		cfg.Emailer = &smtp
	}
	if twilio.AccountSID != "" {
		if twilio.AuthToken == "" || twilio.From == "" {
			return usageError{
				"--sms-twilio-auth-token and --sms-twilio-from are required with --sms-twilio-account-sid",
			}
		}
		cfg.Texter = &twilio
	}
	cfg.WebAuthnRPIDs, cfg.WebAuthnOrigins, cfg.MaxBodyBytes, cfg.Log = rpIDs, origins, *maxBody, log
	cfg.MaxInFlightBodyBytes, cfg.MaxHeaderBytes = *maxInFlight, *maxHeader
	cfg.TVCQOSVersions = qos
	if cfg.ChainRPC, err = chaindata.ParseProviders(chainRPC); err != nil {
		return usageError{err.Error()}
	}
	cfg.AssetsFile, cfg.PricesFile, cfg.GasStationFile = *assetsFile, *pricesFile, *gasStation
	cfg.OIDCTrustedIssuers, cfg.OIDCIssuerURL = trustedIssuers, *issuerURL
	cfg.OAuth2 = map[string]server.OAuth2Endpoints{
		"discord": {TokenURL: *discordToken, UserInfoURL: *discordUser},
		"x":       {TokenURL: *xToken, UserInfoURL: *xUser},
	}
	for _, c := range proxies {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return usageError{fmt.Sprintf("--trusted-proxies: %q is not a CIDR block", c)}
		}
		cfg.TrustedProxies = append(cfg.TrustedProxies, p)
	}
	// Traces over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set; flushed after Run has drained.
	stopTracing, err := tracing.Setup(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err := stopTracing(context.WithoutCancel(ctx)); err != nil {
			log.Warn("flushing traces", "err", err)
		}
	}()
	if cfg.Seal == custody.SealShamir {
		return serveSealed(ctx, cfg, *drain, *debugAddr, log)
	}
	s, err := server.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := custody.MemoryProtection(); err != nil {
		log.Warn("the master key's memory is not fully protected", "err", err)
	}
	if *debugAddr != "" {
		go serveDebug(*debugAddr, log)
	}
	return s.Run(ctx, *drain, func(string) {
		if !sf.dev {
			return
		}
		dc, created, err := s.EnsureDevOrganization(ctx, s.APIURL())
		if err != nil {
			log.Error("creating the --dev demo organization", "err", err)
			return
		}
		if dc == nil {
			return
		}
		if created {
			log.Warn(
				"DEVELOPMENT MODE: created a demo organization; its API private key is in the data directory",
				"file",
				sf.dataDir+"/"+server.DevCredentialsFile,
			)
		}
		out := map[string]string{"organizationId": dc.OrganizationID, "apiPublicKey": dc.APIPublicKey,
			"apiBaseUrl": s.APIURL(), "authProxyUrl": s.ProxyURL(), "credentials": sf.dataDir + "/" + server.DevCredentialsFile}
		if s.FramesURL() != "" {
			out["framesUrl"] = s.FramesURL()
		}
		if s.DashboardURL() != "" {
			op, opCreated, err := s.EnsureDevOperator(ctx, s.DashboardURL())
			if err != nil {
				log.Error("creating the --dev operator", "err", err)
			} else if op != nil {
				if opCreated {
					log.Warn("DEVELOPMENT MODE: created a dashboard operator; its password is in the data directory", "file", sf.dataDir+"/"+server.DevOperatorFile)
				}
				out["dashboardUrl"], out["operatorEmail"], out["operatorCredentials"] = s.DashboardURL(), op.Email, sf.dataDir+"/"+server.DevOperatorFile
			}
		}
		b, _ := json.Marshal(out)
		fmt.Fprintln(stdout, string(b))
	})
}

// devFramesAddr is where serve --dev serves the frames unless --frames-addr says otherwise
// (beside the API's 8080, the proxy's 8090 and the dashboard's 8070).
const devFramesAddr = "127.0.0.1:8060"

// optionalString is a string flag that knows whether it was given (on the command line, in the
// environment or in the configuration file), so that --dev can default it and "" still means
// none.
type optionalString struct {
	value string
	set   bool
}

func (o *optionalString) String() string { return o.value }
func (o *optionalString) Set(v string) error {
	o.value, o.set = v, true
	return nil
}

func cmdInit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	orgName := fs.String("org-name", "", "name of the new top-level organization (required)")
	userName := fs.String("user-name", "", "name of its root user (required)")
	userEmail := fs.String("user-email", "", "e-mail address of the root user")
	pub := fs.String("api-public-key", "", "the root user's API public key, hex (required)")
	curve := fs.String(
		"api-key-curve",
		"API_KEY_CURVE_P256",
		"API_KEY_CURVE_P256, API_KEY_CURVE_SECP256K1 or API_KEY_CURVE_ED25519",
	)
	keyShares := fs.Int(
		"key-shares",
		0,
		"--seal shamir: split the new master key into this many shares (2…255), printed once",
	)
	keyThreshold := fs.Int("key-threshold", 0, "--seal shamir: how many of the shares unseal (2…--key-shares)")
	var recipients listFlag
	fs.Var(
		&recipients,
		"share-recipients",
		"--seal shamir: age X25519 recipients (age1…), one per share in order: each share is printed encrypted to its holder",
	)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	for name, v := range map[string]string{"org-name": *orgName, "user-name": *userName, "api-public-key": *pub} {
		if v == "" {
			return usageError{"--" + name + " is required"}
		}
	}
	log, _ := newLogger(stderr, "warn")
	cfg := sf.config()
	cfg.MustExist, cfg.Log = false, log // init makes the deployment
	if cfg.KeyShares, cfg.KeyThreshold = *keyShares, *keyThreshold; sf.seal == custody.SealShamir {
		if *keyShares == 0 || *keyThreshold == 0 {
			return usageError{
				"--seal shamir needs --key-shares N and --key-threshold K: the master key is split into N shares, any K of which unseal",
			}
		}
		cfg.NewShares = printShares(stdout, stderr, nil)
		if len(recipients) > 0 {
			to, err := custody.ParseShareRecipients(recipients, *keyShares)
			if err != nil {
				return usageError{err.Error()}
			}
			cfg.NewShares = printShares(stdout, stderr, to)
		}
	} else if len(recipients) > 0 {
		return usageError{"--share-recipients encrypts the shares of --seal shamir: give --seal shamir"}
	}
	s, err := server.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	c, err := s.CreateOrganization(
		ctx,
		server.OrgSpec{
			OrgName:      *orgName,
			UserName:     *userName,
			UserEmail:    *userEmail,
			APIPublicKey: *pub,
			APIKeyCurve:  *curve,
		},
	)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(c)
	fmt.Fprintln(stdout, string(b))
	return nil
}

func cmdKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	rotate := len(args) > 0 && args[0] == "rotate"
	name := "keys"
	if rotate {
		name, args = "keys rotate", args[1:]
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	var keys listFlag
	var overlap, grace *time.Duration
	if rotate {
		fs.Var(&keys, "key", fmt.Sprintf("the server key to rotate (repeatable): %v", custody.Rotatable))
		overlap = fs.Duration(
			"overlap",
			7*24*time.Hour,
			"how long the next key is published beside the current one before it takes over",
		)
		grace = fs.Duration(
			"grace",
			24*time.Hour,
			"how long the replaced key still verifies what it signed after the next one took over",
		)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if rotate && len(keys) == 0 {
		return usageError{
			fmt.Sprintf("latchkey keys rotate --key NAME [--overlap D] [--grace D]: name one of %v", custody.Rotatable),
		}
	}
	s, err := sf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer s.Close()
	if rotate {
		var out []custody.Rotation
		for _, k := range keys {
			r, err := custody.RotateServerKey(
				ctx,
				s.Store,
				s.Keyring,
				custody.ServerKey(k),
				*overlap,
				*grace,
				time.Now(),
			)
			if err != nil {
				return err
			}
			audit(ctx, s.Store, stderr, "server key rotation", k, r)
			out = append(out, r)
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	b, _ := json.MarshalIndent(s.PublicKeys(), "", "  ")
	fmt.Fprintln(stdout, string(b))
	return nil
}

func cmdVersion(stdout io.Writer) error {
	fmt.Fprintln(stdout, "latchkey", server.BuildInfo())
	return nil
}

func parseLimits(spec string) (directory.Limits, error) {
	l := directory.DefaultLimits
	names := l.LimitNames()
	for _, kv := range strings.Split(spec, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		p := names[strings.TrimSpace(k)]
		v = strings.TrimSpace(v)
		n, err := strconv.Atoi(v)
		if v == "unlimited" {
			n, err = 0, nil
		}
		if !ok || p == nil || err != nil || n < 0 {
			return l, usageError{
				fmt.Sprintf("--limits: %q is not name=number (or name=unlimited) with a known name", kv),
			}
		}
		*p = n
	}
	return l, nil
}

func cmdKeyring(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = "usage: latchkey keyring rotate|rewrap|status [store flags]"
	if len(args) == 0 {
		return usageError{usage}
	}
	sub := args[0]
	fs := flag.NewFlagSet("keyring "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	var to server.RewrapTarget
	var recipients listFlag
	switch sub {
	case "rotate", "status":
	case "rewrap":
		fs.StringVar(
			&to.Seal,
			"new-seal",
			"",
			"the seal of the new master key: file, or a wrapping seal configured by its own flags (default: the current seal)",
		)
		fs.StringVar(
			&to.MasterKeyFile,
			"new-master-key-file",
			"",
			"with a file seal: where the new master key is written (must not exist)",
		)
		fs.IntVar(
			&to.KeyShares,
			"new-key-shares",
			0,
			"with --new-seal shamir: split the new master key into this many shares (2…255), printed once",
		)
		fs.IntVar(&to.KeyThreshold, "new-key-threshold", 0, "with --new-seal shamir: how many of the new shares unseal")
		fs.Var(
			&recipients,
			"new-share-recipients",
			"with --new-seal shamir: age X25519 recipients (age1…), one per new share in order",
		)
	default:
		return usageError{usage}
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if to.Seal == custody.SealShamir {
		to.NewShares = printShares(stdout, stderr, nil)
		if len(recipients) > 0 {
			r, err := custody.ParseShareRecipients(recipients, to.KeyShares)
			if err != nil {
				return usageError{err.Error()}
			}
			to.NewShares = printShares(stdout, stderr, r)
		}
	}
	s, err := sf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer s.Close()
	var out any
	switch sub {
	case "rotate":
		v, err := s.Keyring.Rotate(ctx, s.Store)
		if err != nil {
			return err
		}
		audit(ctx, s.Store, stderr, "keyring rotated", "", map[string]any{"activeVersion": v})
		out = map[string]any{"activeVersion": v}
	case "rewrap":
		res, err := s.RewrapMasterKey(ctx, to)
		if err != nil {
			return err
		}
		audit(ctx, s.Store, stderr, "master key rewrapped", "", res)
		out = res
	case "status":
		if out, err = s.KeyringStatus(ctx); err != nil {
			return err
		}
	}
	b, _ := json.Marshal(out)
	fmt.Fprintln(stdout, string(b))
	return nil
}
