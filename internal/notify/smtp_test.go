package notify

import (
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"testing"
	"time"
)

type mimePart struct{ ctype, body string }

// parseCaptured splits a captured DATA section into headers and parts.
func parseCaptured(t *testing.T, data string) (*mail.Message, []mimePart) {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(data))
	if err != nil {
		t.Fatalf("captured message does not parse: %v", err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("Content-Type = %q, want multipart/alternative", msg.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	var parts []mimePart
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if p.Header.Get("Content-Transfer-Encoding") != "quoted-printable" {
			t.Fatalf("part encoding = %q", p.Header.Get("Content-Transfer-Encoding"))
		}
		b, err := io.ReadAll(quotedprintable.NewReader(p))
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, mimePart{p.Header.Get("Content-Type"), string(b)})
	}
	return msg, parts
}

func TestSMTPStartTLSAuthAndMessage(t *testing.T) {
	srv := newSMTPServer(t, func(s *smtpServer) { s.user, s.pass = "mailer", "s3cret-pass" })
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	s := &SMTP{
		Addr: srv.Addr(), From: "no-reply@latchkey.test", FromName: "Latchkey",
		Username: "mailer", Password: "s3cret-pass", RootCAs: srv.pool,
		Now: func() time.Time { return now },
	}
	m, err := RenderOTPEmail(OTPEmail{
		To: "alice@example.com", AppName: "Acme", LogoURL: "https://acme.test/logo.png",
		Code: "ABC123XYZ", ExpiryMinutes: 5, SenderName: "Ácme Støre", ReplyTo: "help@acme.test",
		TemplateValues: map[string]string{"greeting": "Hi <b>Alice</b>,", "footer": "Acme Inc."},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A line that starts with a dot must survive dot-stuffing.
	m.Text += "\n.hidden line\n"
	if err := s.SendEmail(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	sessions := srv.Sessions()
	if len(sessions) != 1 {
		t.Fatalf("%d sessions, want 1", len(sessions))
	}
	sess := sessions[0]
	order := strings.Join(sess.Commands, " ")
	if want := "EHLO STARTTLS EHLO AUTH MAIL RCPT DATA QUIT"; order != want {
		t.Fatalf("commands %q, want %q", order, want)
	}
	if !sess.AuthOverTLS || !sess.TLS {
		t.Fatal("AUTH was not sent over TLS")
	}
	if sess.AuthUser != "mailer" || sess.AuthPass != "s3cret-pass" {
		t.Fatalf("auth %q/%q", sess.AuthUser, sess.AuthPass)
	}
	if !strings.HasPrefix(sess.From, "FROM:<no-reply@latchkey.test>") || len(sess.Rcpt) != 1 ||
		sess.Rcpt[0] != "TO:<alice@example.com>" {
		t.Fatalf("envelope %q %q", sess.From, sess.Rcpt)
	}
	msg, parts := parseCaptured(t, sess.Data)
	h := msg.Header
	if got := h.Get("Date"); got != "Sun, 22 Nov 2026 09:00:00 +0000" {
		t.Errorf("Date = %q", got)
	}
	if id := h.Get("Message-ID"); !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@latchkey.test>") {
		t.Errorf("Message-ID = %q", id)
	}
	if raw := h.Get("From"); !strings.Contains(raw, "=?utf-8?") {
		t.Errorf("From %q: non-ASCII display name is not RFC 2047 encoded", raw)
	}
	from, err := h.AddressList("From")
	if err != nil || len(from) != 1 || from[0].Name != "Ácme Støre" || from[0].Address != "no-reply@latchkey.test" {
		t.Errorf("From = %v, %v", from, err)
	}
	if got := h.Get("Reply-To"); got != "<help@acme.test>" {
		t.Errorf("Reply-To = %q", got)
	}
	if got := h.Get("To"); got != "<alice@example.com>" {
		t.Errorf("To = %q", got)
	}
	if got := h.Get("Subject"); got != "Your Acme verification code" {
		t.Errorf("Subject = %q", got)
	}
	if h.Get("MIME-Version") != "1.0" {
		t.Error("no MIME-Version")
	}
	if len(parts) != 2 || !strings.HasPrefix(parts[0].ctype, "text/plain") ||
		!strings.HasPrefix(parts[1].ctype, "text/html") {
		t.Fatalf("parts %+v", parts)
	}
	text, html := parts[0].body, parts[1].body
	for _, want := range []string{"ABC123XYZ", "5 minutes", "Hi <b>Alice</b>,", "Acme Inc.", "\n.hidden line"} {
		if !strings.Contains(text, want) {
			t.Errorf("text part lacks %q:\n%s", want, text)
		}
	}
	for _, want := range []string{"ABC123XYZ", `src="https://acme.test/logo.png"`, "Hi &lt;b&gt;Alice&lt;/b&gt;,", "Acme Inc."} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML part lacks %q:\n%s", want, html)
		}
	}
	if strings.Contains(html, "<b>Alice") {
		t.Error("template value was not HTML-escaped")
	}
}

