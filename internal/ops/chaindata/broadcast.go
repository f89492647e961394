package chaindata

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/chain/rpc"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// KindSend is a transaction Latchkey sent; its lookup key is the transaction hash.
const (
	KindSend   = "send_transaction"
	keySendTxn = "send_transaction.hash"
)

// OwnedKinds are the record kinds an organization owns here.
var OwnedKinds = []string{KindSend, KindGrant}

// Send is a sent transaction.
type Send struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"orgId"`
	Caip2     string    `json:"caip2"`
	TxHash    string    `json:"txHash"`
	CreatedAt time.Time `json:"createdAt"`
}

// Transaction statuses (what @turnkey/core's pollTransactionStatus reads).
const (
	StatusPending  = "PENDING"
	StatusIncluded = "INCLUDED"
	StatusFailed   = "FAILED"
)

const maxSignedTx = 128 << 10

// sendRaw sends a signed EVM transaction to the node of its network.
func (d *Deps) sendRaw(x *activity.Exec, intent any) (any, error) {
	in := intent.(*wire.EthSendRawTransactionIntent)
	n, err := checkNetwork("parameters.caip2", in.Caip2, false)
	if err != nil {
		return nil, err
	}
	want, ok := evmChainID(n)
	if !ok {
		return nil, apierr.Invalid("parameters.caip2", "eth_send_raw_transaction sends to eip155 networks; %s is not one", n)
	}
	const f = "parameters.signedTransaction"
	raw, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(in.SignedTransaction), "0x"))
	if err != nil || len(raw) == 0 || len(raw) > maxSignedTx {
		return nil, apierr.Invalid(f, "must be the hex of a signed transaction (at most %d bytes)", maxSignedTx)
	}
	var tx types.Transaction
	if err := tx.UnmarshalBinary(raw); err != nil {
		return nil, apierr.Invalid(f, "not a signed Ethereum transaction: %v", err)
	}
	if tx.ChainId() == nil || tx.ChainId().Cmp(want) != 0 {
		return nil, apierr.Invalid(f, "the transaction is for chain id %v, not %s (replay-protected transactions only)", tx.ChainId(), n)
	}
	if _, err := types.Sender(types.LatestSignerForChainID(want), &tx); err != nil {
		return nil, apierr.Invalid(f, "the signature does not recover a sender: %v", err)
	}
	c, err := d.provider(n)
	if err != nil {
		return nil, err
	}
	var hash string
	if err := c.Call(x.Ctx, "eth_sendRawTransaction", []any{"0x" + hex.EncodeToString(raw)}, &hash); err != nil {
		return nil, rpcError(err)
	}
	if !strings.EqualFold(hash, tx.Hash().Hex()) {
		hash = tx.Hash().Hex()
	}
	s := &Send{ID: id.New(), OrgID: x.OrgID, Caip2: n, TxHash: strings.ToLower(hash), CreatedAt: x.Now}
	if err := records.Save(x.Ctx, x.Tx, KindSend, s.ID, s.OrgID, s.CreatedAt, s.CreatedAt, s, store.Key{Name: keySendTxn, Value: s.TxHash}); err != nil {
		return nil, err
	}
	return wire.EthSendRawTransactionResult{TransactionHash: s.TxHash}, nil
}

// status follows a sent transaction: its status id, or (for eth_send_raw_transaction, which
// answers with the hash only) its transaction hash.
func (d *Deps) status(q *activity.Read, req any) (any, error) {
	in := req.(*wire.GetSendTransactionStatusRequest)
	if in.SendTransactionStatusId == "" {
		return nil, apierr.Required("sendTransactionStatusId")
	}
	s, err := records.Load[Send](q.Ctx, q.R, KindSend, q.OrgID, in.SendTransactionStatusId, "send transaction status")
	if apierr.From(err).Code == apierr.NotFound {
		ids, lerr := records.LookupIDs(q.Ctx, q.R, keySendTxn, strings.ToLower(in.SendTransactionStatusId), KindSend, q.OrgID)
		if lerr == nil && len(ids) > 0 {
			s, err = records.Load[Send](q.Ctx, q.R, KindSend, q.OrgID, ids[0], "send transaction status")
		}
	}
	if err != nil {
		return nil, err
	}
	c, err := d.provider(s.Caip2)
	if err != nil {
		return nil, err
	}
	if isSolana(s.Caip2) {
		return solanaStatus(q, c, s)
	}
	var receipt *struct {
		Status      string `json:"status"`
		BlockNumber string `json:"blockNumber"`
	}
	if err := c.Call(q.Ctx, "eth_getTransactionReceipt", []any{s.TxHash}, &receipt); err != nil {
		return nil, rpcError(err)
	}
	out := wire.GetSendTransactionStatusResponse{TxStatus: StatusPending, Eth: &wire.EthSendTransactionStatus{TxHash: s.TxHash}}
	switch {
	case receipt == nil:
	case receipt.Status == "0x1":
		out.TxStatus = StatusIncluded
	default:
		out.TxStatus = StatusFailed
		out.TxError = "the transaction was included in block " + receipt.BlockNumber + " and reverted"
		out.Error = &wire.TxError{Message: out.TxError}
	}
	return out, nil
}

// solanaStatus reads a Solana transaction's status with getSignatureStatuses.
func solanaStatus(q *activity.Read, c *rpc.Client, s *Send) (any, error) {
	var st struct {
		Value []*struct {
			ConfirmationStatus string          `json:"confirmationStatus"`
			Err                json.RawMessage `json:"err"`
		} `json:"value"`
	}
	if err := c.Call(q.Ctx, "getSignatureStatuses", []any{[]string{s.TxHash}, map[string]bool{"searchTransactionHistory": true}}, &st); err != nil {
		return nil, rpcError(err)
	}
	out := wire.GetSendTransactionStatusResponse{TxStatus: StatusPending, Solana: &wire.SolanaSendTransactionStatus{Signature: s.TxHash}}
	if len(st.Value) == 0 || st.Value[0] == nil {
		return out, nil
	}
	v := st.Value[0]
	switch {
	case len(v.Err) > 0 && string(v.Err) != "null":
		out.TxStatus = StatusFailed
		out.TxError = "the transaction failed: " + string(v.Err)
		out.Error = &wire.TxError{Message: out.TxError}
	case v.ConfirmationStatus == "confirmed" || v.ConfirmationStatus == "finalized":
		out.TxStatus = StatusIncluded
	}
	return out, nil
}

// nonces reads an address's next nonce (pending) from the node.
func (d *Deps) nonces(q *activity.Read, req any) (any, error) {
	in := req.(*wire.GetNoncesRequest)
	n, err := checkNetwork("caip2", in.Caip2, false)
	if err != nil {
		return nil, err
	}
	if _, ok := evmChainID(n); !ok {
		return nil, apierr.Invalid("caip2", "get_nonces reads eip155 networks; %s is not one", n)
	}
	if in.GasStationNonce != nil && *in.GasStationNonce {
		return nil, activity.ErrNotSupported("gasStationNonce (Latchkey runs no gas station)")
	}
	addr := strings.ToLower(strings.TrimSpace(in.Address))
	if err := checkAddressFor("address", n, addr); err != nil {
		return nil, err
	}
	out := wire.GetNoncesResponse{}
	if in.Nonce == nil || *in.Nonce {
		c, err := d.provider(n)
		if err != nil {
			return nil, err
		}
		var raw string
		if err := c.Call(q.Ctx, "eth_getTransactionCount", []any{addr, "pending"}, &raw); err != nil {
			return nil, rpcError(err)
		}
		v, err := hexQuantity(raw)
		if err != nil {
			return nil, rpcError(err)
		}
		out.Nonce = v.String()
	}
	return out, nil
}
