package wallets

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/chain/address"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Record kinds.
const (
	KindWallet        = "wallet"
	KindAccount       = "wallet_account"
	KindPrivateKey    = "private_key"
	KindPrivateKeyTag = "private_key_tag"
	KindImportTarget  = "import_target"
)

// Lookup keys.
const (
	KeyWalletName     = "wallet.name"               // unique: org/name
	KeyAccountAddress = "wallet_account.address"    // normalized address
	KeyAccountWallet  = "wallet_account.wallet"     // wallet id
	KeyAccountPubKey  = "wallet_account.public_key" // lowercase hex
	KeyAccountPath    = "wallet_account.path"       // unique: wallet/path/format
	KeyPrivKeyName    = "private_key.name"          // unique: org/name
	KeyPrivKeyAddress = "private_key.address"       // normalized address
	KeyPrivKeyPubKey  = "private_key.public_key"    // lowercase hex
	KeyPKTagName      = "private_key_tag.name"      // unique: org/name
	KeyPKTagMember    = "private_key_tag.member"    // private key id
)

// Wallet is an HD wallet.
type Wallet struct {
	ID             string    `json:"id"`
	OrgID          string    `json:"orgId"`
	Name           string    `json:"name"`
	SealedMnemonic []byte    `json:"sealedMnemonic"`
	Exported       bool      `json:"exported,omitempty"`
	Imported       bool      `json:"imported,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
}

func (w *Wallet) binding() custody.Binding {
	return custody.Binding{OrgID: w.OrgID, Kind: KindWallet, ID: w.ID}
}

// ToWire renders the wallet.
func (w *Wallet) ToWire() wire.Wallet {
	return wire.Wallet{
		WalletId:   w.ID,
		WalletName: w.Name,
		CreatedAt:  ts(w.CreatedAt),
		UpdatedAt:  ts(w.UpdatedAt),
		Exported:   w.Exported,
		Imported:   w.Imported,
	}
}

// Account is a wallet account.
type Account struct {
	ID            string    `json:"id"`
	OrgID         string    `json:"orgId"`
	WalletID      string    `json:"walletId"`
	Name          string    `json:"name,omitempty"`
	Curve         string    `json:"curve"`
	PathFormat    string    `json:"pathFormat"`
	Path          string    `json:"path"`
	AddressFormat string    `json:"addressFormat"`
	Address       string    `json:"address"`
	PublicKey     string    `json:"publicKey"`
	SealedKey     []byte    `json:"sealedKey"`
	Exported      bool      `json:"exported,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
}

func (a *Account) binding() custody.Binding {
	return custody.Binding{OrgID: a.OrgID, Kind: KindAccount, ID: a.ID}
}

// ToWire renders the account.
func (a *Account) ToWire() wire.WalletAccount {
	return wire.WalletAccount{
		WalletAccountId: a.ID,
		OrganizationId:  a.OrgID,
		WalletId:        a.WalletID,
		Curve:           wire.Curve(a.Curve),
		PathFormat: wire.PathFormat(
			a.PathFormat,
		),
		Path:          a.Path,
		AddressFormat: wire.AddressFormat(a.AddressFormat),
		Address:       a.Address,
		CreatedAt:     ts(a.CreatedAt),
		UpdatedAt:     ts(a.UpdatedAt),
		PublicKey:     a.PublicKey,
		Name:          a.Name,
	}
}

// Addr is one address of a private key.
type Addr struct {
	Format  string `json:"format"`
	Address string `json:"address"`
}

// PrivateKey is a standalone key.
type PrivateKey struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"orgId"`
	Name      string    `json:"name"`
	Curve     string    `json:"curve"`
	PublicKey string    `json:"publicKey"`
	Addresses []Addr    `json:"addresses"`
	SealedKey []byte    `json:"sealedKey"`
	Exported  bool      `json:"exported,omitempty"`
	Imported  bool      `json:"imported,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

func (k *PrivateKey) binding() custody.Binding {
	return custody.Binding{OrgID: k.OrgID, Kind: KindPrivateKey, ID: k.ID}
}

// PrivateKeyTag is a named set of private keys.
type PrivateKeyTag struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"orgId"`
	Name      string    `json:"name"`
	KeyIDs    []string  `json:"keyIds"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ImportTarget is the one-time key an import is encrypted to.
