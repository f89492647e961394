package notify

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/latchkey/latchkey/internal/outbound"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"strings"
	"time"
)

// SMTP modes.
const (
	// ModeSTARTTLS connects in the clear and upgrades with STARTTLS before
	// anything else; a server that does not offer STARTTLS is refused.
	ModeSTARTTLS = "starttls"
	// ModeTLS speaks TLS from the first byte (port 465 style).
	ModeTLS = "tls"
	// ModePlain never uses TLS. Allowed only towards loopback addresses (test
	// servers) and never with credentials.
	ModePlain = "plain"
)

// SMTP sends e-mail through an SMTP submission server. The zero value is not
// usable; fill Addr and From. Safe for concurrent use: every message uses its
// own connection.
type SMTP struct {
	// Addr is host:port of the server.
	Addr string
	// From is the envelope sender and the From address, a bare address.
	From string
	// FromName is the default display name (a Message's FromName wins).
	FromName string
	// Username and Password enable AUTH PLAIN, only ever sent over TLS.
	Username, Password string
	// Mode is ModeSTARTTLS (default), ModeTLS or ModePlain.
	Mode string
	// DialTimeout bounds connecting (default 10 s); Timeout bounds the whole
	// exchange (default 30 s).
	DialTimeout, Timeout time.Duration
	// RootCAs overrides the system roots (tests); nil means the system pool.
	RootCAs *x509.CertPool
	// LocalName is sent in EHLO (default "localhost").
	LocalName string
	// Now is the clock for the Date header (default time.Now).
	Now func() time.Time
}

var _ Emailer = (*SMTP)(nil)

func (s *SMTP) check() (host string, err error) {
	host, _, err = net.SplitHostPort(s.Addr)
	if err != nil || host == "" {
		return "", fmt.Errorf("notify: smtp address %q must be host:port", s.Addr)
	}
	if _, err := mail.ParseAddress(s.From); err != nil || strings.ContainsAny(s.From, "<>\r\n ") {
		return "", fmt.Errorf("notify: smtp sender %q is not a bare e-mail address", s.From)
	}
	switch s.mode() {
	case ModeSTARTTLS, ModeTLS:
	case ModePlain:
		if !isLoopbackHost(host) {
			return "", fmt.Errorf(
				"notify: smtp mode %q is only allowed towards loopback addresses, not %q",
				ModePlain,
				host,
			)
		}
		if s.Username != "" || s.Password != "" {
			return "", errors.New("notify: smtp refuses to authenticate without TLS (mode plain with a username)")
		}
	default:
		return "", fmt.Errorf("notify: unknown smtp mode %q (starttls, tls or plain)", s.Mode)
	}
	return host, nil
}

// Check validates the configuration without connecting.
func (s *SMTP) Check() error {
	_, err := s.check()
	return err
}

