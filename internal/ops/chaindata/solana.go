package chaindata

import (
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/mr-tron/base58"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/chain/solana"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/wire"
)

const maxSolanaSigners = 16

// solSend signs a Solana transaction with the named accounts, in order, and sends it with
// sendTransaction; its status id follows it.
func (d *Deps) solSend(x *activity.Exec, intent any) (any, error) {
	var unsigned, caip2, blockhash string
	var signers []string
	var sponsor *bool
	switch in := intent.(type) {
	case *wire.SolSendTransactionIntentV2:
		unsigned, caip2, blockhash, signers, sponsor = in.UnsignedTransaction, in.Caip2, in.RecentBlockhash, in.SignWiths, in.Sponsor
	case *wire.SolSendTransactionIntent:
		unsigned, caip2, blockhash, signers, sponsor = in.UnsignedTransaction, in.Caip2, in.RecentBlockhash, []string{in.SignWith}, in.Sponsor
	}
	if sponsor != nil && *sponsor {
		return nil, activity.ErrNotSupported("sponsored Solana sends (Latchkey runs no gas station)")
	}
	n, err := checkNetwork("parameters.caip2", caip2, false)
	if err != nil {
		return nil, err
	}
	if !isSolana(n) {
		return nil, apierr.Invalid(
			"parameters.caip2",
			"sol_send_transaction sends to solana networks; %s is not one",
			n,
		)
	}
	if len(signers) == 0 || len(signers) > maxSolanaSigners {
		return nil, apierr.Invalid("parameters.signWiths", "between 1 and %d signers", maxSolanaSigners)
	}
	const f = "parameters.unsignedTransaction"
	raw, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(unsigned), "0x"))
	if err != nil || len(raw) == 0 || len(raw) > maxSignedTx {
		return nil, apierr.Invalid(f, "must be the hex of a serialized Solana transaction")
	}
	tx, err := solana.ParseTransaction(raw)
	if err != nil {
		return nil, apierr.Invalid(f, "%v", err)
	}
	if blockhash != "" {
		b, err := base58.Decode(blockhash)
		if err != nil || len(b) != 32 {
			return nil, apierr.Invalid("parameters.recentBlockhash", "must be a base58 blockhash (32 bytes)")
		}
		raw = tx.WithBlockhash([32]byte(b))
	}
	c, err := d.provider(n)
	if err != nil {
		return nil, err
	}
	if d.SignSolana == nil {
		return nil, activity.ErrNotSupported("sol_send_transaction without wallets")
	}
	for i, s := range signers {
		if raw, err = d.SignSolana(x, s, raw); err != nil {
			if e := apierr.From(err); e.Code == apierr.InvalidArgument {
				return nil, apierr.Invalid("parameters.signWiths["+strconv.Itoa(i)+"]", "%s", e.Message)
			}
			return nil, err
		}
	}
	signed, err := solana.ParseTransaction(raw)
	if err != nil {
		return nil, apierr.Internalf(err, "reading the signed transaction")
	}
	sig, err := signed.FirstSignature()
	if err != nil {
		return nil, apierr.Invalid(f, "%v", err)
	}
	s := &Send{ID: id.New(), OrgID: x.OrgID, Caip2: n, TxHash: sig, CreatedAt: x.Now}
	if err := d.record(x, s, c, "sendTransaction", []any{base64.StdEncoding.EncodeToString(raw), map[string]string{"encoding": "base64"}}); err != nil {
		return nil, err
	}
	if _, ok := intent.(*wire.SolSendTransactionIntentV2); ok {
		return wire.SolSendTransactionResultV2{SendTransactionStatusId: s.ID}, nil
	}
	return wire.SolSendTransactionResult{SendTransactionStatusId: s.ID}, nil
}
