package wallets

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/chain/address"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/ops/organizations"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Deps are what these operations need.
type Deps struct {
	Custodian *custody.Custodian
	// Signers, when set, keeps the keys signing activities resolve in memory (hot.go).
	Signers *Signers
	// Env gives the per-organization limits (nil: directory.DefaultLimits).
	Env func(x *activity.Exec) directory.Env
}

// limits are the configured per-organization limits.
func (d Deps) limits(x *activity.Exec) directory.Limits {
	if d.Env == nil {
		return directory.DefaultLimits
	}
	return d.Env(x).Limits
}

// Limits per organization (Turnkey's documented ones).
const (
	MaxWalletsPerOrg     = 100
	MaxPrivateKeysPerOrg = 1000
)

// Limits per request (docs/limits.md §8.1), checked before any derivation, key generation,
// signature or store read: each item costs a derivation, a signature or a write, so a request's
// cost must not grow with a list its body can make long for a few bytes an item.
const (
	// MaxAccountsPerRequest bounds the accounts create_wallet, create_wallet_accounts and
	// create_sub_organization's wallet derive at once (about 0.15 ms each).
	MaxAccountsPerRequest = 256
	// MaxPayloadsPerRequest bounds the payloads sign_raw_payloads signs at once (about 0.05 ms
	// each; an empty Ed25519 payload is three bytes of the body).
	MaxPayloadsPerRequest = 1000
	// MaxIDsPerRequest bounds the ids a delete or a tag change lists (wallet accounts, private
	// key tags; wallets and private keys are bounded by what an organization may hold).
	MaxIDsPerRequest = 1000
	// MaxAddressFormatsPerKey bounds the address formats one created private key asks for
	// (there are fewer known formats).
	MaxAddressFormatsPerKey = 64
)

// checkCount refuses a list longer than limit before any of its items is looked at.
func checkCount(field string, n, limit int, what string) error {
	if n > limit {
		return apierr.Invalid(field, "%d %s, at most %d in one request", n, what, limit)
	}
	return nil
}

// Register adds the operations to reg and returns the record kinds the package keeps under an
// organization (they go when a sub-organization is deleted, keys included).
func Register(reg *activity.Registry, d Deps) (owned []string) {
	reg.Submit(
		activity.Operation{
			Path:    "create_wallet",
			Access:  activity.AccessRoot,
			Prepare: activity.On(d.prepareCreateWallet),
			Execute: activity.On(createWallet),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "create_wallet_accounts",
			Access:  activity.AccessRoot,
			Prepare: activity.On(d.prepareWalletAccounts),
			Execute: activity.On(createWalletAccounts),
		},
	)
	reg.Submit(
		activity.Operation{Path: "update_wallet", Access: activity.AccessRoot, Execute: activity.On(updateWallet)},
	)
	reg.Submit(
		activity.Operation{Path: "delete_wallets", Access: activity.AccessRoot, Execute: activity.On(deleteWallets)},
	)
	reg.Submit(
		activity.Operation{
			Path:    "delete_wallet_accounts",
			Access:  activity.AccessRoot,
			Execute: activity.On(deleteWalletAccounts),
		},
	)
	reg.Query(activity.QueryOp{Path: "get_wallet", Execute: activity.Query(getWallet)})
	reg.Query(activity.QueryOp{Path: "list_wallets", Execute: activity.Query(listWallets)})
	reg.Query(activity.QueryOp{Path: "get_wallet_account", Execute: activity.Query(getWalletAccount)})
	reg.Query(activity.QueryOp{Path: "list_wallet_accounts", Execute: activity.Query(listWalletAccounts)})
	d.registerKeys(reg)
	d.registerSigning(reg)
	d.registerTransactions(reg)
	d.registerExport(reg)
	return OwnedKinds
}

// OwnedKinds are the record kinds of this domain an organization owns.
var OwnedKinds = []string{KindAccount, KindWallet, KindPrivateKeyTag, KindPrivateKey, KindImportTarget}

