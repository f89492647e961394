package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
)

// TLSFiles are one listener's TLS files, PEM encoded. An empty CertFile serves plain HTTP.
// ClientCAFile, when set, requires every client to present a certificate signed by one of the
// CAs it holds (mutual TLS). All are read again on SIGHUP (Server.ReloadTLS).
type TLSFiles struct {
	CertFile, KeyFile, ClientCAFile string
}

func (f TLSFiles) enabled() bool { return f.CertFile != "" || f.KeyFile != "" || f.ClientCAFile != "" }

// check refuses an incomplete set: a certificate without its key, or a client CA without a
// certificate of the listener's own.
func (f TLSFiles) check(listener string) error {
	if (f.CertFile == "") != (f.KeyFile == "") {
		return fmt.Errorf("TLS for the %s listener: give both a certificate file and a key file", listener)
	}
	if f.ClientCAFile != "" && f.CertFile == "" {
		return fmt.Errorf(
			"TLS for the %s listener: client certificates need TLS: give a certificate and key file too",
			listener,
		)
	}
	return nil
}

// tlsListener holds one listener's certificate (and client CAs) and swaps them atomically on
// reload, so a handshake sees either the old pair or the new one, never half of each.
type tlsListener struct {
	name  string
	files TLSFiles
	cert  atomic.Pointer[tls.Certificate]
	cas   atomic.Pointer[x509.CertPool]
}

// reload reads the files again; on any error it keeps what it had.
func (l *tlsListener) reload() error {
	cert, err := tls.LoadX509KeyPair(l.files.CertFile, l.files.KeyFile)
	if err != nil {
		return fmt.Errorf("TLS for the %s listener: %w", l.name, err)
	}
	if cert.Leaf == nil || len(cert.Certificate) == 0 {
		return fmt.Errorf("TLS for the %s listener: %s holds no certificate", l.name, l.files.CertFile)
	}
	var pool *x509.CertPool
	if l.files.ClientCAFile != "" {
		pem, err := os.ReadFile(l.files.ClientCAFile)
		if err != nil {
			return fmt.Errorf("TLS for the %s listener: client CAs: %w", l.name, err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("TLS for the %s listener: %s holds no PEM certificate", l.name, l.files.ClientCAFile)
		}
	}
	l.cert.Store(&cert)
	l.cas.Store(pool)
	return nil
}

// config is the listener's tls.Config: each handshake takes the pair current at that moment.
func (l *tlsListener) config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{*l.cert.Load()},
				NextProtos:   []string{"h2", "http/1.1"},
			}
			if cas := l.cas.Load(); cas != nil {
				c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, cas
			}
			return c, nil
		},
	}
}

// wrap serves TLS on ln when l is configured (a nil l serves ln as it is).
func (l *tlsListener) wrap(ln net.Listener) net.Listener {
	if l == nil {
		return ln
	}
	return tls.NewListener(ln, l.config())
}

func (l *tlsListener) scheme() string {
	if l == nil {
		return "http://"
	}
	return "https://"
}

// listenerTLS pairs each listener's name (as Run and the errors call it) with its TLS files.
func (cfg Config) listenerTLS() []struct {
	name  string
	files TLSFiles
} {
	return []struct {
		name  string
		files TLSFiles
	}{{"api", cfg.APITLS}, {"proxy", cfg.ProxyTLS}, {"dashboard", cfg.DashboardTLS}, {"metrics", cfg.MetricsTLS},
		{"frames", cfg.FramesTLS}}
}

// loadTLS loads every listener's TLS files (Config.Validate checked that each set is
// complete): called by Open before the store is opened, so a bad certificate path fails at
// start, not at the first handshake.
func loadTLS(cfg Config) (map[string]*tlsListener, error) {
	out := map[string]*tlsListener{}
	for _, l := range cfg.listenerTLS() {
		if !l.files.enabled() {
			continue
		}
		tl := &tlsListener{name: l.name, files: l.files}
		if err := tl.reload(); err != nil {
			return nil, err
		}
		out[l.name] = tl
	}
	return out, nil
}

// ReloadTLS reads every listener's certificate, key and client CAs again (serve calls it on
// SIGHUP). A listener whose files fail to load keeps serving what it had; the errors are
// returned together.
func (s *Server) ReloadTLS() error {
	var errs []error
	for _, l := range s.tls {
		errs = append(errs, l.reload())
	}
	return errors.Join(errs...)
}
