package custody

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// The master key's seal: how a deployment gets its master key at start. "file" (the default)
// reads it from --master-key-file or LATCHKEY_MASTER_KEY; "transit" keeps it only wrapped by an
// OpenBao or Vault transit key (docs/operations.md, "Production custody"): the wrapped form is
// stored as the deployment's seal record, and every start asks the transit engine to unwrap it.
const (
	SealFile    = "file"
	SealTransit = "transit"
)

// sealKind/sealID is the deployment's seal record: which seal holds the master key and, for
// transit, the master key as the transit engine wrapped it. A deployment whose master key comes
// from a file has none.
const (
	sealKind = "seal"
	sealID   = "master_key"
)

// ErrNoSealRecord means the store holds no seal record (a deployment whose master key is a file,
// or a new one).
var ErrNoSealRecord = errors.New("custody: the deployment has no seal record")

// A Wrapper keeps the master key wrapped by a key that never leaves something outside Latchkey: an
// OpenBao/Vault transit engine, a PKCS#11 token, a cloud KMS. The wrapped form is stored as the
// deployment's seal record; every start asks the wrapper to unwrap it. Wrap and Unwrap may make
// network calls: they are never called inside a store transaction.
type Wrapper interface {
	// Type is the seal's name (--seal), recorded in the seal record.
	Type() string
	// Check refuses an incomplete or unsafe configuration without contacting anything.
	Check() error
	// Locate fills the fields of the seal record that say which key wraps the master key (no
	// secret: they are shown in error messages and the dashboard).
	Locate(rec *SealRecord)
	Wrap(ctx context.Context, m *MasterKey) (string, error)
	Unwrap(ctx context.Context, ciphertext string) (*MasterKey, error)
}

// SealRecord is what the seal record holds (no secret: the ciphertext opens only through the
// wrapping key). Addr, Mount and Key say where that key is, in the wrapper's own terms (for
// transit: the server, the engine's mount, the key's name).
type SealRecord struct {
	Type       string    `json:"type"`
	Addr       string    `json:"addr"`
	Mount      string    `json:"mount"`
	Key        string    `json:"key"`
	Ciphertext string    `json:"ciphertext"`
	Created    time.Time `json:"created"`
	// Shamir is the split of a --seal shamir master key (no secret: see ShamirSeal).
	Shamir *ShamirSeal `json:"shamir,omitempty"`
}

// LoadSealRecord reads the deployment's seal record (ErrNoSealRecord when there is none).
func LoadSealRecord(ctx context.Context, st store.Store) (*SealRecord, error) {
	var rec store.Record
	err := st.View(ctx, func(r store.Reader) error {
		var err error
		rec, err = r.Get(ctx, sealKind, sealID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNoSealRecord
	}
	if err != nil {
		return nil, err
	}
	var s SealRecord
	if err := json.Unmarshal(rec.Data, &s); err != nil {
		return nil, fmt.Errorf("custody: the seal record is unreadable: %w", err)
	}
	return &s, nil
}

// SaveSealRecord stores the seal record of a new deployment; it fails if one exists.
func SaveSealRecord(ctx context.Context, st store.Store, s *SealRecord) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return st.Update(ctx, func(tx store.Tx) error {
		return tx.Insert(
			ctx,
			store.Record{Kind: sealKind, ID: sealID, Data: data, CreatedAt: s.Created, UpdatedAt: s.Created},
		)
	})
}

// PutSealRecord records s as the deployment's seal record inside tx, replacing any (a rewrap).
func PutSealRecord(ctx context.Context, tx store.Tx, s *SealRecord) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return tx.Put(ctx, store.Record{Kind: sealKind, ID: sealID, Data: data, CreatedAt: s.Created, UpdatedAt: s.Created})
}

