package custody

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// MasterKeySize is the size of the operator's master key.
const MasterKeySize = 32

// ErrWrongMasterKey means the keyring in the store does not open with the given master key.
var ErrWrongMasterKey = errors.New("custody: the master key does not open this data's keyring (wrong master key file?)")

// MasterKey is the operator's key-encryption key. It only ever wraps the keyring. Its bytes live
// on a page of their own, locked in RAM and excluded from core dumps (secretPage), not in Go's
// heap.
type MasterKey struct{ k *[MasterKeySize]byte }

var (
	protectionOnce sync.Once
	protectionErr  error
)

// newMasterKey allocates the bytes of a master key (zero) on a protected page.
func newMasterKey() *MasterKey {
	b, err := secretPage(MasterKeySize)
	if err != nil {
		protectionOnce.Do(func() { protectionErr = err })
	}
	return &MasterKey{k: (*[MasterKeySize]byte)(b)}
}

// MemoryProtection reports why a master key could not be given a locked page excluded from core
// dumps (nil when every one was, or on systems where it is not attempted): serve logs it.
func MemoryProtection() error { return protectionErr }

// ParseMasterKey reads a master key given as 64 hex characters (surrounding whitespace ignored)
// or as 32 raw bytes.
func ParseMasterKey(b []byte) (*MasterKey, error) {
	if s := bytes.TrimSpace(b); len(s) == 2*MasterKeySize {
		m := newMasterKey()
		if _, err := hex.Decode(m.k[:], s); err == nil {
			return m, nil
		}
		clear(m.k[:])
	}
	if len(b) == MasterKeySize {
		m := newMasterKey()
		copy(m.k[:], b)
		return m, nil
	}
	return nil, errors.New("custody: a master key is 64 hex characters (or 32 raw bytes)")
}

// LoadMasterKeyFile reads a master key file; the file's bytes are zeroed once parsed.
func LoadMasterKeyFile(path string) (*MasterKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("custody: reading master key: %w", err)
	}
	defer clear(b)
	return ParseMasterKey(b)
}

// GenerateMasterKeyFile writes a fresh random master key (hex) to path, readable by the owner
// only. It refuses to overwrite an existing file.
func GenerateMasterKeyFile(path string) (*MasterKey, error) {
	m := newMasterKey()
	if _, err := rand.Read(m.k[:]); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("custody: creating master key file: %w", err)
	}
	if _, err := f.WriteString(hex.EncodeToString(m.k[:]) + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return m, f.Close()
}

// Binding is what a sealed value belongs to. It is the additional data of the ciphertext.
type Binding struct {
	OrgID string
	Kind  string
	ID    string
}

func (b Binding) aad() []byte {
	return []byte("latchkey/seal/v1\x00" + b.OrgID + "\x00" + b.Kind + "\x00" + b.ID)
}

const (
	keyringKind = "keyring"
	keyringID   = "keyring"
	sealFormat  = 1
	headerLen   = 1 + 4 // format byte, key version
)

// Keyring holds the data keys. It is safe for concurrent use.
type Keyring struct {
	mu      sync.RWMutex
	st      store.Store // to reload after another process rotates
	master  *MasterKey
	active  uint32
	keys    map[uint32]cipher.AEAD
	rawKeys map[uint32][]byte
}

type keyringFile struct {
	Active uint32        `json:"active"`
	Terms  []keyringTerm `json:"terms"`
}

type keyringTerm struct {
	Version uint32    `json:"version"`
	Key     []byte    `json:"key"`
	Created time.Time `json:"created"`
}

type keyringRecord struct {
	Format int    `json:"format"`
	Sealed []byte `json:"sealed"`
}

var keyringAAD = []byte("latchkey/keyring/v1")

