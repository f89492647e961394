package server_test

import (
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/latchkey/latchkey/internal/servertest"
)

// BenchmarkSignRawPayload is one stamped sign_raw_payload over HTTP: stamp verified, caller
// resolved, key unsealed, digest signed, policy decided, activity committed. With no OTLP
// endpoint set it measures the request path as tracing leaves it when off.
func BenchmarkSignRawPayload(b *testing.B) { benchSignRawPayload(b) }

func benchSignRawPayload(b *testing.B) {
	h := servertest.New(b)
	root, _ := h.RootOrg("Acme")
	w := root.Submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "w", "accounts": servertest.WalletAccounts[:1]},
	)
	if w.Status != 200 {
		b.Fatalf("create_wallet: %d %s", w.Status, w.Raw)
	}
	addr := w.Str("activity", "result", "createWalletResult", "addresses", "0")
	payload := make([]byte, 32)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		binary.BigEndian.PutUint64(payload, uint64(i)) // every body distinct: no resubmission
		r := root.Submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": addr,
			"payload": hex.EncodeToString(
				payload,
			), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"})
		if r.Status != 200 {
			b.Fatalf("sign_raw_payload: %d %s", r.Status, r.Raw)
		}
	}
}
