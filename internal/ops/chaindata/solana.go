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
	"github.com/latchkey/latchkey/internal/policy"
	"github.com/latchkey/latchkey/internal/wire"
)

const maxSolanaSigners = 16

// solSendIn is what both versions of sol_send_transaction carry.
type solSendIn struct {
	unsigned, caip2, blockhash string
	signers                    []string
	sponsor                    bool
	v2                         bool
}

func readSolSend(intent any) solSendIn {
	var s solSendIn
	var sponsor *bool
	switch in := intent.(type) {
	case *wire.SolSendTransactionIntentV2:
		s = solSendIn{unsigned: in.UnsignedTransaction, caip2: in.Caip2, blockhash: in.RecentBlockhash,
			signers: in.SignWiths, v2: true}
		sponsor = in.Sponsor
	case *wire.SolSendTransactionIntent:
		s = solSendIn{unsigned: in.UnsignedTransaction, caip2: in.Caip2, blockhash: in.RecentBlockhash,
			signers: []string{in.SignWith}}
		sponsor = in.Sponsor
	}
	s.sponsor = sponsor != nil && *sponsor
	return s
}

// solNetwork checks the request's network: a Solana one with a provider.
func (d *Deps) solNetwork(caip2 string) (string, error) {
	n, err := checkNetwork("parameters.caip2", caip2, false)
	if err != nil {
		return "", err
	}
	if !isSolana(n) {
		return "", apierr.Invalid(
			"parameters.caip2",
			"sol_send_transaction sends to solana networks; %s is not one",
			n,
		)
	}
	return n, nil
}

// prepareSolSend runs before the activity's transaction: a sponsored send is refused early when
// the operator does not sponsor the network, and, when the caller left the blockhash to the
// server (as Turnkey does for sponsored sends), a fresh one is read from the node here.
func (d *Deps) prepareSolSend(x *activity.Exec, intent any) (any, error) {
	s := readSolSend(intent)
	n, err := d.solNetwork(s.caip2)
	if err != nil || !s.sponsor {
		return solPrepared{}, err
	}
	if _, err := d.GasStation.SolanaNetwork(n); err != nil {
		return nil, err
	}
	if s.blockhash != "" {
		return solPrepared{}, nil
	}
	c, err := d.provider(n)
	if err != nil {
		return nil, err
	}
	var bh struct {
		Value struct {
			Blockhash string `json:"blockhash"`
		} `json:"value"`
	}
	if err := c.Call(x.Ctx, "getLatestBlockhash", []any{map[string]string{"commitment": "confirmed"}}, &bh); err != nil {
		return nil, rpcError(err)
	}
	if b, err := base58.Decode(bh.Value.Blockhash); err != nil || len(b) != 32 {
		return nil, apierr.New(apierr.FailedPrecondition, "CHAIN_RPC_ERROR",
			"the node's getLatestBlockhash answered no 32-byte base58 blockhash")
	}
	return solPrepared{blockhash: bh.Value.Blockhash}, nil
}

// solPrepared is prepareSolSend's value: the blockhash the node gave, if one was needed.
type solPrepared struct{ blockhash string }

// solSendTx reads the transaction a send carries, with its blockhash filled in (the caller's, or
// the one Prepare read from the node): what is signed and sent, and what policies see.
func solSendTx(x *activity.Exec, in solSendIn) (*solana.Tx, []byte, error) {
	const f = "parameters.unsignedTransaction"
	raw, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(in.unsigned), "0x"))
	if err != nil || len(raw) == 0 || len(raw) > maxSignedTx {
		return nil, nil, apierr.Invalid(f, "must be the hex of a serialized Solana transaction")
	}
	tx, err := solana.ParseTransaction(raw)
	if err != nil {
		return nil, nil, apierr.Invalid(f, "%v", err)
	}
	blockhash := in.blockhash
	if p, ok := x.Prepared.(solPrepared); ok && blockhash == "" {
		blockhash = p.blockhash
	}
	if blockhash != "" {
		b, err := base58.Decode(blockhash)
		if err != nil || len(b) != 32 {
			return nil, nil, apierr.Invalid("parameters.recentBlockhash", "must be a base58 blockhash (32 bytes)")
		}
		raw = tx.WithBlockhash([32]byte(b))
		if tx, err = solana.ParseTransaction(raw); err != nil {
			return nil, nil, apierr.Internalf(err, "re-reading the transaction")
		}
	}
	return tx, raw, nil
}

// solSendEnv is what policies, session scopes and MFA policies see of a Solana send: solana.tx
// (docs/api-notes.md §4.3), the transaction the caller built with the blockhash it is sent with
// (a sponsored one before the fee payer is added), built only when a policy reads it. One the
// request cannot carry gives no view: solSend then refuses it with a 400 naming the field.
func (d *Deps) solSendEnv(x *activity.Exec, intent any) map[string]policy.Value {
	tx, _, err := solSendTx(x, readSolSend(intent))
	if err != nil {
		return nil
	}
	return map[string]policy.Value{"solana": policy.Lazy(func() (policy.Value, error) {
		view, _ := policy.FromGo(tx.PolicyView()).(policy.Map)
		return policy.Map{"tx": view}, nil
	})}
}

// solSend signs a Solana transaction with the named accounts, in order, and sends it with
// sendTransaction; its status id follows it. A sponsored one is rewritten first (solsponsor.go).
func (d *Deps) solSend(x *activity.Exec, intent any) (any, error) {
	in := readSolSend(intent)
	n, err := d.solNetwork(in.caip2)
	if err != nil {
		return nil, err
	}
	if len(in.signers) == 0 || len(in.signers) > maxSolanaSigners {
		return nil, apierr.Invalid("parameters.signWiths", "between 1 and %d signers", maxSolanaSigners)
	}
	const f = "parameters.unsignedTransaction"
	tx, raw, err := solSendTx(x, in)
	if err != nil {
		return nil, err
	}
	c, err := d.provider(n)
	if err != nil {
		return nil, err
	}
	if d.SignSolana == nil {
		return nil, activity.ErrNotSupported("sol_send_transaction without wallets")
	}
	var sp *solSponsorship
	if in.sponsor {
		if raw, sp, err = d.sponsorSol(x, n, tx); err != nil {
			return nil, err
		}
	}
	for i, s := range in.signers {
		if raw, err = d.SignSolana(x, s, raw); err != nil {
			if e := apierr.From(err); e.Code == apierr.InvalidArgument {
				return nil, apierr.Invalid("parameters.signWiths["+strconv.Itoa(i)+"]", "%s", e.Message)
			}
			return nil, err
		}
	}
	if sp != nil {
		if raw, err = d.signSponsored(x, sp, raw); err != nil {
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
	if sp != nil {
		if err := d.reserveSponsored(x, sp, s); err != nil {
			return nil, err
		}
	}
	params := []any{base64.StdEncoding.EncodeToString(raw), map[string]string{"encoding": "base64"}}
	if err := d.record(x, s, c, "sendTransaction", params); err != nil {
		return nil, err
	}
	if in.v2 {
		return wire.SolSendTransactionResultV2{SendTransactionStatusId: s.ID}, nil
	}
	return wire.SolSendTransactionResult{SendTransactionStatusId: s.ID}, nil
}
