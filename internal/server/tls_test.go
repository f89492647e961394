package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/server"
)

// testCA is a certificate authority for TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM certificate and key for a server on 127.0.0.1 (client: for a client).
func (ca *testCA) issue(t *testing.T, cn string, client bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	if client {
		tmpl.ExtKeyUsage, tmpl.IPAddresses = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	return pem.EncodeToMemory(
			&pem.Block{Type: "CERTIFICATE", Bytes: der},
		), pem.EncodeToMemory(
			&pem.Block{Type: "PRIVATE KEY", Bytes: kder},
		)
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Every listener serves TLS with its own files, the dashboard asks for a client certificate
// signed by the configured CA, and SIGHUP swaps in renewed certificates without a restart (a
// broken renewal keeps the previous pair).
func TestTLSListenersAndReloadOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	mk := filepath.Join(dir, "master.key")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	serverCA, clientCA := newTestCA(t, "server CA"), newTestCA(t, "client CA")
	certFile, keyFile, caFile := filepath.Join(
		dir,
		"tls.crt",
	), filepath.Join(
		dir,
		"tls.key",
	), filepath.Join(
		dir,
		"clients.pem",
	)
	c, k := serverCA.issue(t, "first", false)
	writeFile(t, certFile, c)
	writeFile(t, keyFile, k)
	writeFile(t, caFile, clientCA.pem)
	clientCert, clientKey := clientCA.issue(t, "operator", true)
	clientPair, err := tls.X509KeyPair(clientCert, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	strangerCert, strangerKey := newTestCA(t, "another CA").issue(t, "stranger", true)
	strangerPair, _ := tls.X509KeyPair(strangerCert, strangerKey)

	var logs lockedBuffer
	files := server.TLSFiles{CertFile: certFile, KeyFile: keyFile}
	s, err := server.Open(
		context.Background(),
		server.Config{DataDir: dir, MasterKeyFile: mk, APIAddr: "127.0.0.1:0", ProxyAddr: "127.0.0.1:0",
			DashboardAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", FramesAddr: "127.0.0.1:0",
			APITLS: files, ProxyTLS: files, MetricsTLS: files, FramesTLS: files,
			DashboardTLS: server.TLSFiles{CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile},
			Log:          slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, stop := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, 5*time.Second, func(string) { close(ready) }) }()
	<-ready
	defer func() { stop(); <-done }()

	roots := x509.NewCertPool()
	roots.AddCert(serverCA.cert)
	// get fetches url over a new connection (no reuse: each call sees the certificate served
	// now) and returns the status and the server certificate's common name.
	get := func(url string, certs ...tls.Certificate) (int, string, error) {
		tr := &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: roots, Certificates: certs},
			DisableKeepAlives: true,
		}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.TLS.PeerCertificates[0].Subject.CommonName, nil
	}
	for _, u := range []string{s.APIURL(), s.ProxyURL(), s.DashboardURL(), s.MetricsURL(), s.FramesURL()} {
		if !strings.HasPrefix(u, "https://") {
			t.Fatalf("a TLS listener's URL: %q", u)
		}
	}
	for _, u := range []string{s.APIURL() + "/livez", s.MetricsURL() + "/metrics", s.ProxyURL() + "/v1/no_such_thing",
		s.FramesURL() + "/export"} {
		code, cn, err := get(u)
		if err != nil || cn != "first" || code == 0 {
			t.Fatalf("GET %s: %d %q %v", u, code, cn, err)
		}
	}
	// Latchkey's own OIDC issuer follows the API's scheme.
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
	resp, err := (&http.Client{Transport: tr}).Get(s.APIURL() + "/oidc/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	var disc struct{ Issuer string }
	json.NewDecoder(resp.Body).Decode(&disc)
	resp.Body.Close()
	tr.CloseIdleConnections()
	if !strings.HasPrefix(disc.Issuer, "https://127.0.0.1:") {
		t.Fatalf("issuer over TLS: %q", disc.Issuer)
	}

	// The dashboard: no client certificate, or one from another CA, is refused in the handshake.
	for name, certs := range map[string][]tls.Certificate{"none": nil, "another CA": {strangerPair}} {
		if code, _, err := get(s.DashboardURL()+"/login", certs...); err == nil {
			t.Fatalf("dashboard with client certificate %s: %d, want a refused handshake", name, code)
		}
	}
	if code, _, err := get(s.DashboardURL()+"/login", clientPair); err != nil || code != http.StatusOK {
		t.Fatalf("dashboard with the operator's certificate: %d %v", code, err)
	}

	// Renewal: new files, SIGHUP, new connections see the new certificate.
	c, k = serverCA.issue(t, "second", false)
	writeFile(t, certFile, c)
	writeFile(t, keyFile, k)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitUntil(
		t,
		func() bool { _, cn, err := get(s.APIURL() + "/livez"); return err == nil && cn == "second" },
		"the renewed certificate",
	)
	if _, cn, err := get(s.DashboardURL()+"/login", clientPair); err != nil || cn != "second" {
		t.Fatalf("dashboard after SIGHUP: %q %v", cn, err)
	}

	// A broken renewal (half-written file) keeps the previous pair and says so.
	writeFile(t, certFile, []byte("-----BEGIN CERTIFICATE-----\nnot a certificate\n"))
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitUntil(
		t,
		func() bool { return strings.Contains(string(logs.Bytes()), "reloading TLS certificates failed") },
		"the failed reload's log line",
	)
	if _, cn, err := get(s.APIURL() + "/livez"); err != nil || cn != "second" {
		t.Fatalf("after a failed reload: %q %v", cn, err)
	}
}

func waitUntil(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Configuration that names something unusable is refused by Open before the data directory (or
// --dev's master key) is written: Config.Validate, then the TLS, asset and price files.
func TestConfigurationRefusedBeforeAnythingIsWritten(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "CA")
	c, k := ca.issue(t, "x", false)
	cert, key := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	writeFile(t, cert, c)
	writeFile(t, key, k)
	_, otherKey := ca.issue(t, "y", false)
	other := filepath.Join(dir, "other.pem")
	writeFile(t, other, otherKey)
	for _, tc := range []struct {
		name string
		cfg  func(*server.Config)
		want string
	}{
		{"certificate without key", func(c *server.Config) { c.APITLS = server.TLSFiles{CertFile: cert} }, "api listener: give both"},
		{"key without certificate", func(c *server.Config) { c.ProxyTLS = server.TLSFiles{KeyFile: key} }, "proxy listener: give both"},
		{"client CA without TLS", func(c *server.Config) { c.DashboardTLS = server.TLSFiles{ClientCAFile: cert} }, "client certificates need TLS"},
		{"missing certificate file", func(c *server.Config) {
			c.MetricsTLS = server.TLSFiles{CertFile: filepath.Join(dir, "nope.pem"), KeyFile: key}
		}, "metrics listener"},
		{"key of another certificate", func(c *server.Config) { c.APITLS = server.TLSFiles{CertFile: cert, KeyFile: other} }, "api listener"},
		{"client CA file without certificates", func(c *server.Config) {
			c.DashboardTLS = server.TLSFiles{CertFile: cert, KeyFile: key, ClientCAFile: key}
		}, "holds no PEM certificate"},
		{"coordinator URL", func(c *server.Config) { c.CoordinatorURL = "ftp://x" }, "--coordinator-url"},
		{"issuer URL", func(c *server.Config) { c.OIDCIssuerURL = "http://public.example/oidc" }, "--oidc-issuer-url"},
		{"assets file", func(c *server.Config) { c.AssetsFile = filepath.Join(dir, "missing.json") }, "missing.json"},
		{"prices file", func(c *server.Config) { c.PricesFile = filepath.Join(dir, "missing-prices.json") }, "missing-prices.json"},
		{"QuorumOS versions", func(c *server.Config) { c.TVCQOSVersions = []string{"a b"} }, ""},
		{"frames certificate without key", func(c *server.Config) { c.FramesTLS = server.TLSFiles{CertFile: cert} },
			"frames listener: give both"},
		{"frames ancestors", func(c *server.Config) { c.FramesAncestors = []string{"*", "https://a.example"} },
			"--frames-ancestors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			cfg := server.Config{DataDir: data, Dev: true, APIAddr: "127.0.0.1:0"}
			tc.cfg(&cfg)
			s, err := server.Open(context.Background(), cfg)
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want %q", err, tc.want)
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				t.Fatalf("the data directory was created: %v", err)
			}
		})
	}
}

// When a later listener cannot bind, Run fails naming it and releases the ones it had bound.
func TestRunReleasesListenersWhenOneFails(t *testing.T) {
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	apiAddr := free.Addr().String()
	free.Close()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	s, err := server.Open(
		context.Background(),
		server.Config{DataDir: t.TempDir(), Dev: true, APIAddr: apiAddr, ProxyAddr: "127.0.0.1:0",
			DashboardAddr: taken.Addr().String(), Log: slog.New(slog.DiscardHandler)},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Run(context.Background(), time.Second, nil); err == nil ||
		!strings.Contains(err.Error(), "--dashboard-addr") {
		t.Fatalf("Run with a taken dashboard address: %v", err)
	}
	again, err := net.Listen("tcp", apiAddr)
	if err != nil {
		t.Fatalf("the API listener was leaked: %v", err)
	}
	again.Close()
}
