package wallets

import (
	"errors"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/chain/address"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

func (d Deps) registerExport(reg *activity.Registry) {
	reg.Submit(
		activity.Operation{
			Path:      "export_wallet",
			Access:    activity.AccessRoot,
			Execute:   activity.On(d.exportWallet),
			PolicyEnv: activity.EnvAny(exportEnv, (*wire.ExportWalletIntent)(nil)),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:      "export_wallet_account",
			Access:    activity.AccessRoot,
			Execute:   activity.On(d.exportWalletAccount),
			PolicyEnv: activity.EnvAny(exportEnv, (*wire.ExportWalletAccountIntent)(nil)),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:      "export_private_key",
			Access:    activity.AccessRoot,
			Execute:   activity.On(d.exportPrivateKey),
			PolicyEnv: activity.EnvAny(exportEnv, (*wire.ExportPrivateKeyIntent)(nil)),
		},
	)
	own := func(_ *activity.Exec, intent any) string {
		switch in := intent.(type) {
		case *wire.InitImportWalletIntent:
			return in.UserId
		case *wire.ImportWalletIntent:
			return in.UserId
		case *wire.InitImportPrivateKeyIntent:
			return in.UserId
		case *wire.ImportPrivateKeyIntent:
			return in.UserId
		}
		return ""
	}
	// Imports must target the caller's own user (Turnkey's hard rule); root users may import.
	reg.Submit(
		activity.Operation{
			Path:     "init_import_wallet",
			Access:   activity.AccessRoot,
			SelfUser: activity.UserAny(own, (*wire.InitImportWalletIntent)(nil)),
			Execute:  activity.OnAny(d.initImport("wallet"), (*wire.InitImportWalletIntent)(nil)),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:     "import_wallet",
			Access:   activity.AccessRoot,
			SelfUser: activity.UserAny(own, (*wire.ImportWalletIntent)(nil)),
			Execute:  activity.On(d.importWallet),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:     "init_import_private_key",
			Access:   activity.AccessRoot,
			SelfUser: activity.UserAny(own, (*wire.InitImportPrivateKeyIntent)(nil)),
			Execute:  activity.OnAny(d.initImport("private_key"), (*wire.InitImportPrivateKeyIntent)(nil)),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:     "import_private_key",
			Access:   activity.AccessRoot,
			SelfUser: activity.UserAny(own, (*wire.ImportPrivateKeyIntent)(nil)),
			Execute:  activity.On(d.importPrivateKey),
		},
	)
}

func exportErr(err error) error {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	return apierr.Invalid("parameters.targetPublicKey", "%v", err)
}

func (d Deps) exportWallet(x *activity.Exec, in *wire.ExportWalletIntent) (any, error) {
	w, err := load[Wallet](x.Ctx, x.Tx, KindWallet, x.OrgID, in.WalletId, "wallet")
	if err != nil {
		return nil, err
	}
	bundle, err := d.Custodian.ExportMnemonic(
		w.SealedMnemonic,
		w.binding(),
		string(in.Language),
		in.TargetPublicKey,
		x.OrgID,
	)
	if err != nil {
		return nil, exportErr(err)
	}
	if !w.Exported {
		w.Exported, w.UpdatedAt = true, x.Now
		if err := saveWallet(x.Ctx, x.Tx, w); err != nil {
			return nil, err
		}
	}
	return wire.ExportWalletResult{WalletId: w.ID, ExportBundle: bundle}, nil
}

func (d Deps) exportWalletAccount(x *activity.Exec, in *wire.ExportWalletAccountIntent) (any, error) {
	ids, err := lookupIDs(x.Ctx, x.Tx, KeyAccountAddress, address.Normalize(in.Address), KindAccount, x.OrgID)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, apierr.NotFoundf("parameters.address: no wallet account %s in this organization", in.Address)
	}
	a, err := load[Account](x.Ctx, x.Tx, KindAccount, x.OrgID, ids[0], "wallet account")
	if err != nil {
		return nil, err
	}
	bundle, err := d.Custodian.ExportKey(a.SealedKey, a.binding(), in.TargetPublicKey, x.OrgID)
	if err != nil {
		return nil, exportErr(err)
	}
	if !a.Exported {
		a.Exported, a.UpdatedAt = true, x.Now
		if err := saveAccount(x.Ctx, x.Tx, a); err != nil {
			return nil, err
		}
	}
	return wire.ExportWalletAccountResult{Address: a.Address, ExportBundle: bundle}, nil
}

func (d Deps) exportPrivateKey(x *activity.Exec, in *wire.ExportPrivateKeyIntent) (any, error) {
	k, err := load[PrivateKey](x.Ctx, x.Tx, KindPrivateKey, x.OrgID, in.PrivateKeyId, "private key")
	if err != nil {
		return nil, err
	}
	bundle, err := d.Custodian.ExportKey(k.SealedKey, k.binding(), in.TargetPublicKey, x.OrgID)
	if err != nil {
		return nil, exportErr(err)
	}
	if !k.Exported {
		k.Exported, k.UpdatedAt = true, x.Now
		if err := savePrivateKey(x.Ctx, x.Tx, k); err != nil {
			return nil, err
		}
	}
	return wire.ExportPrivateKeyResult{PrivateKeyId: k.ID, ExportBundle: bundle}, nil
}

