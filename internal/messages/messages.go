package messages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/notify"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
)

// KindMessage is a queued message.
const KindMessage = "outgoing_message"

// Delivery bounds.
const (
	MaxAttempts = 8
	claimFor    = 2 * time.Minute
	pollEvery   = 2 * time.Second
	sendTimeout = 30 * time.Second
)

// queued is a message record. The message itself is sealed: it carries codes and credentials.
type queued struct {
	ID           string    `json:"id"`
	Channel      string    `json:"channel"` // "email" or "sms"
	Sealed       []byte    `json:"sealed"`
	Attempts     int       `json:"attempts"`
	NextAt       time.Time `json:"nextAt"`
	ClaimedUntil time.Time `json:"claimedUntil,omitzero"`
	CreatedAt    time.Time `json:"createdAt"`
}

type payload struct {
	Email *notify.Message `json:"email,omitempty"`
	SMS   *notify.SMS     `json:"sms,omitempty"`
}

// Outbox queues and sends messages.
type Outbox struct {
	Store   store.Store
	Keyring *custody.Keyring
	Emailer notify.Emailer // nil: e-mail is not configured
	Texter  notify.Texter  // nil: SMS is not configured
	Log     *slog.Logger
	Now     func() time.Time
	// Sent, when set, is told of every attempt: channel and whether it succeeded (metrics).
	Sent func(channel string, ok bool)
	// Backlog, when set, is told how many messages wait after each background pass (metrics).
	Backlog func(n int)
}

// CanEmail and CanSMS report whether the channel is configured.
func (o *Outbox) CanEmail() bool { return o != nil && o.Emailer != nil }

// CanSMS reports whether text messages can be sent.
func (o *Outbox) CanSMS() bool { return o != nil && o.Texter != nil }

func (o *Outbox) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now().UTC()
}

func binding(msgID string) custody.Binding {
	return custody.Binding{Kind: KindMessage, ID: msgID}
}

// Email queues m in x's transaction; it is sent once the transaction commits.
func (o *Outbox) Email(x *activity.Exec, m notify.Message) error {
	if err := notify.Validate(m); err != nil {
		return err
	}
	return o.queue(x, "email", payload{Email: &m})
}

// SMS queues s in x's transaction; it is sent once the transaction commits.
func (o *Outbox) SMS(x *activity.Exec, s notify.SMS) error {
	if s.To == "" || s.Body == "" {
		return fmt.Errorf("%w: SMS needs a recipient and a body", notify.ErrInvalidMessage)
	}
	return o.queue(x, "sms", payload{SMS: &s})
}

func (o *Outbox) queue(x *activity.Exec, channel string, p payload) error {
	plain, err := json.Marshal(p)
	if err != nil {
		return apierr.Internalf(err, "encoding the message")
	}
	q := queued{ID: id.New(), Channel: channel, CreatedAt: x.Now} // due at once
	if q.Sealed, err = o.Keyring.Seal(plain, binding(q.ID)); err != nil {
		return apierr.Internalf(err, "sealing the message")
	}
	clear(plain)
	if err := records.Save(x.Ctx, x.Tx, KindMessage, q.ID, "", x.Now, x.Now, q); err != nil {
		return err
	}
	x.AfterCommit(func(ctx context.Context) { o.deliver(ctx, q.ID) })
	return nil
}

// claim takes the message for one attempt, unless another attempt holds it or (unless force)
// it is not due.
func (o *Outbox) claim(ctx context.Context, msgID string, force bool) (*queued, error) {
	var q *queued
	err := o.Store.Update(ctx, func(tx store.Tx) error {
		q = nil
		got, err := records.Load[queued](ctx, tx, KindMessage, "", msgID, "message")
		if err != nil {
			if apierr.From(err).Code == apierr.NotFound {
				return nil // sent meanwhile
			}
			return err
		}
		// Claims are timed by the database's clock when it has one, not this process's.
		now, err := store.Now(ctx, tx, o.now)
		if err != nil {
			return err
		}
		if now.Before(got.ClaimedUntil) || (!force && now.Before(got.NextAt)) {
			return nil
		}
		got.ClaimedUntil = now.Add(claimFor)
		got.Attempts++
		if err := records.Save(ctx, tx, KindMessage, got.ID, "", got.CreatedAt, now, got); err != nil {
			return err
		}
		q = got
		return nil
	})
	return q, err
}