type ImportTarget struct {
	ID           string    `json:"id"` // userID + "/" + what
	OrgID        string    `json:"orgId"`
	UserID       string    `json:"userId"`
	SealedTarget []byte    `json:"sealedTarget"`
	CreatedAt    time.Time `json:"createdAt"`
}

func (t *ImportTarget) binding() custody.Binding {
	return custody.Binding{OrgID: t.OrgID, Kind: KindImportTarget, ID: t.ID}
}

func ts(t time.Time) wire.Externaldatav1Timestamp {
	return wire.Externaldatav1Timestamp{Seconds: itoa(t.Unix()), Nanos: itoa(int64(t.Nanosecond()))}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func load[T any](ctx context.Context, r store.Reader, kind, orgID, id, what string) (*T, error) {
	return records.Load[T](ctx, r, kind, orgID, id, what)
}

func save(
	ctx context.Context,
	tx store.Tx,
	kind, id, orgID string,
	created, updated time.Time,
	v any,
	keys ...store.Key,
) error {
	err := records.Save(ctx, tx, kind, id, orgID, created, updated, v, keys...)
	if err != nil && apierr.From(err).Code == apierr.AlreadyExists {
		return apierr.New(
			apierr.AlreadyExists,
			"ALREADY_EXISTS",
			"%s already exists (names must be unique)",
			strings.ReplaceAll(kind, "_", " "),
		)
	}
	return err
}

func listKind[T any](ctx context.Context, r store.Reader, kind, orgID string, opts store.ListOptions) ([]*T, error) {
	return records.List[T](ctx, r, kind, orgID, opts)
}

func lookupIDs(ctx context.Context, r store.Reader, key, value, kind, orgID string) ([]string, error) {
	return records.LookupIDs(ctx, r, key, value, kind, orgID)
}

func saveWallet(ctx context.Context, tx store.Tx, w *Wallet) error {
	return save(ctx, tx, KindWallet, w.ID, w.OrgID, w.CreatedAt, w.UpdatedAt, w,
		store.Key{Name: KeyWalletName, Value: w.OrgID + "/" + w.Name, Unique: true})
}

func saveAccount(ctx context.Context, tx store.Tx, a *Account) error {
	err := save(ctx, tx, KindAccount, a.ID, a.OrgID, a.CreatedAt, a.UpdatedAt, a,
		store.Key{Name: KeyAccountAddress, Value: address.Normalize(a.Address)},
		store.Key{Name: KeyAccountWallet, Value: a.WalletID},
		store.Key{Name: KeyAccountPubKey, Value: a.PublicKey},
		store.Key{Name: KeyAccountPath, Value: a.WalletID + "/" + a.Path + "/" + a.AddressFormat, Unique: true})
	if e := apierr.From(err); err != nil && e.Code == apierr.AlreadyExists {
		return apierr.New(
			apierr.AlreadyExists,
			"ALREADY_EXISTS",
			"wallet %s already has an account at path %s with format %s",
			a.WalletID,
			a.Path,
			a.AddressFormat,
		)
	}
	return err
}

func savePrivateKey(ctx context.Context, tx store.Tx, k *PrivateKey) error {
	keys := []store.Key{
		{Name: KeyPrivKeyName, Value: k.OrgID + "/" + k.Name, Unique: true},
		{Name: KeyPrivKeyPubKey, Value: k.PublicKey},
	}
	for _, a := range k.Addresses {
		keys = append(keys, store.Key{Name: KeyPrivKeyAddress, Value: address.Normalize(a.Address)})
	}
	return save(ctx, tx, KindPrivateKey, k.ID, k.OrgID, k.CreatedAt, k.UpdatedAt, k, keys...)
}

func savePKTag(ctx context.Context, tx store.Tx, t *PrivateKeyTag) error {
	keys := []store.Key{{Name: KeyPKTagName, Value: t.OrgID + "/" + t.Name, Unique: true}}
	for _, k := range t.KeyIDs {
		keys = append(keys, store.Key{Name: KeyPKTagMember, Value: k})
	}
	return save(ctx, tx, KindPrivateKeyTag, t.ID, t.OrgID, t.CreatedAt, t.UpdatedAt, t, keys...)
}
