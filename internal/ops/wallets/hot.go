package wallets

import (
	"context"

	"github.com/latchkey/latchkey/internal/hot"
	"github.com/latchkey/latchkey/internal/store"
)

// Signers holds resolved signing keys (ResolveSigner's answer: the account or private key, its
// public data and sealed key) per (organization, signWith), valid while the organization's
// records are unchanged (package hot). Only keys found are kept.
type Signers = hot.Cache[*SigningKey]

// NewSigners returns an empty cache over v.
func NewSigners(v *hot.Versions) *Signers { return hot.NewCache[*SigningKey](v, 0) }

// resolveSigner is ResolveSigner through d.Signers when r reads committed data (a transaction's
// reads may include its own uncommitted writes, which are never cached). The key returned is
// shared: nothing modifies a SigningKey after it is resolved, and the custodian opens the
// sealed key into a new buffer.
// It also returns what the key's existence can be checked with later, in the activity's
// transaction (stillThere).
func (d Deps) resolveSigner(
	ctx context.Context,
	r store.Reader,
	orgID, signWith string,
) (*SigningKey, unchanged, error) {
	if _, inTx := r.(store.Tx); d.Signers == nil || inTx {
		k, err := ResolveSigner(ctx, r, orgID, signWith)
		return k, nil, err
	}
	k, t, err := d.Signers.LoadToken(ctx, orgID+"\x00"+signWith, orgID, func(func(string)) (*SigningKey, error) {
		return ResolveSigner(ctx, r, orgID, signWith)
	})
	if err != nil {
		return nil, nil, err
	}
	v := d.Signers.Versions()
	return k, func(ctx context.Context) bool { return v.Unchanged(ctx, &t) }, nil
}

// unchanged reports, inside the activity's transaction, that nothing of the organization a
// key was resolved in has been written since (hot.Versions.Unchanged): the key is still there.
// nil: unknown, read the store.
type unchanged func(ctx context.Context) bool