// deliver makes one attempt at a message: sent, it is deleted; failed, it is due again after a
// backoff, or dropped (logged) after MaxAttempts.
func (o *Outbox) deliver(ctx context.Context, msgID string) { o.attempt(ctx, msgID, false) }

func (o *Outbox) attempt(ctx context.Context, msgID string, force bool) {
	q, err := o.claim(ctx, msgID, force)
	if err != nil {
		o.Log.Error("messages: claiming a message", "id", msgID, "err", err)
		return
	}
	if q == nil {
		return
	}
	sendErr := o.send(ctx, q)
	if o.Sent != nil {
		o.Sent(q.Channel, sendErr == nil)
	}
	err = o.Store.Update(context.WithoutCancel(ctx), func(tx store.Tx) error {
		if sendErr == nil || q.Attempts >= MaxAttempts || errors.Is(sendErr, notify.ErrInvalidMessage) {
			err := tx.Delete(ctx, KindMessage, q.ID)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		}
		now, err := store.Now(ctx, tx, o.now)
		if err != nil {
			return err
		}
		q.ClaimedUntil = time.Time{}
		q.NextAt = now.Add(time.Duration(1<<min(q.Attempts, 10)) * time.Second)
		return records.Save(ctx, tx, KindMessage, q.ID, "", q.CreatedAt, now, q)
	})
	if err != nil {
		o.Log.Error("messages: recording a delivery", "id", q.ID, "err", err)
	}
	switch {
	case sendErr == nil:
	case q.Attempts >= MaxAttempts || errors.Is(sendErr, notify.ErrInvalidMessage):
		o.Log.Error(
			"messages: giving up on a message",
			"id",
			q.ID,
			"channel",
			q.Channel,
			"attempts",
			q.Attempts,
			"err",
			sendErr,
		)
	default:
		o.Log.Warn(
			"messages: sending failed; it will be retried",
			"id",
			q.ID,
			"channel",
			q.Channel,
			"attempt",
			q.Attempts,
			"err",
			sendErr,
		)
	}
}

// send unseals and sends one message. Errors never carry its content (the senders redact).
func (o *Outbox) send(ctx context.Context, q *queued) error {
	plain, err := o.Keyring.Open(q.Sealed, binding(q.ID))
	if err != nil {
		return err
	}
	defer clear(plain)
	var p payload
	if err := json.Unmarshal(plain, &p); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	switch {
	case p.Email != nil && o.Emailer != nil:
		return o.Emailer.SendEmail(ctx, *p.Email)
	case p.SMS != nil && o.Texter != nil:
		return o.Texter.SendSMS(ctx, *p.SMS)
	}
	return errors.New("messages: the message's channel is not configured on this server")
}

// Run retries the messages that are due until ctx ends: those whose send failed, and those a
// process queued but could not send before it stopped.
func (o *Outbox) Run(ctx context.Context) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		o.pass(ctx)
	}
}

// Flush tries every queued message once now, due or not (tests; an operator's nudge).
func (o *Outbox) Flush(ctx context.Context) { o.sweep(ctx, true) }

// pass tries every due message once.
func (o *Outbox) pass(ctx context.Context) { o.sweep(ctx, false) }

func (o *Outbox) sweep(ctx context.Context, force bool) {
	var recs []store.Record
	var now time.Time
	if err := o.Store.View(ctx, func(r store.Reader) error {
		var err error
		if recs, err = r.List(ctx, KindMessage, "", store.ListOptions{Limit: 256}); err != nil {
			return err
		}
		now, err = store.Now(ctx, r, o.now)
		return err
	}); err != nil {
		o.Log.Error("messages: listing the outbox", "err", err)
		return
	}
	if o.Backlog != nil {
		o.Backlog(len(recs))
	}
	for _, rec := range recs {
		var q queued
		if json.Unmarshal(rec.Data, &q) != nil || (!force && now.Before(q.NextAt)) || now.Before(q.ClaimedUntil) {
			continue
		}
		o.attempt(ctx, q.ID, force)
	}
}
