package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/store"
)

// masterSource fetches the deployment's master key again, the way this process got it at start:
// its file (re-read, so a file replaced after a rewrap is picked up) or its seal record
// unwrapped by the configured seal. A deployment moved to another kind of seal meanwhile needs
// a restart with that seal's flags, and the error says so.
func masterSource(cfg Config, st store.Store) custody.MasterSource {
	return func(ctx context.Context) (*custody.MasterKey, error) {
		if cfg.Seal == custody.SealShamir {
			return nil, errors.New("the master key was rewrapped, and a server unsealed from shares cannot fetch it: " +
				"seal it (latchkey seal) and unseal it with the new shares")
		}
		rec, err := custody.LoadSealRecord(ctx, st)
		if err != nil && !errors.Is(err, custody.ErrNoSealRecord) {
			return nil, err
		}
		m, err := recordedMaster(ctx, cfg, rec, func() (*custody.MasterKey, error) { return loadMasterKey(cfg) })
		if errors.Is(err, custody.ErrNoSealRecord) {
			return nil, fmt.Errorf(
				"the master key is no longer held by the %s seal: restart with the deployment's seal",
				cfg.Seal,
			)
		}
		return m, err
	}
}

// RewrapTarget says where a new master key goes (latchkey keyring rewrap).
type RewrapTarget struct {
	// Seal is the new seal: "" keeps the current one; "file" writes the new master key to
	// MasterKeyFile; a wrapping seal (transit…) wraps it with the key its flags in the server's
	// configuration name.
	Seal string
	// MasterKeyFile is where a file seal's new master key is written (it must not exist).
	MasterKeyFile string
	// KeyShares and KeyThreshold split a shamir seal's new master key; NewShares is given the
	// new shares to show once, before the keyring is rewrapped.
	KeyShares, KeyThreshold int
	NewShares               func(*custody.Shares) error
}

// RewrapResult is what a rewrap did.
type RewrapResult struct {
	Seal          string `json:"seal"`
	OldMasterKey  string `json:"oldMasterKeyId"`
	NewMasterKey  string `json:"newMasterKeyId"`
	MasterKeyFile string `json:"masterKeyFile,omitempty"`
}

// RewrapMasterKey gives the deployment a new master key: the keyring is re-encrypted under it,
// and the seal record replaced (or removed, for a file), in one transaction; the data keys and
// every sealed value stay as they are. The new key is made and wrapped (or written to its file)
// before the transaction, so no network call happens inside it; if the transaction fails the
// new file is removed and the deployment keeps its old key. Running servers fetch the new key
// (masterSource) the next time they read the keyring: replace the file at their
// --master-key-file with the new one before then (a file seal).
func (s *Server) RewrapMasterKey(ctx context.Context, to RewrapTarget) (RewrapResult, error) {
	seal := to.Seal
	if seal == "" {
		seal = s.cfg.Seal
	}
	if seal == "" {
		seal = custody.SealFile
	}
	res := RewrapResult{Seal: seal, OldMasterKey: s.Keyring.MasterID()}
	var next *custody.MasterKey
	var also func(store.Tx) error
	if seal == custody.SealFile {
		if to.MasterKeyFile == "" {
			return res, errors.New(
				"--new-master-key-file is required: the file the new master key is written to (it must not exist)",
			)
		}
		m, err := custody.GenerateMasterKeyFile(to.MasterKeyFile)
		if err != nil {
			return res, err
		}
		next, res.MasterKeyFile = m, to.MasterKeyFile
		also = func(tx store.Tx) error { return custody.DeleteSealRecord(ctx, tx) }
	} else if seal == custody.SealShamir {
		rec, err := splitForRewrap(to)
		if err != nil {
			return res, err
		}
		next, rec.m = rec.m, nil
		also = func(tx store.Tx) error { return custody.PutSealRecord(ctx, tx, rec.SealRecord) }
	} else {
		if to.MasterKeyFile != "" {
			return res, fmt.Errorf("--new-master-key-file is for a file seal; --new-seal %s keeps the master key wrapped", seal)
		}
		w, err := s.cfg.wrapperFor(seal)
		if err != nil {
			return res, err
		}
		if err := w.Check(); err != nil {
			return res, err
		}
		if next, err = custody.NewMasterKey(); err != nil {
			return res, err
		}
		ct, err := w.Wrap(ctx, next)
		if err != nil {
			next.Wipe()
			return res, fmt.Errorf("wrapping the new master key through %s: %w", seal, err)
		}
		rec := &custody.SealRecord{Type: w.Type(), Ciphertext: ct, Created: time.Now().UTC()}
		w.Locate(rec)
		also = func(tx store.Tx) error { return custody.PutSealRecord(ctx, tx, rec) }
	}
	if err := s.Keyring.Rewrap(ctx, s.Store, next, also); err != nil {
		next.Wipe()
		if res.MasterKeyFile != "" {
			os.Remove(res.MasterKeyFile)
		}
		return res, err
	}
	res.NewMasterKey = s.Keyring.MasterID()
	return res, nil
}

// KeyringStatus reports the keyring's master key, seal and data key versions with the sealed
// values each still seals (a scan of the whole store).
func (s *Server) KeyringStatus(ctx context.Context) (custody.KeyringStatus, error) {
	ex, ok := s.Store.(store.Exporter)
	if !ok {
		return custody.KeyringStatus{}, errors.New("this store cannot be scanned")
	}
	return s.Keyring.Status(ctx, s.Store, ex)
}
