package notify

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"math/big"
	"net"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCert makes a self-signed certificate for 127.0.0.1 and localhost and
// a pool that trusts it.
func testCert(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "notify test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// smtpServer is a small ESMTP server: EHLO/HELO, STARTTLS, AUTH PLAIN, MAIL,
// RCPT, DATA, RSET, NOOP, QUIT. It records what each session did.
type smtpServer struct {
	t        testing.TB
	ln       net.Listener
	cert     tls.Certificate
	pool     *x509.CertPool
	implicit bool   // TLS from the first byte
	noTLS    bool   // do not offer STARTTLS
	user     string // expected AUTH PLAIN user
	pass     string
	rcptErr  string // e.g. "550 5.1.1 mailbox unavailable"

	mu       sync.Mutex
	sessions []*smtpSession
	wg       sync.WaitGroup
	active   sync.WaitGroup // sessions still running
}

type smtpSession struct {
	Commands           []string // verbs in order, "STARTTLS", "AUTH", ...
	TLS                bool     // the session ended on TLS
	AuthOverTLS        bool
	AuthUser, AuthPass string
	From               string
	Rcpt               []string
	Data               string
}

func newSMTPServer(t testing.TB, configure func(*smtpServer)) *smtpServer {
	t.Helper()
	cert, pool := testCert(t)
	s := &smtpServer{t: t, cert: cert, pool: pool}
	if configure != nil {
		configure(s)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if s.implicit {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
	}
	s.ln = ln
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *smtpServer) Addr() string { return s.ln.Addr().String() }

// Sessions waits for every accepted session to end, then returns them.
func (s *smtpServer) Sessions() []*smtpSession {
	s.active.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*smtpSession(nil), s.sessions...)
}

func (s *smtpServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		s.active.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			sess := &smtpSession{}
			s.mu.Lock()
			s.sessions = append(s.sessions, sess)
			s.mu.Unlock()
			defer s.active.Done()
			s.handle(c, sess)
		}()
	}
}

func (s *smtpServer) handle(conn net.Conn, sess *smtpSession) {
	_, isTLS := conn.(*tls.Conn)
	tp := textproto.NewConn(conn)
	reply := func(lines ...string) {
		for _, l := range lines {
			_ = tp.PrintfLine("%s", l)
		}
	}
	reply("220 test.invalid ESMTP ready")
	for {
		line, err := tp.ReadLine()
		if err != nil {
			sess.TLS = isTLS
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		verb = strings.ToUpper(verb)
		sess.Commands = append(sess.Commands, verb)
		switch verb {
		case "EHLO", "HELO":
			ext := []string{"250-test.invalid"}
			if !isTLS && !s.noTLS {
				ext = append(ext, "250-STARTTLS")
			}
			ext = append(ext, "250-8BITMIME", "250 AUTH PLAIN")
			reply(ext...)
		case "STARTTLS":
			if isTLS || s.noTLS {
				reply("503 5.5.1 TLS not available")
				continue
			}
			reply("220 2.0.0 go ahead")
			tc := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{s.cert}})
			if err := tc.Handshake(); err != nil {
				return
			}
			conn, isTLS = tc, true
			tp = textproto.NewConn(conn)
		case "AUTH":
			mech, resp, _ := strings.Cut(arg, " ")
			if !strings.EqualFold(mech, "PLAIN") {
				reply("504 5.5.4 mechanism not supported")
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(resp)
			parts := strings.Split(string(raw), "\x00")
			if err != nil || len(parts) != 3 {
				reply("501 5.5.2 bad response")
				continue
			}
			sess.AuthOverTLS = isTLS
			sess.AuthUser, sess.AuthPass = parts[1], parts[2]
			if parts[1] != s.user || parts[2] != s.pass {
				reply("535 5.7.8 authentication failed")
				continue
			}
			reply("235 2.7.0 authenticated")
		case "MAIL":
			sess.From = arg
			reply("250 2.1.0 ok")
		case "RCPT":
			if s.rcptErr != "" {
				reply(s.rcptErr)
				continue
			}
			sess.Rcpt = append(sess.Rcpt, arg)
			reply("250 2.1.5 ok")
		case "DATA":
			reply("354 end with <CRLF>.<CRLF>")
			b, err := tp.ReadDotBytes()
			if err != nil {
				return
			}
			sess.Data = string(b)
			reply("250 2.0.0 queued")
		case "RSET", "NOOP":
			reply("250 2.0.0 ok")
		case "QUIT":
			reply("221 2.0.0 bye")
			sess.TLS = isTLS
			return
		default:
			reply("502 5.5.2 command not recognized")
		}
	}
}

// silentListener accepts connections and never says anything.
func silentListener(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(done)
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}
