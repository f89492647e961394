package notify

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/latchkey/latchkey/internal/outbound"
	"os"
	"sync"
	"time"
)

// Outbox writes every message as one JSON line to a file instead of
// delivering it: `--dev` without a provider. The file holds one-time codes in
// the clear, so it is created with mode 0600 and is for development only.
// Safe for concurrent use; each line is written with one append and synced.
type Outbox struct {
	path string
	now  func() time.Time
	mu   sync.Mutex
}

// OutboxEntry is one line of the outbox. Kind is "email" or "sms"; exactly one
// of Email and SMS is set.
type OutboxEntry struct {
	Time  time.Time `json:"time"`
	Kind  string    `json:"kind"`
	Email *Message  `json:"email,omitempty"`
	SMS   *SMS      `json:"sms,omitempty"`
}

var (
	_ Emailer = (*Outbox)(nil)
	_ Texter  = (*Outbox)(nil)
)

// NewOutbox returns an outbox appending to path, creating the file (0600) now
// so a bad path fails at start rather than at the first code.
func NewOutbox(path string) (*Outbox, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("notify: outbox: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, fmt.Errorf("notify: outbox: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("notify: outbox: %w", err)
	}
	return &Outbox{path: path, now: time.Now}, nil
}

// Path is the file the outbox appends to.
func (o *Outbox) Path() string { return o.path }

// SendEmail appends m.
func (o *Outbox) SendEmail(ctx context.Context, m Message) error {
	// The development outbox stands for a real sender: it refuses what a real one would.
	if err := outbound.Check(ctx, "e-mail send"); err != nil {
		return err
	}
	if err := validateMessage(m); err != nil {
		return err
	}
	return o.append(OutboxEntry{Kind: "email", Email: &m})
}

// SendSMS appends s.
func (o *Outbox) SendSMS(ctx context.Context, s SMS) error {
	if err := outbound.Check(ctx, "SMS send"); err != nil {
		return err
	}
	if s.To == "" || s.Body == "" {
		return fmt.Errorf("%w: SMS needs a recipient and a body", ErrInvalidMessage)
	}
	return o.append(OutboxEntry{Kind: "sms", SMS: &s})
}

func (o *Outbox) append(e OutboxEntry) error {
	e.Time = o.now().UTC()
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("notify: outbox: %w", err)
	}
	line = append(line, '\n')
	o.mu.Lock()
	defer o.mu.Unlock()
	f, err := os.OpenFile(o.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("%w: outbox: %v", ErrDelivery, err)
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return fmt.Errorf("%w: outbox: %v", ErrDelivery, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("%w: outbox: %v", ErrDelivery, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%w: outbox: %v", ErrDelivery, err)
	}
	return nil
}

// ReadOutbox returns every entry in the outbox file at path, oldest first.
func ReadOutbox(path string) ([]OutboxEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []OutboxEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e OutboxEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("notify: outbox line %d: %w", n, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