func (s *SMTP) mode() string {
	if s.Mode == "" {
		return ModeSTARTTLS
	}
	return strings.ToLower(s.Mode)
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SendEmail delivers m. The error names the SMTP step that failed and the
// server's reply; it never contains the password or the message body.
func (s *SMTP) SendEmail(ctx context.Context, m Message) error {
	if err := outbound.Check(ctx, "SMTP send"); err != nil {
		return err
	}
	host, err := s.check()
	if err != nil {
		return err
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	raw, err := BuildMIME(s.From, s.FromName, m, now())
	if err != nil {
		return err
	}
	secrets := []string{s.Password}

	dialTimeout := s.DialTimeout
	if dialTimeout <= 0 {
		dialTimeout = 10 * time.Second
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	tlsConfig := &tls.Config{ServerName: host, RootCAs: s.RootCAs, MinVersion: tls.VersionTLS12}
	d := &net.Dialer{Timeout: dialTimeout}
	var conn net.Conn
	if s.mode() == ModeTLS {
		td := &tls.Dialer{NetDialer: d, Config: tlsConfig}
		conn, err = td.DialContext(ctx, "tcp", s.Addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", s.Addr)
	}
	if err != nil {
		return fmt.Errorf("%w: smtp connect to %s: %v", ErrDelivery, s.Addr, err)
	}
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	// Close the connection when the context ends so a stuck server cannot
	// hold the caller past its deadline.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return smtpErr("greeting", err, secrets)
	}
	defer c.Close()
	local := s.LocalName
	if local == "" {
		local = "localhost"
	}
	if err := c.Hello(local); err != nil {
		return smtpErr("EHLO", err, secrets)
	}
	if s.mode() == ModeSTARTTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return fmt.Errorf(
				"%w: smtp server %s does not offer STARTTLS; refusing to continue without TLS",
				ErrDelivery,
				s.Addr,
			)
		}
		if err := c.StartTLS(tlsConfig); err != nil {
			return smtpErr("STARTTLS", err, secrets)
		}
	}
	if s.Username != "" || s.Password != "" {
		if _, isTLS := c.TLSConnectionState(); !isTLS {
			return fmt.Errorf("%w: smtp refuses to authenticate without TLS", ErrDelivery)
		}
		if ok, _ := c.Extension("AUTH"); !ok {
			return fmt.Errorf("%w: smtp server %s does not offer AUTH", ErrDelivery, s.Addr)
		}
		if err := c.Auth(smtp.PlainAuth("", s.Username, s.Password, host)); err != nil {
			return smtpErr("AUTH", err, secrets)
		}
	}
	if err := c.Mail(s.From); err != nil {
		return smtpErr("MAIL FROM", err, secrets)
	}
	if err := c.Rcpt(m.To); err != nil {
		return smtpErr("RCPT TO", err, secrets)
	}
	w, err := c.Data()
	if err != nil {
		return smtpErr("DATA", err, secrets)
	}
	if _, err := w.Write(raw); err != nil {
		return smtpErr("DATA", err, secrets)
	}
	if err := w.Close(); err != nil {
		return smtpErr("end of DATA", err, secrets)
	}
	if err := c.Quit(); err != nil {
		// The message was accepted at the end of DATA; a failed QUIT does
		// not undo that.
		return nil
	}
	return nil
}

func smtpErr(step string, err error, secrets []string) error {
	var te *textproto.Error
	if errors.As(err, &te) {
		return fmt.Errorf(
			"%w: smtp %s refused: %d %s",
			ErrDelivery,
			step,
			te.Code,
			clip(redact(te.Msg, secrets...), 200),
		)
	}
	return fmt.Errorf("%w: smtp %s: %s", ErrDelivery, step, clip(redact(err.Error(), secrets...), 200))
}

// BuildMIME renders m as an RFC 5322 message with CRLF line endings, from
// the bare address from (display name fromName unless m.FromName is set).
// Exposed for the outbox and for tests.
func BuildMIME(from, fromName string, m Message, now time.Time) ([]byte, error) {
	if err := validateMessage(m); err != nil {
		return nil, err
	}
	name := fromName
	if m.FromName != "" {
		name = m.FromName
	}
	if strings.ContainsAny(name, "\r\n") {
		return nil, fmt.Errorf("%w: sender name contains a line break", ErrInvalidMessage)
	}
	var b bytes.Buffer
	header := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	header("Date", now.Format(time.RFC1123Z))
	header("Message-ID", messageID(from))
	header("From", (&mail.Address{Name: name, Address: from}).String())
	header("To", (&mail.Address{Address: m.To}).String())
	if m.ReplyTo != "" {
		header("Reply-To", (&mail.Address{Address: m.ReplyTo}).String())
	}
	header("Subject", mime.QEncoding.Encode("utf-8", m.Subject))
	header("MIME-Version", "1.0")
	header("Auto-Submitted", "auto-generated")

	mw := multipart.NewWriter(&b)
	header("Content-Type", mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": mw.Boundary()}))
	b.WriteString("\r\n")
	// Least preferred first (RFC 2046 §5.1.4): text, then HTML.
	for _, part := range []struct{ ctype, body string }{
		{"text/plain; charset=utf-8", m.Text},
		{"text/html; charset=utf-8", m.HTML},
	} {
		if part.body == "" {
			continue
		}
		pw, err := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {part.ctype},
			"Content-Transfer-Encoding": {"quoted-printable"},
		})
		if err != nil {
			return nil, err
		}
		if err := writeQP(pw, part.body); err != nil {
			return nil, err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeQP(w io.Writer, body string) error {
	qp := quotedprintable.NewWriter(w)
	body = strings.ReplaceAll(body, "\r\n", "\n")
	if _, err := io.WriteString(qp, body); err != nil {
		return err
	}
	return qp.Close()
}

func validateMessage(m Message) error {
	if err := bareAddress("recipient", m.To); err != nil {
		return err
	}
	if m.ReplyTo != "" {
		if err := bareAddress("reply-to", m.ReplyTo); err != nil {
			return err
		}
	}
	if strings.ContainsAny(m.Subject, "\r\n") {
		return fmt.Errorf("%w: subject contains a line break", ErrInvalidMessage)
	}
	if m.Text == "" && m.HTML == "" {
		return fmt.Errorf("%w: no body", ErrInvalidMessage)
	}
	return nil
}

func bareAddress(what, addr string) error {
	a, err := mail.ParseAddress(addr)
	if err != nil || a.Address != addr || a.Name != "" || strings.ContainsAny(addr, "\r\n<> ") {
		return fmt.Errorf("%w: %s is not a bare e-mail address", ErrInvalidMessage, what)
	}
	return nil
}

func messageID(from string) string {
	domain := "latchkey.invalid"
	if i := strings.LastIndexByte(from, '@'); i >= 0 && i+1 < len(from) {
		domain = from[i+1:]
	}
	var r [16]byte
	_, _ = rand.Read(r[:])
	return "<" + hex.EncodeToString(r[:]) + "@" + domain + ">"
}
