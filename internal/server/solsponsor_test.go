package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mr-tron/base58"

	"github.com/latchkey/latchkey/internal/chain/solana"
	"github.com/latchkey/latchkey/internal/ops/chaindata"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// solIns is one compiled instruction for solLegacy (every length below 128).
type solIns struct {
	prog byte
	accs []byte
	data []byte
}

// solLegacy serializes an unsigned legacy transaction: header, keys, a zero blockhash, instructions.
func solLegacy(header [3]byte, keys [][]byte, ins ...solIns) []byte {
	b := append([]byte{header[0]}, make([]byte, 64*int(header[0]))...)
	b = append(append(b, header[:]...), byte(len(keys)))
	for _, k := range keys {
		b = append(b, k...)
	}
	b = append(append(b, make([]byte, 32)...), byte(len(ins)))
	for _, in := range ins {
		b = append(append(append(b, in.prog, byte(len(in.accs))), in.accs...), byte(len(in.data)))
		b = append(b, in.data...)
	}
	return b
}

func solKey(s string) []byte {
	k, err := base58.Decode(s)
	if err != nil || len(k) != 32 {
		panic("bad key " + s)
	}
	return k
}

func solTransfer(lamports uint64) []byte {
	return binary.LittleEndian.AppendUint64([]byte{2, 0, 0, 0}, lamports)
}

// sponsorNode is a Solana node stand-in that refuses, as the network does, a transaction whose
// signatures do not all verify, and reports what the fee payer paid for those it took.
type sponsorNode struct {
	mu   sync.Mutex
	sent [][]byte
}

func (n *sponsorNode) last() *solana.Tx {
	n.mu.Lock()
	defer n.mu.Unlock()
	tx, err := solana.ParseTransaction(n.sent[len(n.sent)-1])
	if err != nil {
		panic(err)
	}
	return tx
}