// DeleteSealRecord removes the deployment's seal record inside tx (a rewrap to a master key
// file); a deployment without one is left as it is.
func DeleteSealRecord(ctx context.Context, tx store.Tx) error {
	if err := tx.Delete(ctx, sealKind, sealID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// NewMasterKey makes a random master key in memory (the transit seal wraps it; it is never
// written anywhere in the clear).
func NewMasterKey() (*MasterKey, error) {
	m := newMasterKey()
	if _, err := rand.Read(m.k[:]); err != nil {
		return nil, err
	}
	return m, nil
}

// Transit wraps and unwraps the master key through an OpenBao/Vault transit secrets engine, by
// its documented HTTP API: POST /v1/<mount>/encrypt/<key> {"plaintext": base64} answers
// {"data":{"ciphertext":"vault:v…"}}, and /decrypt/<key> the reverse, authenticated by the
// X-Vault-Token header. The token is a secret: from the environment or a file only.
type Transit struct {
	Addr  string // https://bao.example:8200 (http only on loopback)
	Mount string // the engine's mount path, default "transit"
	Key   string // the transit key's name
	Token string
	// Namespace, when set, is sent as X-Vault-Namespace (Vault Enterprise, OpenBao namespaces).
	Namespace string
	HTTP      *http.Client
}

// Type is SealTransit.
func (Transit) Type() string { return SealTransit }

// Locate records the server, mount and key name.
func (t Transit) Locate(rec *SealRecord) { rec.Addr, rec.Mount, rec.Key = t.Addr, t.mount(), t.Key }

// Check refuses an incomplete or unsafe transit configuration (no request is made).
func (t Transit) Check() error {
	if err := checkEndpoint("--transit-addr", t.Addr); err != nil {
		return err
	}
	if t.Key == "" || strings.ContainsAny(t.Key, "/?#") {
		return errors.New("--transit-key is required: the name of the transit key that wraps the master key")
	}
	if strings.ContainsAny(t.mount(), "?#") {
		return fmt.Errorf("--transit-mount %q is not a mount path", t.Mount)
	}
	if t.Token == "" {
		return errors.New(
			"the transit token is required: give it in LATCHKEY_TRANSIT_TOKEN or a file named by LATCHKEY_TRANSIT_TOKEN_FILE",
		)
	}
	return nil
}

func (t Transit) mount() string {
	if m := strings.Trim(t.Mount, "/"); m != "" {
		return m
	}
	return "transit"
}

// Wrap has the transit engine encrypt m and returns its ciphertext.
func (t Transit) Wrap(ctx context.Context, m *MasterKey) (string, error) {
	var out struct {
		Data struct {
			Ciphertext string `json:"ciphertext"`
		} `json:"data"`
	}
	if err := t.call(ctx, "encrypt", map[string]string{"plaintext": base64.StdEncoding.EncodeToString(m.k[:])}, &out); err != nil {
		return "", err
	}
	if !strings.HasPrefix(out.Data.Ciphertext, "vault:v") {
		return "", errors.New("custody: transit encrypt answered no vault:v… ciphertext")
	}
	return out.Data.Ciphertext, nil
}

// Unwrap has the transit engine decrypt the wrapped master key.
func (t Transit) Unwrap(ctx context.Context, ciphertext string) (*MasterKey, error) {
	// A []byte member: encoding/json decodes the base64 into it, so no string copy of the key
	// is made, and call clears the answer's bytes.
	var out struct {
		Data struct {
			Plaintext []byte `json:"plaintext"`
		} `json:"data"`
	}
	if err := t.call(ctx, "decrypt", map[string]string{"ciphertext": ciphertext}, &out); err != nil {
		clear(out.Data.Plaintext)
		return nil, err
	}
	return masterKeyFrom(SealTransit, out.Data.Plaintext)
}

// call POSTs body to the engine's op endpoint. Errors name the status and the engine's own
// error strings, never the request (which holds the master key for encrypt).
func (t Transit) call(ctx context.Context, op string, body any, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	endpoint := strings.TrimSuffix(t.Addr, "/") + "/v1/" + t.mount() + "/" + op + "/" + url.PathEscape(t.Key)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Vault-Token", t.Token)
	req.Header.Set("X-Vault-Request", "true")
	if t.Namespace != "" {
		req.Header.Set("X-Vault-Namespace", t.Namespace)
	}
	client := t.HTTP
	if client == nil {
		client = &http.Client{Timeout: 15 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("custody: transit %s at %s: %w", op, t.Addr, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	defer clear(raw) // a decrypt answer holds the master key, in base64
	if err != nil {
		return fmt.Errorf("custody: transit %s: %w", op, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Errors []string `json:"errors"`
		}
		_ = json.Unmarshal(raw, &e)
		return fmt.Errorf(
			"custody: transit %s of key %q at %s: HTTP %d %s",
			op,
			t.Key,
			t.Addr,
			resp.StatusCode,
			strings.Join(e.Errors, "; "),
		)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("custody: transit %s: unreadable answer: %w", op, err)
	}
	return nil
}
