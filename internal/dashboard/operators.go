package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
)

// Record kinds and keys.
const (
	KindOperator = "operator"
	KindAudit    = "operator_audit"
	keyEmail     = "operator.email"
)

// argon2id parameters (RFC 9106's second recommended option, OWASP's minimum).
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
	minPassword  = 12
)

// Operator is an operator account.
type Operator struct {
	ID        string    `json:"id"`
	Email     string    `json:"email"`
	Hash      string    `json:"hash"` // $argon2id$v=19$m=...,t=...,p=...$salt$tag
	CreatedAt time.Time `json:"createdAt"`
}

// Audit is one operator change.
type Audit struct {
	ID       string    `json:"id"`
	Operator string    `json:"operator"`
	Action   string    `json:"action"`
	Target   string    `json:"target"`
	Detail   string    `json:"detail,omitempty"`
	At       time.Time `json:"at"`
}

func hashPassword(pw string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	tag := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(tag)), nil
}

// checkPassword verifies pw against an encoded hash in constant time.
func checkPassword(encoded, pw string) bool {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m > 1<<20 || t > 10 || p == 0 {
		return false
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	tag, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(tag) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, t, m, p, uint32(len(tag)))
	return subtle.ConstantTimeCompare(got, tag) == 1
}

// dummyHash is checked for unknown e-mails so a sign-in costs the same either way.
var dummyHash, _ = hashPassword("latchkey-dummy-password")

// CreateOperator adds an operator account.
func CreateOperator(ctx context.Context, st store.Store, email, password string, now time.Time) (*Operator, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	if at := strings.IndexByte(email, '@'); at <= 0 || at == len(email)-1 || len(email) > 254 ||
		strings.ContainsAny(email, " \t\r\n<>") {
		return nil, apierr.Invalid("email", "not an e-mail address: %q", email)
	}
	if len(password) < minPassword {
		return nil, apierr.Invalid("password", "at least %d characters", minPassword)
	}
	h, err := hashPassword(password)
	if err != nil {
		return nil, err
	}
	o := &Operator{ID: id.New(), Email: email, Hash: h, CreatedAt: now}
	err = st.Update(ctx, func(tx store.Tx) error {
		if ids, err := records.LookupIDs(ctx, tx, keyEmail, email, KindOperator, ""); err != nil {
			return err
		} else if len(ids) > 0 {
			return apierr.New(apierr.AlreadyExists, "ALREADY_EXISTS", "an operator with e-mail %s exists", email)
		}
		if err := records.Save(ctx, tx, KindOperator, o.ID, "", now, now, o, store.Key{Name: keyEmail, Value: email}); err != nil {
			return err
		}
		// The account is created from the command line (operator create, serve --dev), not by a
		// signed-in operator: the audit record names the command line as the actor.
		a := Audit{ID: id.New(), Operator: "(command line)", Action: "operator created", Target: email, At: now}
		return records.Save(ctx, tx, KindAudit, a.ID, "", now, now, a)
	})
	return o, err
}

// CountOperators counts the operator accounts.
func CountOperators(ctx context.Context, st store.Store) (int, error) {
	n := 0
	err := st.View(ctx, func(r store.Reader) error {
		var err error
		n, err = r.Count(ctx, KindOperator, "", 0)
		return err
	})
	return n, err
}

func findOperator(ctx context.Context, st store.Store, email string) (*Operator, error) {
	var o *Operator
	err := st.View(ctx, func(r store.Reader) error {
		ids, err := records.LookupIDs(ctx, r, keyEmail, strings.ToLower(strings.TrimSpace(email)), KindOperator, "")
		if err != nil || len(ids) == 0 {
			return errors.Join(err, store.ErrNotFound)
		}
		o, err = records.Load[Operator](ctx, r, KindOperator, "", ids[0], "operator")
		return err
	})
	return o, err
}

func writeAudit(ctx context.Context, st store.Store, a Audit) error {
	a.ID = id.New()
	return st.Update(ctx, func(tx store.Tx) error {
		return records.Save(ctx, tx, KindAudit, a.ID, "", a.At, a.At, a)
	})
}
