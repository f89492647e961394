//go:build pkcs11

package custody

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/latchkey/latchkey/internal/custody/pkcs11"
)

// PKCS11Supported reports whether this build can load a PKCS#11 module (the pkcs11 build tag).
const PKCS11Supported = true

// pkcs11AAD is the additional data of every wrap: a ciphertext made for anything else with the
// same token key does not open as a master key.
var pkcs11AAD = []byte("latchkey seal pkcs11 v1: master key")

// pkcs11Prefix starts every wrapped master key in the seal record.
const pkcs11Prefix = "pkcs11:v1:"

const gcmIVSize = 12

// pkcs11Mu serializes the seal's uses of a module: each initializes the library, works in one
// session and finalizes it, which must not overlap another's.
var pkcs11Mu sync.Mutex

// Wrap encrypts m with the token's key (made first when CreateKey is set and there is none).
func (p PKCS11) Wrap(ctx context.Context, m *MasterKey) (string, error) {
	var out string
	err := p.withSession(ctx, p.CreateKey, func(s *pkcs11.Session) error {
		key, err := p.findKey(s, true)
		if err != nil {
			return err
		}
		iv := make([]byte, gcmIVSize)
		if _, err := rand.Read(iv); err != nil {
			return err
		}
		ct, err := s.EncryptGCM(key, iv, pkcs11AAD, m.k[:])
		if err != nil {
			return fmt.Errorf("custody: pkcs11: wrapping with key %q on %s: %w", p.KeyLabel, p.token(), err)
		}
		if len(ct) != MasterKeySize+16 {
			return fmt.Errorf("custody: pkcs11: the token's AES-GCM gave %d bytes for %d", len(ct), MasterKeySize)
		}
		out = pkcs11Prefix + base64.StdEncoding.EncodeToString(append(iv, ct...))
		return nil
	})
	return out, err
}

// Unwrap decrypts the wrapped master key with the token's key.
func (p PKCS11) Unwrap(ctx context.Context, ciphertext string) (*MasterKey, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(ciphertext, pkcs11Prefix))
	if err != nil || !strings.HasPrefix(ciphertext, pkcs11Prefix) || len(raw) != gcmIVSize+MasterKeySize+16 {
		return nil, errors.New("custody: pkcs11: the seal record's ciphertext is not a wrapped master key")
	}
	iv, ct := raw[:gcmIVSize], raw[gcmIVSize:]
	var m *MasterKey
	err = p.withSession(ctx, false, func(s *pkcs11.Session) error {
		key, err := p.findKey(s, false)
		if err != nil {
			return err
		}
		plain := make([]byte, len(ct))
		defer clear(plain)
		n, err := s.DecryptGCM(key, iv, pkcs11AAD, ct, plain)
		if err != nil {
			return fmt.Errorf(
				"custody: pkcs11: key %q on %s does not open this deployment's master key (another key with the same label?): %w",
				p.KeyLabel,
				p.token(),
				err,
			)
		}
		if n != MasterKeySize {
			return errors.New("custody: pkcs11: the unwrapped master key has the wrong size")
		}
		m = newMasterKey()
		copy(m.k[:], plain[:n])
		return nil
	})
	return m, err
}

// withSession loads and initializes the module, finds the token, logs in with the PIN, runs f,
// and logs out, closes the session and finalizes the module (unless something else in this
// process had initialized it). rw opens a read-write session (to create a key).
func (p PKCS11) withSession(ctx context.Context, rw bool, f func(*pkcs11.Session) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	pkcs11Mu.Lock()
	defer pkcs11Mu.Unlock()
	mod, err := pkcs11.Load(p.Module)
	if err != nil {
		return fmt.Errorf("custody: %w", err)
	}
	already, err := mod.Initialize()
	if err != nil {
		return fmt.Errorf("custody: pkcs11 module %q: %w", p.Module, err)
	}
	if !already {
		defer mod.Finalize()
	}
	slot, err := p.findSlot(mod)
	if err != nil {
		return err
	}
	s, err := mod.OpenSession(slot, rw)
	if err != nil {
		return fmt.Errorf("custody: pkcs11: opening a session with %s: %w", p.token(), err)
	}
	defer s.Close()
	pin := []byte(p.PIN)
	err = s.Login(pin)
	clear(pin)
	switch {
	case errors.Is(err, &pkcs11.Error{RV: pkcs11.CKR_PIN_INCORRECT}):
		return fmt.Errorf(
			"custody: pkcs11: the PIN for %s is wrong (CKR_PIN_INCORRECT): check LATCHKEY_PKCS11_PIN (or its _FILE); repeated failures may lock the PIN",
			p.token(),
		)
	case errors.Is(err, &pkcs11.Error{RV: pkcs11.CKR_PIN_LOCKED}):
		return fmt.Errorf(
			"custody: pkcs11: the user PIN of %s is locked (CKR_PIN_LOCKED): the token's security officer must reset it",
			p.token(),
		)
	case err != nil:
		return fmt.Errorf("custody: pkcs11: logging in to %s: %w", p.token(), err)
	}
	defer s.Logout()
	return f(s)
}