func TestSMTPImplicitTLS(t *testing.T) {
	srv := newSMTPServer(t, func(s *smtpServer) { s.implicit = true; s.user, s.pass = "u", "p4ss" })
	s := &SMTP{Addr: srv.Addr(), From: "a@b.test", Mode: ModeTLS, Username: "u", Password: "p4ss", RootCAs: srv.pool}
	if err := s.SendEmail(context.Background(), Message{To: "c@d.test", Subject: "hi", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	sess := srv.Sessions()[0]
	if got := strings.Join(sess.Commands, " "); got != "EHLO AUTH MAIL RCPT DATA QUIT" {
		t.Fatalf("commands %q", got)
	}
	if !sess.AuthOverTLS {
		t.Fatal("auth not over TLS")
	}
}

func TestSMTPPlainLoopback(t *testing.T) {
	srv := newSMTPServer(t, func(s *smtpServer) { s.noTLS = true })
	s := &SMTP{Addr: srv.Addr(), From: "a@b.test", Mode: ModePlain}
	if err := s.SendEmail(context.Background(), Message{To: "c@d.test", Subject: "hi", HTML: "<p>hello</p>"}); err != nil {
		t.Fatal(err)
	}
	sess := srv.Sessions()[0]
	if got := strings.Join(sess.Commands, " "); got != "EHLO MAIL RCPT DATA QUIT" {
		t.Fatalf("commands %q", got)
	}
}

func TestSMTPRefusals(t *testing.T) {
	tests := []struct {
		name      string
		server    func(*smtpServer)
		client    func(*SMTP)
		wantErr   string
		wantAuth  bool // whether the server may have seen AUTH
		noConnect bool
	}{
		{
			name:    "server without STARTTLS is refused before AUTH",
			server:  func(s *smtpServer) { s.noTLS = true; s.user, s.pass = "u", "topsecret" },
			client:  func(c *SMTP) { c.Username, c.Password = "u", "topsecret" },
			wantErr: "does not offer STARTTLS",
		},
		{
			name:      "plain mode with credentials refuses to authenticate",
			server:    func(s *smtpServer) { s.noTLS = true },
			client:    func(c *SMTP) { c.Mode = ModePlain; c.Username, c.Password = "u", "topsecret" },
			wantErr:   "refuses to authenticate without TLS",
			noConnect: true,
		},
		{
			name:      "plain mode towards a non-loopback host",
			client:    func(c *SMTP) { c.Mode = ModePlain; c.Addr = "smtp.example.com:25" },
			wantErr:   "only allowed towards loopback",
			noConnect: true,
		},
		{
			name:      "unknown mode",
			client:    func(c *SMTP) { c.Mode = "ssl3" },
			wantErr:   "unknown smtp mode",
			noConnect: true,
		},
		{
			name:    "recipient refused with 550",
			server:  func(s *smtpServer) { s.rcptErr = "550 5.1.1 mailbox unavailable" },
			wantErr: "smtp RCPT TO refused: 550 5.1.1 mailbox unavailable",
		},
		{
			name:     "wrong password",
			server:   func(s *smtpServer) { s.user, s.pass = "u", "right" },
			client:   func(c *SMTP) { c.Username, c.Password = "u", "topsecret" },
			wantErr:  "smtp AUTH refused: 535",
			wantAuth: true,
		},
		{
			name:    "untrusted certificate",
			client:  func(c *SMTP) { c.RootCAs = nil },
			wantErr: "STARTTLS",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newSMTPServer(t, tt.server)
			c := &SMTP{Addr: srv.Addr(), From: "a@b.test", RootCAs: srv.pool, Timeout: 5 * time.Second}
			if tt.client != nil {
				tt.client(c)
			}
			err := c.SendEmail(context.Background(), Message{To: "c@d.test", Subject: "code", Text: "code 987654"})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			for _, secret := range []string{"topsecret", "987654"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error leaks %q: %v", secret, err)
				}
			}
			if tt.noConnect {
				if n := len(srv.Sessions()); n != 0 {
					t.Fatalf("%d sessions, want none", n)
				}
				return
			}
			for _, sess := range srv.Sessions() {
				for _, cmd := range sess.Commands {
					if cmd == "AUTH" && !(tt.wantAuth && sess.AuthOverTLS) {
						t.Fatal("client sent AUTH")
					}
				}
			}
		})
	}
}

func TestSMTPDeliveryErrorsAreDeliveryErrors(t *testing.T) {
	srv := newSMTPServer(t, func(s *smtpServer) { s.rcptErr = "550 no" })
	c := &SMTP{Addr: srv.Addr(), From: "a@b.test", RootCAs: srv.pool}
	err := c.SendEmail(context.Background(), Message{To: "c@d.test", Text: "x"})
	if !errors.Is(err, ErrDelivery) {
		t.Fatalf("err = %v, want ErrDelivery", err)
	}
}

func TestBuildMIMERejectsInjection(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name string
		m    Message
	}{
		{"CRLF in subject", Message{To: "a@b.test", Subject: "hi\r\nBcc: x@y.test", Text: "x"}},
		{"display name as recipient", Message{To: "Eve <a@b.test>", Text: "x"}},
		{"two recipients", Message{To: "a@b.test, c@d.test", Text: "x"}},
		{"CRLF in reply-to", Message{To: "a@b.test", ReplyTo: "c@d.test\r\nBcc: x@y.test", Text: "x"}},
		{"CRLF in sender name", Message{To: "a@b.test", FromName: "x\r\nBcc: y@z.test", Text: "x"}},
		{"no body", Message{To: "a@b.test", Subject: "s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := BuildMIME("s@x.test", "", tt.m, now); !errors.Is(err, ErrInvalidMessage) {
				t.Fatalf("err = %v, want ErrInvalidMessage", err)
			}
		})
	}
}

func TestSMTPContextDeadline(t *testing.T) {
	// A server that accepts and never greets: the exchange ends at the
	// timeout instead of hanging.
	ln := silentListener(t)
	c := &SMTP{Addr: ln, From: "a@b.test", Timeout: 300 * time.Millisecond}
	start := time.Now()
	err := c.SendEmail(context.Background(), Message{To: "c@d.test", Text: "x"})
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
}
