package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
)

// Sign-in limits, sessions and their records. Both live in the store, so every dashboard
// process behind a load balancer sees the same sessions and counts the same failures.
const (
	// KindSession is an operator session; its id is the SHA-256 of the cookie's token (the
	// token itself is never stored).
	KindSession = "operator_session"
	// KindSignIn counts the sign-in attempts of one e-mail address or one client address; its
	// id is the SHA-256 of "email:<e-mail>" or "ip:<address>".
	KindSignIn = "operator_signin"

	// DefaultMaxFailuresPerEmail and DefaultMaxFailuresPerAddress bound the failed sign-ins in
	// failureWindow; DefaultMaxChecks the password checks running at once in a process (each
	// holds argon2id's 19 MiB).
	DefaultMaxFailuresPerEmail   = 5
	DefaultMaxFailuresPerAddress = 20
	DefaultMaxChecks             = 2
)

// storedSession is a session as stored: nothing in it lets anyone act as the session (its id is
// a hash of the cookie's token, and the CSRF token is derived from the cookie's token).
type storedSession struct {
	Operator string    `json:"operator"`
	Expires  time.Time `json:"expires"`
}

// csrfFor is the session's CSRF token: HMAC-SHA256 of a fixed label under the cookie's token.
func csrfFor(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("latchkey dashboard csrf"))
	return hex.EncodeToString(m.Sum(nil))
}

// attempts are the recent sign-in attempts of one key (reserved before the password check;
// a success takes its reservation back).
type attempts struct {
	At []time.Time `json:"at"`
}

func tokenID(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

func signInID(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// limit is one counted key and how many attempts it may have in the window.
type limit struct {
	key string
	max int
}

// errLocked is a sign-in refused because a key has used up its attempts.
var errLocked = errors.New("locked out")

// reserve counts one attempt for every key, in one transaction, unless one of them already has
// its maximum in the window (errLocked, nothing written). The attempt is counted before the
// password is checked, so concurrent sign-ins cannot all pass the check: each sees the others'
// reservations.
func (s *Server) reserve(ctx context.Context, limits []limit) error {
	now := s.Now()
	cut := now.Add(-failureWindow)
	return s.Store.Update(ctx, func(tx store.Tx) error {
		loaded := make([]*attempts, len(limits))
		for i, l := range limits {
			if err := tx.Lock(ctx, "operator_signin\x00"+l.key); err != nil {
				return err
			}
			a, err := records.Load[attempts](ctx, tx, KindSignIn, "", signInID(l.key), "sign-in attempts")
			if apierr.From(err).Code == apierr.NotFound {
				a, err = &attempts{}, nil
			}
			if err != nil {
				return err
			}
			kept := a.At[:0]
			for _, t := range a.At {
				if t.After(cut) {
					kept = append(kept, t)
				}
			}
			a.At = kept
			if len(a.At) >= l.max {
				return errLocked
			}
			loaded[i] = a
		}
		for i, l := range limits {
			loaded[i].At = append(loaded[i].At, now)
			if err := records.Save(ctx, tx, KindSignIn, signInID(l.key), "", now, now, loaded[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// release takes back the reservation of a successful sign-in for key (its failures stay).
func (s *Server) release(ctx context.Context, key string) {
	err := s.Store.Update(ctx, func(tx store.Tx) error {
		if err := tx.Lock(ctx, "operator_signin\x00"+key); err != nil {
			return err
		}
		a, err := records.Load[attempts](ctx, tx, KindSignIn, "", signInID(key), "sign-in attempts")
		if err != nil || len(a.At) == 0 {
			return nil
		}
		a.At = a.At[:len(a.At)-1]
		return records.Save(ctx, tx, KindSignIn, signInID(key), "", s.Now(), s.Now(), a)
	})
	if err != nil {
		s.Log.Error("dashboard: releasing a sign-in reservation", "err", err)
	}
}

// newSession stores a session and returns its cookie token.
func (s *Server) newSession(ctx context.Context, operator string) (string, error) {
	token := randomToken()
	now := s.Now()
	sess := storedSession{Operator: operator, Expires: now.Add(s.SessionTTL)}
	err := s.Store.Update(ctx, func(tx store.Tx) error {
		// Sweep a few expired sessions on the way.
		old, err := tx.List(ctx, KindSession, "", store.ListOptions{Limit: 16})
		if err == nil {
			for _, rec := range old {
				if rec.UpdatedAt.Before(now.Add(-s.SessionTTL)) {
					_ = tx.Delete(ctx, KindSession, rec.ID)
				}
			}
		}
		return records.Save(ctx, tx, KindSession, tokenID(token), "", now, now, sess)
	})
	return token, err
}

// session returns the live session the request's cookie names, or nil.
func (s *Server) session(r *http.Request) *opSession {
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return nil
	}
	var sess *storedSession
	if err := s.Store.View(r.Context(), func(rd store.Reader) error {
		var err error
		sess, err = records.Load[storedSession](r.Context(), rd, KindSession, "", tokenID(c.Value), "session")
		return err
	}); err != nil {
		return nil
	}
	if !s.Now().Before(sess.Expires) {
		return nil
	}
	return &opSession{operator: sess.Operator, csrf: csrfFor(c.Value), expires: sess.Expires}
}

// endSession deletes the session the request's cookie names.
func (s *Server) endSession(r *http.Request) {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return
	}
	if err := s.Store.Update(r.Context(), func(tx store.Tx) error {
		err := tx.Delete(r.Context(), KindSession, tokenID(c.Value))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}); err != nil {
		s.Log.Error("dashboard: ending a session", "err", err)
	}
}
