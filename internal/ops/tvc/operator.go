package tvc

import (
	"strings"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody/hd"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/wire"
)

// createOperator makes an operator whose keys Latchkey holds: two P-256 accounts of a wallet
// (basePath/0 encrypts, basePath/1 signs). Its public key is the 130-byte QuorumOS pair
// (encryption point then signing point), so the operator's manifest approvals are made with
// sign_raw_payload on the signing account (HASH_FUNCTION_SHA256) and checked like any other.
func (d Deps) createOperator(x *activity.Exec, in *wire.CreateTvcOperatorIntent) (any, error) {
	name, err := directory.CheckName("parameters.operatorName", in.OperatorName)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSpace(in.Path)
	if _, err := hd.ParsePath(base + "/0"); err != nil {
		return nil, apierr.Invalid("parameters.path", "not a BIP-32 derivation path: %v", err)
	}
	if d.OperatorAccounts == nil {
		return nil, activity.ErrNotSupported("create_tvc_operator without wallets")
	}
	walletID, enc, sign, err := d.OperatorAccounts(x, in.WalletName, in.WalletId, base)
	if err != nil {
		return nil, err
	}
	k, err := ParsePublicKey(enc + sign)
	if err != nil {
		return nil, apierr.Internalf(err, "operator keys")
	}
	o := &Operator{ID: id.New(), OrgID: x.OrgID, Name: name, PublicKey: k.Hex, WalletID: walletID, CreatedAt: x.Now}
	if err := records.Save(x.Ctx, x.Tx, KindOperator, o.ID, o.OrgID, o.CreatedAt, o.CreatedAt, o); err != nil {
		return nil, err
	}
	return wire.CreateTvcOperatorResult{
		WalletId:         walletID,
		OperatorId:       o.ID,
		EncryptPublicKey: enc,
		SignPublicKey:    sign,
	}, nil
}
