package chaindata

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
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
	// keySendFollowed marks the sends whose final status is not known yet (the follower's list).
	keySendFollowed = "send_transaction.followed"
	// keySendQueued marks, by network, the sponsored sends the paymaster has not signed yet.
	keySendQueued = "send_transaction.queued"
	// keySendNonce holds a delegate nonce (network|account|nonce) while its send is not FAILED:
	// a second send with it is refused.
	keySendNonce = "send_transaction.gas_station_nonce"
	// keySendHeldNonce lists, by network|account, the sends holding a delegate nonce that are
	// not final yet (get_nonces adds them; the next free nonce comes after them).
	keySendHeldNonce = "send_transaction.gas_station_account"
)

// OwnedKinds are the record kinds an organization owns here.
var OwnedKinds = []string{KindSend, KindGrant, KindHistory}

// Send is a sent transaction. It is recorded in the activity's transaction and broadcast
// once that commits (never inside it: broadcast is network I/O, and a transaction may be
// rolled back or run again); a node's refusal is recorded as BroadcastError, which
// get_send_transaction_status reports as FAILED.
type Send struct {
	ID             string    `json:"id"`
	OrgID          string    `json:"orgId"`
	Caip2          string    `json:"caip2"`
	TxHash         string    `json:"txHash"`
	BroadcastError string    `json:"broadcastError,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	// ActivityID is the activity that sent it; Final is the last status reported to webhooks
	// (INCLUDED or FAILED; "" while the follower still watches it).
	ActivityID string `json:"activityId,omitempty"`
	Final      string `json:"final,omitempty"`

	// Sends through the gas-station delegate (ethsend_batch.go, paymaster.go). Account is the
	// user's account (lowercase); GasStationNonce the delegate nonce its signed batch consumes
	// (decimal); Calldata the executeBatch call; Auth its EIP-7702 authorization on its first send.
	Account         string                      `json:"account,omitempty"`
	GasStationNonce string                      `json:"gasStationNonce,omitempty"`
	Calldata        string                      `json:"calldata,omitempty"`
	Auth            *types.SetCodeAuthorization `json:"auth,omitempty"`
	// Undelegate marks an eth_undelegate_7702 send (its authorization names address 0).
	Undelegate bool `json:"undelegate,omitempty"`
	// Sponsored sends are paid by the paymaster: queued until it signs them (Raw empty), with the
	// gas and fees fixed before the activity and the usage reserved (USD, decimal).
	Sponsored bool   `json:"sponsored,omitempty"`
	Gas       uint64 `json:"gas,omitempty"`
	MaxFee    string `json:"maxFee,omitempty"`
	Prio      string `json:"prio,omitempty"`
	// PaymasterNonce and Raw are set when the paymaster signs (once: a send is never signed
	// again with another nonce); FillerHash is the 0-value self-transfer that used the nonce
	// when the node refused Raw.
	PaymasterNonce *uint64 `json:"paymasterNonce,omitempty"`
	Raw            string  `json:"raw,omitempty"`
	FillerHash     string  `json:"fillerHash,omitempty"`
	FillerRaw      string  `json:"fillerRaw,omitempty"`
}

// keys are the send's lookup keys: its hash, until it is final the followed mark, while queued
// its network's queue, and its delegate nonce.
func (s *Send) keys() []store.Key {
	var ks []store.Key
	if s.TxHash != "" || !s.Sponsored {
		ks = append(ks, store.Key{Name: keySendTxn, Value: s.TxHash})
	}
	if s.Final == "" {
		ks = append(ks, store.Key{Name: keySendFollowed, Value: "1"})
	}
	if s.Sponsored && s.Raw == "" && s.Final == "" {
		ks = append(ks, store.Key{Name: keySendQueued, Value: s.Caip2})
	}
	if s.GasStationNonce != "" && s.Final != StatusFailed {
		ks = append(ks, store.Key{Name: keySendNonce, Value: s.Caip2 + "|" + s.Account + "|" + s.GasStationNonce,
			Unique: true})
	}
	if s.GasStationNonce != "" && s.Final == "" {
		ks = append(ks, store.Key{Name: keySendHeldNonce, Value: s.Caip2 + "|" + s.Account})
	}
	return ks
}

// record writes a send in the activity's transaction and broadcasts it after commit with
// method and params; a refusal is kept on the record.
func (d *Deps) record(x *activity.Exec, s *Send, c *rpc.Client, method string, params []any) error {
	s.ActivityID = x.ActivityID
	if err := records.Save(x.Ctx, x.Tx, KindSend, s.ID, s.OrgID, s.CreatedAt, s.CreatedAt, s, s.keys()...); err != nil {
		return err
	}
	if err := d.statusEvent(x.Ctx, x.Tx, s, "BROADCASTING", nil, x.Now); err != nil {
		return err
	}
	x.AfterCommit(func(ctx context.Context) {
		var ignored json.RawMessage
		err := c.Call(ctx, method, params, &ignored)
		if err == nil {
			return
		}
		s.BroadcastError = "the node refused the transaction: " + err.Error()
		if !errors.As(err, new(*rpc.Error)) {
			s.BroadcastError = "the transaction could not be sent: " + err.Error()
		}
		if uerr := d.Store.Update(ctx, func(tx store.Tx) error {
			now := time.Now().UTC()
			s.Final = StatusFailed
			if err := records.Save(ctx, tx, KindSend, s.ID, s.OrgID, s.CreatedAt, now, s, s.keys()...); err != nil {
				return err
			}
			return d.statusEvent(ctx, tx, s, StatusFailed, &wire.TxError{Message: s.BroadcastError}, now)
		}); uerr != nil && d.Log != nil {
			d.Log.Error("chaindata: recording a refused broadcast", "network", s.Caip2, "err", uerr)
		}
	})
	return nil
}

// Transaction statuses (what @turnkey/core's pollTransactionStatus reads).
const (
	StatusPending  = "PENDING"
	StatusIncluded = "INCLUDED"
	StatusFailed   = "FAILED"
)

const maxSignedTx = 128 << 10

// sendRaw sends a signed EVM transaction to the node of its network.
func (d *Deps) sendRaw(x *activity.Exec, in *wire.EthSendRawTransactionIntent) (any, error) {
	n, want, err := evmNetwork("eth_send_raw_transaction", in.Caip2)
	if err != nil {
		return nil, err
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
		return nil, apierr.Invalid(
			f,
			"the transaction is for chain id %v, not %s (replay-protected transactions only)",
			tx.ChainId(),
			n,
		)
	}
	if _, err := types.Sender(types.LatestSignerForChainID(want), &tx); err != nil {
		return nil, apierr.Invalid(f, "the signature does not recover a sender: %v", err)
	}
	c, err := d.provider(n)
	if err != nil {
		return nil, err
	}
	s := &Send{ID: id.New(), OrgID: x.OrgID, Caip2: n, TxHash: strings.ToLower(tx.Hash().Hex()), CreatedAt: x.Now}
	if err := d.record(x, s, c, "eth_sendRawTransaction", []any{"0x" + hex.EncodeToString(raw)}); err != nil {
		return nil, err
	}
	return wire.EthSendRawTransactionResult{TransactionHash: s.TxHash}, nil
}

// status follows a sent transaction: its status id, or (for eth_send_raw_transaction, which
// answers with the hash only) its transaction hash.
func (d *Deps) status(q *activity.Read, in *wire.GetSendTransactionStatusRequest) (any, error) {
	if in.SendTransactionStatusId == "" {
		return nil, apierr.Required("sendTransactionStatusId")
	}
	s, err := records.Load[Send](q.Ctx, q.R, KindSend, q.OrgID, in.SendTransactionStatusId, "send transaction status")
	if apierr.From(err).Code == apierr.NotFound {
		ids, lerr := records.LookupIDs(
			q.Ctx,
			q.R,
			keySendTxn,
			strings.ToLower(in.SendTransactionStatusId),
			KindSend,
			q.OrgID,
		)
		if lerr == nil && len(ids) > 0 {
			s, err = records.Load[Send](q.Ctx, q.R, KindSend, q.OrgID, ids[0], "send transaction status")
		}
	}
	if err != nil {
		return nil, err
	}
	return d.chainStatus(q.Ctx, s)
}

// chainStatus is a send's status: FAILED with the node's words when the broadcast was refused,
// otherwise what the node says now.
func (d *Deps) chainStatus(ctx context.Context, s *Send) (wire.GetSendTransactionStatusResponse, error) {
	if s.BroadcastError != "" {
		out := wire.GetSendTransactionStatusResponse{
			TxStatus: StatusFailed,
			TxError:  s.BroadcastError,
			Error:    &wire.TxError{Message: s.BroadcastError},
		}
		if isSolana(s.Caip2) {
			out.Solana = &wire.SolanaSendTransactionStatus{Signature: s.TxHash}
		} else {
			out.Eth = &wire.EthSendTransactionStatus{TxHash: s.TxHash}
		}
		return out, nil
	}
	c, err := d.provider(s.Caip2)
	if err != nil {
		return wire.GetSendTransactionStatusResponse{}, err
	}
	if isSolana(s.Caip2) {
		return solanaStatus(ctx, c, s)
	}
	out, _, err := evmStatus(ctx, c, s)
	return out, err
}

// sendReceipt is what a status reads of an EVM transaction's receipt.
type sendReceipt struct {
	Status            string         `json:"status"`
	BlockNumber       string         `json:"blockNumber"`
	GasUsed           hexutil.Big    `json:"gasUsed"`
	EffectiveGasPrice hexutil.Big    `json:"effectiveGasPrice"`
	From              common.Address `json:"from"`
}

// evmStatus is an EVM send's status, and its receipt once included. A send through the
// gas-station delegate that was included must have moved the account: the delegate nonce past
// the one it signed (or, for an undelegation, the code gone), else it is FAILED: a skipped
// authorization is otherwise silent.
func evmStatus(
	ctx context.Context,
	c *rpc.Client,
	s *Send,
) (wire.GetSendTransactionStatusResponse, *sendReceipt, error) {
	out := wire.GetSendTransactionStatusResponse{
		TxStatus: StatusPending,
		Eth:      &wire.EthSendTransactionStatus{TxHash: s.TxHash},
	}
	if s.TxHash == "" { // queued for the paymaster
		return out, nil, nil
	}
	var rc *sendReceipt
	if err := c.Call(ctx, "eth_getTransactionReceipt", []any{s.TxHash}, &rc); err != nil {
		return out, nil, rpcError(err)
	}
	fail := func(msg string) {
		out.TxStatus, out.TxError = StatusFailed, msg
		out.Error = &wire.TxError{Message: msg}
	}
	switch {
	case rc == nil:
		return out, nil, nil
	case rc.Status != "0x1":
		fail("the transaction was included in block " + rc.BlockNumber + " and reverted")
		if s.Calldata != "" {
			fail(out.TxError + ": the gas-station delegate refused the batch or one of its calls reverted " +
				"(the whole batch is undone)")
		}
		return out, rc, nil
	case s.Undelegate:
		var code hexutil.Bytes
		if err := c.Call(ctx, "eth_getCode", []any{s.Account, rc.BlockNumber}, &code); err != nil {
			return out, nil, rpcError(err)
		}
		if len(code) != 0 {
			fail("undelegation not applied: the account still has code after block " + rc.BlockNumber)
			return out, rc, nil
		}
	case s.GasStationNonce != "":
		n, err := delegateNonce(ctx, c, common.HexToAddress(s.Account), rc.BlockNumber)
		if err != nil {
			return out, nil, err
		}
		signed, _ := new(big.Int).SetString(s.GasStationNonce, 10)
		if signed == nil || n.Cmp(signed) <= 0 {
			fail("delegation not applied: the transaction was included in block " + rc.BlockNumber +
				" but the account's gas-station nonce did not advance past " + s.GasStationNonce)
			return out, rc, nil
		}
	}
	out.TxStatus = StatusIncluded
	return out, rc, nil
}

// solanaStatus reads a Solana transaction's status with getSignatureStatuses.
func solanaStatus(ctx context.Context, c *rpc.Client, s *Send) (wire.GetSendTransactionStatusResponse, error) {
	var st struct {
		Value []*struct {
			ConfirmationStatus string          `json:"confirmationStatus"`
			Err                json.RawMessage `json:"err"`
		} `json:"value"`
	}
	if err := c.Call(ctx, "getSignatureStatuses", []any{[]string{s.TxHash}, map[string]bool{"searchTransactionHistory": true}}, &st); err != nil {
		return wire.GetSendTransactionStatusResponse{}, rpcError(err)
	}
	out := wire.GetSendTransactionStatusResponse{
		TxStatus: StatusPending,
		Solana:   &wire.SolanaSendTransactionStatus{Signature: s.TxHash},
	}
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
func (d *Deps) nonces(q *activity.Read, in *wire.GetNoncesRequest) (any, error) {
	n, err := checkNetwork("caip2", in.Caip2, false)
	if err != nil {
		return nil, err
	}
	if _, ok := evmChainID(n); !ok {
		return nil, apierr.Invalid("caip2", "get_nonces reads eip155 networks; %s is not one", n)
	}
	addr := strings.ToLower(strings.TrimSpace(in.Address))
	if err := checkAddressFor("address", n, addr); err != nil {
		return nil, err
	}
	out := wire.GetNoncesResponse{}
	if in.GasStationNonce != nil && *in.GasStationNonce {
		// The delegate nonce in the account's storage (0 when it delegates to nothing), after the
		// nonces the account's sends not yet final hold: the one its next send should sign.
		c, err := d.provider(n)
		if err != nil {
			return nil, err
		}
		st, err := readDelegation(q.Ctx, c, common.HexToAddress(addr), common.Address{}, "latest")
		if err != nil {
			return nil, err
		}
		held, err := heldGasStationNonces(q.Ctx, q.R, n, addr)
		if err != nil {
			return nil, err
		}
		out.GasStationNonce = nextFreeNonce(st.nonce, held).String()
	}
	if in.Nonce == nil || *in.Nonce {
		c, err := d.provider(n)
		if err != nil {
			return nil, err
		}
		v, err := pendingNonce(q.Ctx, c, common.HexToAddress(addr))
		if err != nil {
			return nil, err
		}
		out.Nonce = strconv.FormatUint(v, 10)
	}
	return out, nil
}