// ExportGuard refuses deleting an organization that holds wallets or private keys never
// exported (delete_sub_organization without deleteWithoutExport).
func ExportGuard(ctx context.Context, r store.Reader, orgID string) error {
	ws, err := listKind[Wallet](ctx, r, KindWallet, orgID, store.ListOptions{})
	if err != nil {
		return err
	}
	for _, w := range ws {
		if !w.Exported {
			return apierr.New(
				apierr.FailedPrecondition,
				"WALLET_NOT_EXPORTED",
				"wallet %s has not been exported; export it first or pass deleteWithoutExport",
				w.ID,
			)
		}
	}
	ks, err := listKind[PrivateKey](ctx, r, KindPrivateKey, orgID, store.ListOptions{})
	if err != nil {
		return err
	}
	for _, k := range ks {
		if !k.Exported {
			return apierr.New(
				apierr.FailedPrecondition,
				"PRIVATE_KEY_NOT_EXPORTED",
				"private key %s has not been exported; export it first or pass deleteWithoutExport",
				k.ID,
			)
		}
	}
	return nil
}

func fieldIdx(f string, i int) string { return f + "[" + strconv.Itoa(i) + "]" }

// accountSpec is a checked account parameter.
type accountSpec struct {
	wire.WalletAccountParams
	field string
}

func checkAccounts(field string, in []wire.WalletAccountParams) ([]accountSpec, error) {
	if err := checkCount(field, len(in), MaxAccountsPerRequest, "accounts"); err != nil {
		return nil, err
	}
	out := make([]accountSpec, 0, len(in))
	for i, a := range in {
		f := fieldIdx(field, i)
		if a.PathFormat != "PATH_FORMAT_BIP32" {
			return nil, apierr.Invalid(
				f+".pathFormat",
				"invalid path format %q: only PATH_FORMAT_BIP32 is supported",
				a.PathFormat,
			)
		}
		if err := address.CheckCurve(string(a.AddressFormat), string(a.Curve)); err != nil {
			return nil, apierr.Invalid(f, "%v", err)
		}
		if strings.HasPrefix(string(a.AddressFormat), "ADDRESS_FORMAT_SPARK_") {
			a.Path = address.SparkIdentityPath // set by the server whatever the client sends
		}
		if a.Path == "" {
			return nil, apierr.Required(f + ".path")
		}
		out = append(out, accountSpec{WalletAccountParams: a, field: f})
	}
	return out, nil
}

// deriveAccounts derives and addresses accounts of w; persist writes them.
// deriveAccounts derives and seals the accounts specs asks for from the wallet's mnemonic. It
// needs no store: MintWallet runs it before the transaction.
func (d Deps) deriveAccounts(x *activity.Exec, w *Wallet, specs []accountSpec) ([]*Account, error) {
	accts := make([]*Account, len(specs))
	cs := make([]custody.AccountSpec, len(specs))
	for i, s := range specs {
		accts[i] = &Account{
			ID:            id.New(),
			OrgID:         w.OrgID,
			WalletID:      w.ID,
			Name:          s.Name,
			Curve:         string(s.Curve),
			PathFormat:    string(s.PathFormat),
			Path:          s.Path,
			AddressFormat: string(s.AddressFormat),
			CreatedAt:     x.Now.Add(time.Duration(i)),
			UpdatedAt:     x.Now,
		}
		cs[i] = custody.AccountSpec{Curve: string(s.Curve), Path: s.Path, Binding: accts[i].binding()}
	}
	derived, err := d.Custodian.DeriveAccounts(w.SealedMnemonic, w.binding(), cs)
	if err != nil {
		return nil, apierr.Invalid("parameters.accounts", "%v", err)
	}
	for i, a := range accts {
		addr, err := address.Derive(a.AddressFormat, a.Curve, derived[i].PublicKey)
		if err != nil {
			return nil, apierr.Invalid(specs[i].field, "%v", err)
		}
		a.Address, a.PublicKey, a.SealedKey = addr, hexLower(derived[i].PublicKey), derived[i].SealedKey
	}
	return accts, nil
}