func TestSolanaSponsoredSend(t *testing.T) {
	bh := bytes.Repeat([]byte{5}, 32)
	sn := &sponsorNode{}
	node := newFakeNode(t, map[string]func([]json.RawMessage) string{
		"getLatestBlockhash": func([]json.RawMessage) string {
			return `{"context":{"slot":9},"value":{"blockhash":"` + base58.Encode(bh) + `","lastValidBlockHeight":200}}`
		},
		"sendTransaction": func(p []json.RawMessage) string {
			var b64 string
			_ = json.Unmarshal(p[0], &b64)
			raw, _ := base64.StdEncoding.DecodeString(b64)
			tx, err := solana.ParseTransaction(raw)
			if err == nil {
				err = tx.VerifySignatures()
			}
			if err != nil {
				return `{"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"Transaction signature verification failure"}}`
			}
			sn.mu.Lock()
			sn.sent = append(sn.sent, raw)
			sn.mu.Unlock()
			sig, _ := tx.FirstSignature()
			return `"` + sig + `"`
		},
		"getSignatureStatuses": func([]json.RawMessage) string {
			return `{"context":{"slot":10},"value":[{"slot":10,"confirmations":null,"err":null,"confirmationStatus":"confirmed"}]}`
		},
		"getTransaction": func([]json.RawMessage) string { // the fee payer paid 5,000 lamports
			return `{"slot":10,"blockTime":1700000000,"meta":{"err":null,"fee":5000,"preBalances":[1000000000,5,1],` +
				`"postBalances":[999995000,5,1],"preTokenBalances":[],"postTokenBalances":[]},` +
				`"transaction":{"signatures":[],"message":{"header":{"numRequiredSignatures":2},"accountKeys":[]}}}`
		},
	})
	gas := filepath.Join(t.TempDir(), "gas.json")
	if err := os.WriteFile(gas, []byte(`{"solana":{"`+chaindata.SolanaDevnet+`":{"maxFeeLamports":20000,`+
		`"rentSponsorship":true,"usdPerCoin":"100"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) {
		c.ChainRPC = map[string]string{chaindata.SolanaDevnet: node.srv.URL}
		c.GasStationFile = gas
	}))
	root, _ := h.RootOrg("Acme")
	_, user, _ := ethAndSolana(t, root)
	feePayer := h.Server.SponsorAddresses().SolanaFeePayer
	sys := solKey("11111111111111111111111111111111")
	to := bytes.Repeat([]byte{7}, 32)
	send := func(unsigned []byte, signers []string, extra map[string]any) servertest.Response {
		h.Advance(time.Millisecond)
		p := map[string]any{"unsignedTransaction": hex.EncodeToString(unsigned), "signWiths": signers,
			"caip2": "solana:devnet", "sponsor": true}
		for k, v := range extra {
			p[k] = v
		}
		return root.Submit("sol_send_transaction", "ACTIVITY_TYPE_SOL_SEND_TRANSACTION_V2", p)
	}
	transfer := solLegacy([3]byte{1, 0, 1}, [][]byte{solKey(user), to, sys}, solIns{2, []byte{0, 1}, solTransfer(1000)})

	// Not enabled for the organization yet: refused with the reason, nothing sent.
	servertest.WantError(
		t,
		send(transfer, []string{user}, nil),
		http.StatusBadRequest,
		9,
		"gas sponsorship is not enabled",
	)
	enable := func(rent bool) {
		h.Advance(time.Millisecond)
		root.MustSubmit("upsert_gas_usage_config", "ACTIVITY_TYPE_UPSERT_GAS_USAGE_CONFIG", map[string]any{
			"orgWindowLimitUsd": "10", "subOrgWindowLimitUsd": "1", "windowDurationMinutes": "60", "enabled": true,
			"solanaConfig": map[string]any{"rentPrefundEnabled": rent}})
	}
	enable(false)

	// The blockhash left to the server: the fee payer first, both signatures valid (the node
	// checks), the node's blockhash, the transfer unchanged.
	r := send(transfer, []string{user}, nil)
	servertest.MustOK(t, r)
	tx := sn.last()
	if tx.NumSignatures() != 2 || tx.Signer(0) != feePayer || tx.Signer(1) != user {
		t.Fatalf("signers %s %s, want the fee payer %s then %s", tx.Signer(0), tx.Signer(1), feePayer, user)
	}
	if msg := tx.Message(); !bytes.Equal(msg[3+1+3*32+32:][:32], bh) || !bytes.Contains(msg, solTransfer(1000)) {
		t.Fatal("the sent message does not carry the node's blockhash and the transfer")
	}
	sid := r.Str("activity", "result", "solSendTransactionResultV2", "sendTransactionStatusId")
	if st := root.Query("get_send_transaction_status", map[string]any{"sendTransactionStatusId": sid}); st.Str(
		"txStatus") != chaindata.StatusIncluded {
		t.Fatalf("status: %s", st.Raw)
	}
	// Reserved: 10,000 lamports (two signatures) at $100 a SOL, $0.001; settled at what the fee
	// payer's balance lost, 5,000 lamports, $0.0005.
	usage := func() string { return root.Query("get_gas_usage", map[string]any{}).Str("usageUsd") }
	if u := usage(); u != "0.001" {
		t.Fatalf("usage after the send: %s, want 0.001", u)
	}
	if n := h.Server.ChainDeps().SettleSolanaOnce(t.Context()); n != 1 {
		t.Fatalf("settled %d sends, want 1", n)
	}
	if n := h.Server.ChainDeps().SettleSolanaOnce(t.Context()); n != 0 {
		t.Fatalf("settled %d sends again", n)
	}
	if u := usage(); u != "0.0005" {
		t.Fatalf("usage after settling: %s, want 0.0005", u)
	}

	// The caller's blockhash is kept.
	own := bytes.Repeat([]byte{8}, 32)
	servertest.MustOK(t, send(transfer, []string{user}, map[string]any{"recentBlockhash": base58.Encode(own)}))
	if msg := sn.last().Message(); !bytes.Equal(msg[3+1+3*32+32:][:32], own) {
		t.Fatal("the caller's blockhash was not kept")
	}

	// Refusals, each naming the field, nothing sent.
	sentBefore := len(sn.sent)
	ata := solKey("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL")
	cb := solKey("ComputeBudget111111111111111111111111111111")
	other := bytes.Repeat([]byte{9}, 32)
	for _, c := range []struct {
		name, field, msg string
		tx               []byte
		signers          []string
	}{
		{"fee payer in the message", "parameters.unsignedTransaction", "already in the message",
			solLegacy([3]byte{1, 0, 1}, [][]byte{solKey(user), solKey(feePayer), sys},
				solIns{2, []byte{0, 1}, solTransfer(1)}), nil},
		{"system account creation", "parameters.unsignedTransaction", "CreateAccount",
			solLegacy([3]byte{2, 0, 1}, [][]byte{solKey(user), to, sys},
				solIns{2, []byte{0, 1}, make([]byte, 52)}), nil},
		{"ATA create with rent prefunding off", "parameters.unsignedTransaction", "rent sponsorship is off",
			solLegacy([3]byte{1, 0, 2}, [][]byte{solKey(user), to, sys, ata},
				solIns{3, []byte{0, 1, 0, 2}, []byte{1}}), nil},
		{"fee above the cap", "parameters.unsignedTransaction", "above this network's sponsorship cap of 20000",
			solLegacy([3]byte{1, 0, 2}, [][]byte{solKey(user), to, sys, cb},
				solIns{2, []byte{0, 1}, solTransfer(1)},
				solIns{3, nil, binary.LittleEndian.AppendUint64([]byte{3}, 1_000_000)}), nil},
		{"a required signer not in signWiths", "parameters.signWiths", "signature 2",
			solLegacy([3]byte{2, 0, 1}, [][]byte{solKey(user), other, sys},
				solIns{2, []byte{1, 0}, solTransfer(1)}), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			signers := c.signers
			if signers == nil {
				signers = []string{user}
			}
			servertest.WantError(t, send(c.tx, signers, nil), http.StatusBadRequest, 3, c.field)
			if e := send(c.tx, signers, nil); !strings.Contains(e.Str("message"), c.msg) {
				t.Fatalf("message %q does not say %q", e.Str("message"), c.msg)
			}
		})
	}
	if len(sn.sent) != sentBefore {
		t.Fatal("a refused transaction was sent")
	}

	// With rent prefunding on, an ATA create is funded by the fee payer.
	enable(true)
	createATA := solLegacy(
		[3]byte{1, 0, 2},
		[][]byte{solKey(user), to, sys, ata},
		solIns{3, []byte{0, 1, 0, 2}, []byte{1}},
	)
	servertest.MustOK(t, send(createATA, []string{user}, nil))
	if msg := sn.last().Message(); !bytes.HasSuffix(msg, []byte{4, 4, 0, 2, 1, 3, 1, 1}) {
		t.Fatalf("the ATA create is not funded by the fee payer: % x", msg[len(msg)-8:])
	}
}
