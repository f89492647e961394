package custody

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/custody/hd"
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
	master  *MasterKey  // guarded by mu
	source  MasterSource
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
	// MasterID names the master key that wraps the keyring (MasterKey.ID; empty in records
	// written before rewrapping existed), so a refusal can say which key is wanted.
	MasterID string `json:"masterId,omitempty"`
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
		return tx.Insert(
			ctx,
			store.Record{Kind: keyringKind, ID: keyringID, Data: data, CreatedAt: now, UpdatedAt: now},
		)
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
	v, err := kr.rotate(ctx, st)
	if errors.Is(err, ErrWrongMasterKey) {
		// The keyring was rewrapped by another process: fetch the new master key (outside the
		// transaction) and try once more.
		if err := kr.Reload(ctx, st); err != nil {
			return 0, err
		}
		v, err = kr.rotate(ctx, st)
	}
	return v, err
}

func (kr *Keyring) rotate(ctx context.Context, st store.Store) (uint32, error) {
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

// Reload re-reads the keyring (after another process rotated it, or rewrapped it under a new
// master key: then the master key is fetched again from the keyring's MasterSource).
func (kr *Keyring) Reload(ctx context.Context, st store.Store) error {
	var data []byte
	if err := st.View(ctx, func(r store.Reader) error {
		rec, err := r.Get(ctx, keyringKind, keyringID)
		data = rec.Data
		return err
	}); err != nil {
		return err
	}
	file, err := kr.unwrap(data)
	if errors.Is(err, ErrWrongMasterKey) {
		file, err = kr.refreshMaster(ctx, data)
	}
	if err != nil {
		return err
	}
	return kr.install(file)
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
	return wrapKeyring(kr.currentMaster(), file)
}

// wrapKeyring seals the keyring's contents under master.
func wrapKeyring(master *MasterKey, file keyringFile) ([]byte, error) {
	plain, err := json.Marshal(file)
	if err != nil {
		return nil, err
	}
	defer wipe(plain)
	a, done, err := masterAEAD(master)
	if err != nil {
		return nil, err
	}
	defer done()
	nonce := make([]byte, a.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	sealed := a.Seal(nonce, nonce, plain, keyringAAD)
	return json.Marshal(keyringRecord{Format: 1, Sealed: sealed, MasterID: master.ID()})
}

func (kr *Keyring) unwrap(data []byte) (keyringFile, error) {
	return unwrapKeyring(kr.currentMaster(), data)
}

// unwrapKeyring opens the keyring record with master (ErrWrongMasterKey, naming the key the
// record wants, if it is another).
func unwrapKeyring(master *MasterKey, data []byte) (keyringFile, error) {
	var rec keyringRecord
	if err := json.Unmarshal(data, &rec); err != nil || rec.Format != 1 {
		return keyringFile{}, errors.New("custody: keyring record is malformed")
	}
	if rec.MasterID != "" && rec.MasterID != master.ID() {
		return keyringFile{}, wrongMasterKey{want: rec.MasterID, have: master.ID()}
	}
	a, done, err := masterAEAD(master)
	if err != nil {
		return keyringFile{}, err
	}
	defer done()
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

// wrongMasterKey is ErrWrongMasterKey naming the master key the keyring is wrapped by and the one
// given (their IDs: fingerprints, not the keys).
type wrongMasterKey struct{ want, have string }

func (e wrongMasterKey) Error() string {
	return fmt.Sprintf("%v: the keyring is wrapped by master key %s, this one is %s", ErrWrongMasterKey, e.want, e.have)
}

func (e wrongMasterKey) Unwrap() error { return ErrWrongMasterKey }

// ID is the master key's fingerprint: the first 8 bytes of an HMAC-SHA256 keyed by it, in hex.
// It names a master key in the keyring record and in messages without revealing it (the HMAC
// leaves no copy of the key's pads behind, as crypto/hmac would).
func (m *MasterKey) ID() string {
	var sum [32]byte
	hd.HMACSHA256(&sum, m.k[:], []byte("latchkey/master-key-id"))
	return hex.EncodeToString(sum[:8])
}

// masterAEAD is AES-256-GCM keyed by the master key, and a function that zeroes the cipher
// values crypto/aes and crypto/cipher built from it (their expanded key begins with the key
// itself, and neither package offers a way to clear it): call it when done, and do not use the
// AEAD after.
func masterAEAD(m *MasterKey) (cipher.AEAD, func(), error) {
	block, err := aes.NewCipher(m.k[:])
	if err != nil {
		return nil, nil, err
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		zeroPointee(block)
		return nil, nil, err
	}
	return a, func() { zeroPointee(a); zeroPointee(block) }, nil
}

// zeroPointee zeroes the value v points to (a pointer held in an interface, whatever its
// package), through reflect so that the pointers it holds are cleared with the garbage
// collector's write barriers.
func zeroPointee(v any) {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() && rv.Elem().CanSet() {
		rv.Elem().SetZero()
	}
}

// A MasterSource fetches the deployment's master key again: from its file, or by unwrapping the
// seal record. A keyring whose record another process rewrapped under a new master key
// (latchkey keyring rewrap) calls it once to carry on without a restart.
type MasterSource func(ctx context.Context) (*MasterKey, error)

// SetMasterSource sets how this keyring fetches the master key after a rewrap elsewhere.
func (kr *Keyring) SetMasterSource(f MasterSource) {
	kr.mu.Lock()
	kr.source = f
	kr.mu.Unlock()
}

func (kr *Keyring) currentMaster() *MasterKey {
	kr.mu.RLock()
	defer kr.mu.RUnlock()
	return kr.master
}

// MasterID is the ID of the master key this keyring is opened with.
func (kr *Keyring) MasterID() string { return kr.currentMaster().ID() }

// refreshMaster fetches the master key from the source after the keyring record did not open
// with the one held, and keeps it if it opens data. It is never called inside a transaction
// (a source may ask a transit engine or a token).
func (kr *Keyring) refreshMaster(ctx context.Context, data []byte) (keyringFile, error) {
	kr.mu.RLock()
	source := kr.source
	kr.mu.RUnlock()
	if source == nil {
		return keyringFile{}, ErrWrongMasterKey
	}
	m, err := source(ctx)
	if err != nil {
		return keyringFile{}, fmt.Errorf(
			"custody: the keyring was rewrapped under another master key, and fetching it again failed: %w",
			err,
		)
	}
	file, err := unwrapKeyring(m, data)
	if err != nil {
		m.Wipe()
		return keyringFile{}, err
	}
	kr.mu.Lock()
	old := kr.master
	kr.master = m
	kr.mu.Unlock()
	if old != m {
		old.Wipe()
	}
	return file, nil
}

// Wipe zeroes the master key's bytes (after a rewrap replaced it).
func (m *MasterKey) Wipe() {
	if m != nil {
		clear(m.k[:])
	}
}

// Rewrap re-encrypts the keyring under next and makes next the master key this keyring holds.
// The data keys do not change, so no sealed value is touched: it is quick whatever the store
// holds. also runs in the same transaction (it records the new seal, or removes the old seal
// record); nothing in it may call out of the process. Other processes that hold the old master
// key carry on with the data keys they have and fetch the new master key (SetMasterSource) the
// first time they need to read the keyring again.
func (kr *Keyring) Rewrap(ctx context.Context, st store.Store, next *MasterKey, also func(store.Tx) error) error {
	cur := kr.currentMaster()
	if cur.ID() == next.ID() {
		return errors.New("custody: the new master key is the one in use")
	}
	var file keyringFile
	err := st.Update(ctx, func(tx store.Tx) error {
		rec, err := tx.Get(ctx, keyringKind, keyringID)
		if err != nil {
			return err
		}
		if file, err = unwrapKeyring(cur, rec.Data); err != nil {
			return err
		}
		if rec.Data, err = wrapKeyring(next, file); err != nil {
			return err
		}
		rec.UpdatedAt = time.Now().UTC()
		if err := tx.Put(ctx, rec); err != nil {
			return err
		}
		if also != nil {
			return also(tx)
		}
		return nil
	})
	if err != nil {
		return err
	}
	kr.mu.Lock()
	kr.master = next
	kr.mu.Unlock()
	cur.Wipe()
	return kr.install(file)
}

// KeyringStatus is what `latchkey keyring status` and the dashboard show of the keyring: the
// master key that wraps it, its data key versions and how many sealed values each still seals.
type KeyringStatus struct {
	MasterKeyID   string           `json:"masterKeyId"`
	Seal          string           `json:"seal"`
	ActiveVersion uint32           `json:"activeVersion"`
	Versions      []KeyringVersion `json:"versions"`
}

// KeyringVersion is one data key version.
type KeyringVersion struct {
	Version uint32    `json:"version"`
	Created time.Time `json:"created"`
	Active  bool      `json:"active"`
	// Sealed counts the sealed values in the store under this version (in records of every
	// kind; activities hold none).
	Sealed int `json:"sealedValues"`
}

// Status reports the keyring: its versions, read from the store, and the sealed values each
// version seals, found by reading every record through ex (a whole-store scan: an operator's
// request, not a hot path).
func (kr *Keyring) Status(ctx context.Context, st store.Store, ex store.Exporter) (KeyringStatus, error) {
	var data []byte
	if err := st.View(ctx, func(r store.Reader) error {
		rec, err := r.Get(ctx, keyringKind, keyringID)
		data = rec.Data
		return err
	}); err != nil {
		return KeyringStatus{}, err
	}
	file, err := kr.unwrap(data)
	if err != nil {
		return KeyringStatus{}, err
	}
	for _, t := range file.Terms {
		wipe(t.Key)
	}
	out := KeyringStatus{MasterKeyID: kr.MasterID(), Seal: SealFile, ActiveVersion: file.Active}
	if rec, err := LoadSealRecord(ctx, st); err == nil {
		out.Seal = rec.Type
	} else if !errors.Is(err, ErrNoSealRecord) {
		return out, err
	}
	known := map[uint32]bool{}
	for _, t := range file.Terms {
		known[t.Version] = true
	}
	counts, err := CountSealed(ctx, ex, known)
	if err != nil {
		return out, err
	}
	for _, t := range file.Terms {
		out.Versions = append(
			out.Versions,
			KeyringVersion{
				Version: t.Version,
				Created: t.Created,
				Active:  t.Version == file.Active,
				Sealed:  counts[t.Version],
			},
		)
	}
	return out, nil
}

// CountSealed counts the sealed values in every record ex holds, by the data key version in
// their header. A sealed value is a byte string in a record's JSON (base64, as encoding/json
// writes []byte) that starts with the seal format byte and a version the keyring has, and is
// long enough to hold a nonce and a tag; the keyring and seal records themselves (sealed under
// the master key) are skipped.
func CountSealed(ctx context.Context, ex store.Exporter, versions map[uint32]bool) (map[uint32]int, error) {
	kinds, err := ex.RecordKinds(ctx)
	if err != nil {
		return nil, err
	}
	counts := map[uint32]int{}
	for kind := range kinds {
		if kind == keyringKind || kind == sealKind {
			continue
		}
		err := ex.EachRecord(ctx, kind, func(rec store.Record, _ []store.Key) error {
			var v any
			if json.Unmarshal(rec.Data, &v) != nil {
				return nil
			}
			countSealedIn(v, versions, counts)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return counts, nil
}

// minSealed is the shortest sealed value: header, GCM nonce and tag.
const minSealed = headerLen + 12 + 16

func countSealedIn(v any, versions map[uint32]bool, counts map[uint32]int) {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			countSealedIn(e, versions, counts)
		}
	case []any:
		for _, e := range x {
			countSealedIn(e, versions, counts)
		}
	case string:
		// base64 of minSealed bytes is at least 44 characters.
		if len(x) < 44 {
			return
		}
		b, err := base64.StdEncoding.DecodeString(x)
		if err != nil || len(b) < minSealed || b[0] != sealFormat {
			return
		}
		if ver := binary.BigEndian.Uint32(b[1:5]); versions[ver] {
			counts[ver]++
		}
	}
}
