package notify

import (
	"context"
	"errors"
	"strings"
)

// Message is one e-mail. To is a bare address; FromName is the display name
// put beside the sender's configured address (it overrides the sender's
// default); ReplyTo is an optional bare address. Text and HTML are the two
// alternative bodies; at least one must be set.
type Message struct {
	To, Subject, Text, HTML string
	FromName, ReplyTo       string
}

// Emailer sends e-mail.
type Emailer interface {
	SendEmail(ctx context.Context, m Message) error
}

// SMS is one text message; To is an E.164 phone number.
type SMS struct {
	To, Body string
}

// Texter sends text messages.
type Texter interface {
	SendSMS(ctx context.Context, s SMS) error
}

// ErrInvalidMessage is wrapped by every error about a message that cannot be
// sent as given (bad address, header injection, empty body).
var ErrInvalidMessage = errors.New("notify: invalid message")

// ErrDelivery is wrapped by every error from the provider or the network.
var ErrDelivery = errors.New("notify: delivery failed")

// redact removes every non-empty secret from s, so a provider that echoes a
// request back cannot smuggle a code or credential into an error.
func redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= 3 {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return s
}

// clip keeps provider messages short and on one line.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r == '\t' {
			return ' '
		}
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// Validate checks an e-mail as every sender would before sending it (addresses, header
// injection, a body): queuing code calls it so that a message that can never be sent is refused
// at once, not after the transaction that queued it.
func Validate(m Message) error { return validateMessage(m) }