func checkOwnUser(x *activity.Exec, userID string) error {
	if userID != x.Caller.User.ID {
		return apierr.Denied("parameters.userId: all import requests must target your own user")
	}
	return nil
}

func (d Deps) initImport(what string) func(*activity.Exec, any) (any, error) {
	return func(x *activity.Exec, intent any) (any, error) {
		var userID string
		switch in := intent.(type) {
		case *wire.InitImportWalletIntent:
			userID = in.UserId
		case *wire.InitImportPrivateKeyIntent:
			userID = in.UserId
		}
		if err := checkOwnUser(x, userID); err != nil {
			return nil, err
		}
		t := &ImportTarget{ID: userID + "/" + what, OrgID: x.OrgID, UserID: userID, CreatedAt: x.Now}
		bundle, sealed, err := d.Custodian.NewImportTarget(t.binding(), x.OrgID, userID)
		if err != nil {
			return nil, apierr.Internalf(err, "creating import target")
		}
		t.SealedTarget = sealed
		if err := save(x.Ctx, x.Tx, KindImportTarget, t.ID, t.OrgID, t.CreatedAt, t.CreatedAt, t); err != nil {
			return nil, err
		}
		if what == "wallet" {
			return wire.InitImportWalletResult{ImportBundle: bundle}, nil
		}
		return wire.InitImportPrivateKeyResult{ImportBundle: bundle}, nil
	}
}

// takeTarget loads and consumes the caller's import target.
func takeTarget(x *activity.Exec, userID, what string) (*ImportTarget, error) {
	t, err := load[ImportTarget](x.Ctx, x.Tx, KindImportTarget, x.OrgID, userID+"/"+what, "import target")
	if err != nil {
		return nil, apierr.New(
			apierr.FailedPrecondition,
			"INVALID_REQUEST",
			"no import in progress for user %s: call init_import_%s first",
			userID,
			what,
		)
	}
	if err := x.Tx.Delete(x.Ctx, KindImportTarget, t.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, apierr.Internalf(err, "consuming import target")
	}
	return t, nil
}

func (d Deps) importWallet(x *activity.Exec, in *wire.ImportWalletIntent) (any, error) {
	if err := checkOwnUser(x, in.UserId); err != nil {
		return nil, err
	}
	name, err := directory.CheckName("parameters.walletName", in.WalletName)
	if err != nil {
		return nil, err
	}
	specs, err := checkAccounts("parameters.accounts", in.Accounts)
	if err != nil {
		return nil, err
	}
	t, err := takeTarget(x, in.UserId, "wallet")
	if err != nil {
		return nil, err
	}
	w := &Wallet{ID: id.New(), OrgID: x.OrgID, Name: name, Imported: true, CreatedAt: x.Now, UpdatedAt: x.Now}
	if w.SealedMnemonic, err = d.Custodian.ImportMnemonic(in.EncryptedBundle, t.SealedTarget, t.binding(), w.binding()); err != nil {
		return nil, apierr.Invalid("parameters.encryptedBundle", "%v", err)
	}
	if err := saveWallet(x.Ctx, x.Tx, w); err != nil {
		return nil, err
	}
	accts, err := d.deriveAccounts(x, w, specs)
	if err != nil {
		return nil, err
	}
	if err := recordAccounts(x, accts, true); err != nil {
		return nil, err
	}
	return wire.ImportWalletResult{WalletId: w.ID, Addresses: addresses(accts)}, nil
}

func (d Deps) importPrivateKey(x *activity.Exec, in *wire.ImportPrivateKeyIntent) (any, error) {
	if err := checkOwnUser(x, in.UserId); err != nil {
		return nil, err
	}
	name, err := directory.CheckName("parameters.privateKeyName", in.PrivateKeyName)
	if err != nil {
		return nil, err
	}
	t, err := takeTarget(x, in.UserId, "private_key")
	if err != nil {
		return nil, err
	}
	k := &PrivateKey{
		ID:        id.New(),
		OrgID:     x.OrgID,
		Name:      name,
		Curve:     string(in.Curve),
		Imported:  true,
		CreatedAt: x.Now,
		UpdatedAt: x.Now,
	}
	dk, err := d.Custodian.ImportPrivateKey(in.EncryptedBundle, t.SealedTarget, t.binding(), k.binding(), k.Curve)
	if err != nil {
		return nil, apierr.Invalid("parameters.encryptedBundle", "%v", err)
	}
	k.PublicKey, k.SealedKey = hexLower(dk.PublicKey), dk.SealedKey
	if k.Addresses, err = keyAddresses("parameters.addressFormats", k.Curve, dk.PublicKey, in.AddressFormats); err != nil {
		return nil, err
	}
	if err := savePrivateKey(x.Ctx, x.Tx, k); err != nil {
		return nil, err
	}
	return wire.ImportPrivateKeyResult{PrivateKeyId: k.ID, Addresses: immutableAddrs(k.Addresses)}, nil
}