// recordAccounts signs the app proofs of derived accounts and, when persist, saves them.
func recordAccounts(x *activity.Exec, accts []*Account, persist bool) error {
	for _, a := range accts {
		if err := x.AddressProof(a.WalletID, a.Path, a.Address); err != nil {
			return apierr.Internalf(err, "signing the app proof")
		}
		if persist {
			if err := saveAccount(x.Ctx, x.Tx, a); err != nil {
				return err
			}
		}
	}
	return nil
}

func addresses(accts []*Account) []string {
	out := make([]string, 0, len(accts))
	for _, a := range accts {
		out = append(out, a.Address)
	}
	return out
}

// MintedWallet is a new wallet made before the transaction: its mnemonic generated and sealed,
// its accounts derived and sealed. PBKDF2 and the derivation cost milliseconds; inside SQLite's
// single writer they made every wallet creation of the deployment wait for the previous one.
type MintedWallet struct {
	w     *Wallet
	accts []*Account
}

// MintWallet makes, outside the transaction, the wallet create_wallet or create_sub_organization
// asks for in orgID. The wallet limit and the unique name are checked when it is saved.
func (d Deps) MintWallet(
	x *activity.Exec,
	orgID, name string,
	mnemonicLength *int32,
	accounts []wire.WalletAccountParams,
	field string,
) (*MintedWallet, error) {
	name, err := directory.CheckName(field+".walletName", name)
	if err != nil {
		return nil, err
	}
	specs, err := checkAccounts(field+".accounts", accounts)
	if err != nil {
		return nil, err
	}
	words := 12
	if mnemonicLength != nil {
		words = int(*mnemonicLength)
	}
	w := &Wallet{ID: id.New(), OrgID: orgID, Name: name, CreatedAt: x.Now, UpdatedAt: x.Now}
	if w.SealedMnemonic, err = d.Custodian.NewMnemonic(words, w.binding()); err != nil {
		return nil, apierr.Invalid(field+".mnemonicLength", "%v", err)
	}
	accts, err := d.deriveAccounts(x, w, specs)
	if err != nil {
		return nil, err
	}
	return &MintedWallet{w: w, accts: accts}, nil
}

// save stores a minted wallet and its accounts in the transaction, within the wallet limit.
func (m *MintedWallet) save(x *activity.Exec) error {
	if n, err := x.Tx.Count(x.Ctx, KindWallet, m.w.OrgID, MaxWalletsPerOrg); err != nil {
		return apierr.Internalf(err, "counting wallets")
	} else if n >= MaxWalletsPerOrg {
		return apierr.New(apierr.ResourceExhausted, "RESOURCE_EXHAUSTED", "an organization can have at most %d wallets", MaxWalletsPerOrg)
	}
	if err := saveWallet(x.Ctx, x.Tx, m.w); err != nil {
		return err
	}
	return recordAccounts(x, m.accts, true)
}

func (d Deps) prepareCreateWallet(x *activity.Exec, in *wire.CreateWalletIntent) (any, error) {
	return d.MintWallet(x, x.OrgID, in.WalletName, in.MnemonicLength, in.Accounts, "parameters")
}

func createWallet(x *activity.Exec, _ *wire.CreateWalletIntent) (any, error) {
	m := x.Prepared.(*MintedWallet)
	if err := m.save(x); err != nil {
		return nil, err
	}
	return wire.CreateWalletResult{WalletId: m.w.ID, Addresses: addresses(m.accts)}, nil
}

// MintSubOrgWallet is MintWallet for create_sub_organization's wallet (its Prepare step).
func (d Deps) MintSubOrgWallet(x *activity.Exec, orgID string, p *wire.WalletParams) (any, error) {
	return d.MintWallet(x, orgID, p.WalletName, p.MnemonicLength, p.Accounts, "parameters.wallet")
}