// OpenKeyring loads the keyring from the store, creating it (with one data key) when the store
// has none. A keyring that the master key cannot open is ErrWrongMasterKey.
func OpenKeyring(ctx context.Context, st store.Store, master *MasterKey) (*Keyring, error) {
	kr := &Keyring{master: master, st: st}
	var rec store.Record
	err := st.View(ctx, func(r store.Reader) error {
		var err error
		rec, err = r.Get(ctx, keyringKind, keyringID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		if err := kr.create(ctx, st); err != nil {
			return nil, err
		}
		return kr, nil
	}
	if err != nil {
		return nil, err
	}
	if err := kr.load(rec.Data); err != nil {
		return nil, err
	}
	return kr, nil
}

func (kr *Keyring) create(ctx context.Context, st store.Store) error {
	file := keyringFile{Active: 1, Terms: []keyringTerm{{Version: 1, Key: randomKey(), Created: time.Now().UTC()}}}
	data, err := kr.wrap(file)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	err = st.Update(ctx, func(tx store.Tx) error {
		return tx.Insert(ctx, store.Record{Kind: keyringKind, ID: keyringID, Data: data, CreatedAt: now, UpdatedAt: now})
	})
	if errors.Is(err, store.ErrAlreadyExists) {
		// Another process created it first: use theirs.
		var rec store.Record
		if err := st.View(ctx, func(r store.Reader) error {
			var err error
			rec, err = r.Get(ctx, keyringKind, keyringID)
			return err
		}); err != nil {
			return err
		}
		return kr.load(rec.Data)
	}
	if err != nil {
		return err
	}
	return kr.install(file)
}

// Rotate adds a new data key version and makes it the one new seals use. Values sealed under
// older versions still open.
func (kr *Keyring) Rotate(ctx context.Context, st store.Store) (uint32, error) {
	var next keyringFile
	err := st.Update(ctx, func(tx store.Tx) error {
		rec, err := tx.Get(ctx, keyringKind, keyringID)
		if err != nil {
			return err
		}
		file, err := kr.unwrap(rec.Data)
		if err != nil {
			return err
		}
		v := file.Active
		for _, t := range file.Terms {
			v = max(v, t.Version)
		}
		file.Terms = append(file.Terms, keyringTerm{Version: v + 1, Key: randomKey(), Created: time.Now().UTC()})
		file.Active = v + 1
		data, err := kr.wrap(file)
		if err != nil {
			return err
		}
		rec.Data = data
		rec.UpdatedAt = time.Now().UTC()
		next = file
		return tx.Put(ctx, rec)
	})
	if err != nil {
		return 0, err
	}
	return next.Active, kr.install(next)
}

// Reload re-reads the keyring (after another process rotated it).
func (kr *Keyring) Reload(ctx context.Context, st store.Store) error {
	return st.View(ctx, func(r store.Reader) error {
		rec, err := r.Get(ctx, keyringKind, keyringID)
		if err != nil {
			return err
		}
		return kr.load(rec.Data)
	})
}

// ActiveVersion is the data key version new seals use.
func (kr *Keyring) ActiveVersion() uint32 {
	kr.mu.RLock()
	defer kr.mu.RUnlock()
	return kr.active
}

func (kr *Keyring) load(data []byte) error {
	file, err := kr.unwrap(data)
	if err != nil {
		return err
	}
	return kr.install(file)
}

func (kr *Keyring) install(file keyringFile) error {
	keys := make(map[uint32]cipher.AEAD, len(file.Terms))
	raw := make(map[uint32][]byte, len(file.Terms))
	for _, t := range file.Terms {
		a, err := newAEAD(t.Key)
		if err != nil {
			return err
		}
		keys[t.Version] = a
		raw[t.Version] = t.Key
	}
	if _, ok := keys[file.Active]; !ok {
		return errors.New("custody: keyring has no active data key")
	}
	kr.mu.Lock()
	kr.keys, kr.rawKeys, kr.active = keys, raw, file.Active
	kr.mu.Unlock()
	return nil
}

func (kr *Keyring) wrap(file keyringFile) ([]byte, error) {
	plain, err := json.Marshal(file)
	if err != nil {
		return nil, err
	}
	defer wipe(plain)
	a, err := newAEAD(kr.master.k[:])
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, a.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	sealed := a.Seal(nonce, nonce, plain, keyringAAD)
	return json.Marshal(keyringRecord{Format: 1, Sealed: sealed})
}

func (kr *Keyring) unwrap(data []byte) (keyringFile, error) {
	var rec keyringRecord
	if err := json.Unmarshal(data, &rec); err != nil || rec.Format != 1 {
		return keyringFile{}, errors.New("custody: keyring record is malformed")
	}
	a, err := newAEAD(kr.master.k[:])
	if err != nil {
		return keyringFile{}, err
	}
	if len(rec.Sealed) < a.NonceSize()+a.Overhead() {
		return keyringFile{}, ErrWrongMasterKey
	}
	plain, err := a.Open(nil, rec.Sealed[:a.NonceSize()], rec.Sealed[a.NonceSize():], keyringAAD)
	if err != nil {
		return keyringFile{}, ErrWrongMasterKey
	}
	defer wipe(plain)
	var file keyringFile
	if err := json.Unmarshal(plain, &file); err != nil {
		return keyringFile{}, errors.New("custody: keyring contents are malformed")
	}
	return file, nil
}

// Seal encrypts plaintext under the active data key, bound to b.
func (kr *Keyring) Seal(plaintext []byte, b Binding) ([]byte, error) {
	kr.mu.RLock()
	v, a := kr.active, kr.keys[kr.active]
	kr.mu.RUnlock()
	if a == nil {
		return nil, errors.New("custody: the keyring is sealed (its keys are wiped)")
	}
	out := make([]byte, headerLen+a.NonceSize(), headerLen+a.NonceSize()+len(plaintext)+a.Overhead())
	out[0] = sealFormat
	binary.BigEndian.PutUint32(out[1:5], v)
	if _, err := rand.Read(out[headerLen:]); err != nil {
		return nil, err
	}
	return a.Seal(out, out[headerLen:], plaintext, b.aad()), nil
}

// ErrUnseal is returned for any ciphertext that does not open: tampered, moved to another
// record, or sealed under a key this keyring does not have.
var ErrUnseal = errors.New("custody: sealed value does not open")

// Open decrypts a value sealed for b. The caller must wipe the result when done.
func (kr *Keyring) Open(sealed []byte, b Binding) ([]byte, error) {
	if len(sealed) < headerLen || sealed[0] != sealFormat {
		return nil, ErrUnseal
	}
	v := binary.BigEndian.Uint32(sealed[1:5])
	kr.mu.RLock()
	a := kr.keys[v]
	kr.mu.RUnlock()
	if a == nil && kr.st != nil && kr.Reload(context.Background(), kr.st) == nil {
		// Another process rotated the keyring since this one loaded it.
		kr.mu.RLock()
		a = kr.keys[v]
		kr.mu.RUnlock()
	}
	if a == nil || len(sealed) < headerLen+a.NonceSize()+a.Overhead() {
		return nil, ErrUnseal
	}
	nonce := sealed[headerLen : headerLen+a.NonceSize()]
	plain, err := a.Open(nil, nonce, sealed[headerLen+a.NonceSize():], b.aad())
	if err != nil {
		return nil, ErrUnseal
	}
	return plain, nil
}

// SealedVersion reports the data key version a sealed value uses (for re-sealing after rotation).
func SealedVersion(sealed []byte) (uint32, bool) {
	if len(sealed) < headerLen || sealed[0] != sealFormat {
		return 0, false
	}
	return binary.BigEndian.Uint32(sealed[1:5]), true
}

// MAC computes an HMAC-SHA256 keyed by a key derived from the active data key, for values that
// must be compared but never stored (one-time codes). purpose separates uses.
func (kr *Keyring) MAC(purpose string, msg []byte) []byte {
	kr.mu.RLock()
	// The first term's key is the MAC root so MACs stay comparable across rotations.
	var root []byte
	var lowest uint32
	for v, k := range kr.rawKeys {
		if root == nil || v < lowest {
			root, lowest = k, v
		}
	}
	kr.mu.RUnlock()
	return hmacSHA256(hkdfKey(root, "latchkey/mac/"+purpose), msg)
}

// EqualMAC compares two MACs in constant time.
func EqualMAC(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func randomKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

func wipe(b []byte) {
	for i := range b {
		b[i] = 0
	}
}

// KeyringExists reports whether st holds a keyring (a deployment was initialised in it).
func KeyringExists(ctx context.Context, st store.Store) (bool, error) {
	err := st.View(ctx, func(r store.Reader) error {
		_, err := r.Get(ctx, keyringKind, keyringID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
