package storetest

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// activityJSON is a ~1.5 KB activity, about what a signing activity stores.
var activityJSON = `{"activity":{"id":"%s","organizationId":"o","status":"ACTIVITY_STATUS_COMPLETED","type":"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2","intent":{"signRawPayloadIntentV2":{"signWith":"0x5c2a1c4b0e4fd0cd1a2b7e8b2b2a3d1f2c4b5e6f","payload":"` +
	strings.Repeat(
		"ab",
		400,
	) + `","encoding":"PAYLOAD_ENCODING_HEXADECIMAL","hashFunction":"HASH_FUNCTION_KECCAK256"}},"result":{"signRawPayloadResult":{"r":"` +
	strings.Repeat(
		"1",
		64,
	) + `","s":"` + strings.Repeat(
	"2",
	64,
) + `","v":"00"}},"votes":[],"fingerprint":"sha256:` + strings.Repeat(
	"f",
	64,
) + `","createdDate":{"seconds":"1","nanos":"0"}}}`

// BenchmarkUpdates measures small durable Updates from about 32 concurrent callers: each
// inserts a record with two keys (one unique) and a ~1.5 KB activity. It reports updates/s.
func BenchmarkUpdates(b *testing.B, s store.Store) {
	ctx := context.Background()
	var seq atomic.Int64
	b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := "w" + strconv.FormatInt(seq.Add(1), 10)
			now := time.Now()
			data := []byte(fmt.Sprintf(activityJSON, id))
			err := s.Update(ctx, func(tx store.Tx) error {
				if err := tx.Insert(ctx, store.Record{Kind: "wallet", ID: id, OrgID: "o", Data: data[:200], CreatedAt: now, UpdatedAt: now},
					store.Key{Name: "wallet.name", Value: id, Unique: true},
					store.Key{Name: "wallet.tag", Value: "bench"}); err != nil {
					return err
				}
				return tx.PutActivity(ctx, store.Activity{ID: "a" + id, OrgID: "o", Fingerprint: "sha256:" + id,
					Status: "ACTIVITY_STATUS_COMPLETED", Type: "ACTIVITY_TYPE_CREATE_WALLET", CreatedAt: now, UpdatedAt: now, Data: data})
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
}