// SaveSubOrgWallet stores the wallet MintSubOrgWallet made.
func SaveSubOrgWallet(x *activity.Exec, minted any) (*wire.WalletResult, error) {
	m, ok := minted.(*MintedWallet)
	if !ok {
		return nil, apierr.Internalf(nil, "create_sub_organization: the wallet was not prepared")
	}
	if err := m.save(x); err != nil {
		return nil, err
	}
	return &wire.WalletResult{WalletId: m.w.ID, Addresses: addresses(m.accts)}, nil
}

// prepareWalletAccounts derives the new accounts before the transaction (PBKDF2 from the
// wallet's sealed mnemonic, which never changes): inside SQLite's single writer it made every
// other activity wait.
func (d Deps) prepareWalletAccounts(x *activity.Exec, in *wire.CreateWalletAccountsIntent) (any, error) {
	specs, err := checkAccounts("parameters.accounts", in.Accounts)
	if err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, apierr.Invalid("parameters.accounts", "at least one account is required")
	}
	w, err := load[Wallet](x.Ctx, x.R, KindWallet, x.OrgID, in.WalletId, "wallet")
	if err != nil {
		return nil, err
	}
	return d.deriveAccounts(x, w, specs)
}

func createWalletAccounts(x *activity.Exec, in *wire.CreateWalletAccountsIntent) (any, error) {
	accts := x.Prepared.([]*Account)
	// The wallet must still be there at commit: Get locks it against a concurrent delete_wallet,
	// which would otherwise leave these accounts behind.
	if _, err := load[Wallet](x.Ctx, x.Tx, KindWallet, x.OrgID, in.WalletId, "wallet"); err != nil {
		return nil, err
	}
	persist := in.Persist == nil || *in.Persist
	if err := recordAccounts(x, accts, persist); err != nil {
		return nil, err
	}
	return wire.CreateWalletAccountsResult{Addresses: addresses(accts)}, nil
}

func updateWallet(x *activity.Exec, in *wire.UpdateWalletIntent) (any, error) {
	w, err := load[Wallet](x.Ctx, x.Tx, KindWallet, x.OrgID, in.WalletId, "wallet")
	if err != nil {
		return nil, err
	}
	if in.WalletName != "" {
		if w.Name, err = directory.CheckName("parameters.walletName", in.WalletName); err != nil {
			return nil, err
		}
	}
	w.UpdatedAt = x.Now
	if err := saveWallet(x.Ctx, x.Tx, w); err != nil {
		return nil, err
	}
	return wire.UpdateWalletResult{WalletId: w.ID}, nil
}