// findSlot is the slot of the token named by TokenLabel (exactly one), or Slot.
func (p PKCS11) findSlot(mod *pkcs11.Module) (uint64, error) {
	if p.Slot != "" {
		id, err := strconv.ParseUint(p.Slot, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("--pkcs11-slot %q is not a slot ID", p.Slot)
		}
		return id, nil
	}
	slots, err := mod.Slots()
	if err != nil {
		return 0, fmt.Errorf("custody: pkcs11 module %q: %w", p.Module, err)
	}
	var found []uint64
	for _, id := range slots {
		if label, err := mod.TokenLabel(id); err == nil && label == p.TokenLabel {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 0:
		return 0, fmt.Errorf(
			"custody: pkcs11: no token labelled %q in module %q (%d slots hold a token): is the token present, and is its label right?",
			p.TokenLabel,
			p.Module,
			len(slots),
		)
	case 1:
		return found[0], nil
	}
	return 0, fmt.Errorf(
		"custody: pkcs11: %d tokens are labelled %q in module %q: name one with --pkcs11-slot",
		len(found),
		p.TokenLabel,
		p.Module,
	)
}

// findKey is the handle of the one AES key labelled KeyLabel. When none exists, wrap (a new
// deployment) with CreateKey generates it on the token: AES-256, private, sensitive and not
// extractable, for encrypt and decrypt only.
func (p PKCS11) findKey(s *pkcs11.Session, wrap bool) (uint64, error) {
	tmpl := []pkcs11.Attribute{
		pkcs11.Ulong(pkcs11.CKA_CLASS, pkcs11.CKO_SECRET_KEY),
		pkcs11.Ulong(pkcs11.CKA_KEY_TYPE, pkcs11.CKK_AES),
		pkcs11.String(pkcs11.CKA_LABEL, p.KeyLabel),
	}
	keys, err := s.FindObjects(tmpl, 2)
	if err != nil {
		return 0, fmt.Errorf("custody: pkcs11: looking for key %q on %s: %w", p.KeyLabel, p.token(), err)
	}
	switch {
	case len(keys) == 1:
		return keys[0], nil
	case len(keys) > 1:
		return 0, fmt.Errorf(
			"custody: pkcs11: several AES keys on %s are labelled %q: the label must name one key",
			p.token(),
			p.KeyLabel,
		)
	case !wrap:
		return 0, fmt.Errorf(
			"custody: pkcs11: %s holds no AES key labelled %q: this deployment's master key opens only with the key that wrapped it (another token, or a deleted key?)",
			p.token(),
			p.KeyLabel,
		)
	case !p.CreateKey:
		return 0, fmt.Errorf(
			"custody: pkcs11: %s holds no AES key labelled %q: make it as docs/operations.md, \"Production custody\", says, or let latchkey init make it with --pkcs11-create-key",
			p.token(),
			p.KeyLabel,
		)
	}
	key, err := s.GenerateKey(pkcs11.CKM_AES_KEY_GEN, append(tmpl,
		pkcs11.Ulong(pkcs11.CKA_VALUE_LEN, 32),
		pkcs11.Bool(pkcs11.CKA_TOKEN, true),
		pkcs11.Bool(pkcs11.CKA_PRIVATE, true),
		pkcs11.Bool(pkcs11.CKA_SENSITIVE, true),
		pkcs11.Bool(pkcs11.CKA_EXTRACTABLE, false),
		pkcs11.Bool(pkcs11.CKA_ENCRYPT, true),
		pkcs11.Bool(pkcs11.CKA_DECRYPT, true)))
	if err != nil {
		return 0, fmt.Errorf("custody: pkcs11: generating key %q on %s: %w", p.KeyLabel, p.token(), err)
	}
	return key, nil
}