func walletAccounts(ctx context.Context, r store.Reader, orgID, walletID string) ([]*Account, error) {
	ids, err := lookupIDs(ctx, r, KeyAccountWallet, walletID, KindAccount, orgID)
	if err != nil {
		return nil, err
	}
	out := make([]*Account, 0, len(ids))
	for _, aid := range ids {
		a, err := load[Account](ctx, r, KindAccount, orgID, aid, "wallet account")
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	sortAccounts(out)
	return out, nil
}

func deleteWallets(x *activity.Exec, in *wire.DeleteWalletsIntent) (any, error) {
	if len(in.WalletIds) == 0 {
		return nil, apierr.Invalid("parameters.walletIds", "at least one wallet id is required")
	}
	if err := checkCount("parameters.walletIds", len(in.WalletIds), MaxWalletsPerOrg, "wallet ids"); err != nil {
		return nil, err
	}
	force := in.DeleteWithoutExport != nil && *in.DeleteWithoutExport
	for i, wid := range in.WalletIds {
		w, err := load[Wallet](x.Ctx, x.Tx, KindWallet, x.OrgID, wid, "wallet")
		if err != nil {
			return nil, apierr.Invalid(fieldIdx("parameters.walletIds", i), "no wallet %s in this organization", wid)
		}
		if !w.Exported && !force {
			return nil, apierr.New(
				apierr.FailedPrecondition,
				"WALLET_NOT_EXPORTED",
				"%s: wallet %s has not been exported; export it first or pass deleteWithoutExport: true",
				fieldIdx("parameters.walletIds", i),
				wid,
			)
		}
		accts, err := walletAccounts(x.Ctx, x.Tx, x.OrgID, w.ID)
		if err != nil {
			return nil, err
		}
		for _, a := range accts {
			if err := x.Tx.Delete(x.Ctx, KindAccount, a.ID); err != nil {
				return nil, apierr.Internalf(err, "deleting account")
			}
		}
		if err := x.Tx.Delete(x.Ctx, KindWallet, w.ID); err != nil {
			return nil, apierr.Internalf(err, "deleting wallet")
		}
	}
	return wire.DeleteWalletsResult{WalletIds: in.WalletIds}, nil
}

func deleteWalletAccounts(x *activity.Exec, in *wire.DeleteWalletAccountsIntent) (any, error) {
	if len(in.WalletAccountIds) == 0 {
		return nil, apierr.Invalid("parameters.walletAccountIds", "at least one wallet account id is required")
	}
	if err := checkCount(
		"parameters.walletAccountIds", len(in.WalletAccountIds), MaxIDsPerRequest, "wallet account ids",
	); err != nil {
		return nil, err
	}
	force := in.DeleteWithoutExport != nil && *in.DeleteWithoutExport
	for i, aid := range in.WalletAccountIds {
		a, err := load[Account](x.Ctx, x.Tx, KindAccount, x.OrgID, aid, "wallet account")
		if err != nil {
			return nil, apierr.Invalid(
				fieldIdx("parameters.walletAccountIds", i),
				"no wallet account %s in this organization",
				aid,
			)
		}
		if !force && !a.Exported {
			w, err := load[Wallet](x.Ctx, x.Tx, KindWallet, x.OrgID, a.WalletID, "wallet")
			if err != nil || !w.Exported {
				return nil, apierr.New(
					apierr.FailedPrecondition,
					"WALLET_ACCOUNT_NOT_EXPORTED",
					"%s: wallet account %s has not been exported; export it first or pass deleteWithoutExport: true",
					fieldIdx("parameters.walletAccountIds", i),
					aid,
				)
			}
		}
		if err := x.Tx.Delete(x.Ctx, KindAccount, a.ID); err != nil {
			return nil, apierr.Internalf(err, "deleting account")
		}
	}
	return wire.DeleteWalletAccountsResult{WalletAccountIds: in.WalletAccountIds}, nil
}

func getWallet(q *activity.Read, in *wire.GetWalletRequest) (any, error) {
	w, err := load[Wallet](q.Ctx, q.R, KindWallet, q.OrgID, in.WalletId, "wallet")
	if err != nil {
		return nil, err
	}
	return wire.GetWalletResponse{Wallet: w.ToWire()}, nil
}

func listWallets(q *activity.Read, _ *wire.GetWalletsRequest) (any, error) {
	ws, err := listKind[Wallet](q.Ctx, q.R, KindWallet, q.OrgID, store.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := wire.GetWalletsResponse{Wallets: make([]wire.Wallet, 0, len(ws))}
	for _, w := range ws {
		out.Wallets = append(out.Wallets, w.ToWire())
	}
	return out, nil
}

func getWalletAccount(q *activity.Read, in *wire.GetWalletAccountRequest) (any, error) {
	if in.Address == "" && in.Path == "" {
		return nil, apierr.Invalid("address", "give the account's address or path")
	}
	accts, err := walletAccounts(q.Ctx, q.R, q.OrgID, in.WalletId)
	if err != nil {
		return nil, err
	}
	for _, a := range accts {
		if (in.Address != "" && address.Normalize(a.Address) == address.Normalize(in.Address)) ||
			(in.Address == "" && a.Path == in.Path) {
			return wire.GetWalletAccountResponse{Account: a.ToWire()}, nil
		}
	}
	return nil, apierr.NotFoundf("wallet account not found in wallet %s", in.WalletId)
}

// listWalletAccounts answers one page of the organization's accounts, or of one wallet's, read
// from the store page by page (store.ListOptions: limit, cursor, and records.MaxPageBytes), so
// its cost is the page's whatever the organization or the wallet holds. A cursor naming no
// account answers an empty page, as the other paginated lists do.
func listWalletAccounts(q *activity.Read, in *wire.GetWalletAccountsRequest) (any, error) {
	if in.WalletId != "" {
		if _, err := load[Wallet](q.Ctx, q.R, KindWallet, q.OrgID, in.WalletId, "wallet"); err != nil {
			return nil, err
		}
	}
	opts, err := organizations.ListOptions(in.PaginationOptions, "paginationOptions", false)
	if err != nil {
		return nil, err
	}
	opts.MaxBytes = records.MaxPageBytes
	if in.WalletId != "" {
		opts.Key = store.Key{Name: KeyAccountWallet, Value: in.WalletId}
	}
	accts, err := listKind[Account](q.Ctx, q.R, KindAccount, q.OrgID, opts)
	if err != nil {
		return nil, err
	}
	details := in.IncludeWalletDetails != nil && *in.IncludeWalletDetails
	wallets := map[string]*Wallet{}
	out := wire.GetWalletAccountsResponse{Accounts: make([]wire.WalletAccount, 0, len(accts))}
	for _, a := range accts {
		w := a.ToWire()
		if details {
			wl, ok := wallets[a.WalletID]
			if !ok {
				if wl, err = load[Wallet](q.Ctx, q.R, KindWallet, q.OrgID, a.WalletID, "wallet"); err != nil {
					return nil, err
				}
				wallets[a.WalletID] = wl
			}
			ww := wl.ToWire()
			w.WalletDetails = &ww
		}
		out.Accounts = append(out.Accounts, w)
	}
	return out, nil
}

// TVCOperatorAccounts gives a TVC operator its two P-256 keys as accounts of a wallet: a new
// wallet named walletName, or the existing walletID. The encryption key is the account at
// basePath/0 and the signing key the account at basePath/1 (ADDRESS_FORMAT_UNCOMPRESSED, so each
// address is the uncompressed public key in hex); the operator signs manifest approvals with
// sign_raw_payload on the signing account. basePath must be a valid BIP-32 path.
func (d Deps) TVCOperatorAccounts(
	x *activity.Exec,
	walletName, walletID, basePath string,
) (string, [2]*Account, error) {
	params := make([]wire.WalletAccountParams, 2)
	for i := range params {
		params[i] = wire.WalletAccountParams{Curve: "CURVE_P256", PathFormat: "PATH_FORMAT_BIP32",
			Path: basePath + "/" + strconv.Itoa(i), AddressFormat: "ADDRESS_FORMAT_UNCOMPRESSED"}
	}
	var accts []*Account
	switch {
	case walletID != "" && walletName != "":
		return "", [2]*Account{}, apierr.Invalid(
			"parameters.walletId",
			"give either walletId (reuse a wallet) or walletName (make one), not both",
		)
	case walletID != "":
		w, err := load[Wallet](x.Ctx, x.Tx, KindWallet, x.OrgID, walletID, "wallet")
		if err != nil {
			return "", [2]*Account{}, err
		}
		specs, err := checkAccounts("parameters", params)
		if err != nil {
			return "", [2]*Account{}, err
		}
		if accts, err = d.deriveAccounts(x, w, specs); err != nil {
			return "", [2]*Account{}, err
		}
		if err := recordAccounts(x, accts, true); err != nil {
			return "", [2]*Account{}, err
		}
	case walletName != "":
		m, err := d.MintWallet(x, x.OrgID, walletName, nil, params, "parameters")
		if err != nil {
			return "", [2]*Account{}, err
		}
		if err := m.save(x); err != nil {
			return "", [2]*Account{}, err
		}
		walletID, accts = m.w.ID, m.accts
	default:
		return "", [2]*Account{}, apierr.Invalid(
			"parameters.walletName",
			"give walletName (make a wallet) or walletId (reuse one)",
		)
	}
	return walletID, [2]*Account{accts[0], accts[1]}, nil
}
