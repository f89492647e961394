package bench

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	secpecdsa "github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"

	"github.com/latchkey/latchkey/internal/stamp"
)

// Floor is the cost of the cryptography a request cannot avoid, measured on this machine in
// the same run as the load: on every core at once, how many P-256 API-key stamps the server's
// own stamp reader checks per second with the standard library's P-256 verification
// (stamp.VerifyAPIKeyStandard: no per-key table, so a server that verifies faster shows it as
// a ratio above 1), and how many checks each followed by one signature on the wallet's curve
// (secp256k1 RFC 6979 compact, or Ed25519) it makes per second.
// A signing request's throughput divided by VerifySignPerSecond is the share of the machine the
// server turns into durable signatures; the rest is everything else it does.
type Floor struct {
	Cores               int     `json:"cores"`
	Curve               string  `json:"curve"`
	VerifyPerSecond     float64 `json:"p256VerifyPerSecond"`
	VerifySignPerSecond float64 `json:"p256VerifyAndSignPerSecond"`
}

// MeasureFloor measures the floor for curve ("secp256k1" or "ed25519"), each half for d/2.
func MeasureFloor(ctx context.Context, curve string, d time.Duration) (Floor, error) {
	priv, _, err := stamp.GenerateKey(stamp.CurveP256)
	if err != nil {
		return Floor{}, err
	}
	st, err := stamp.NewP256Stamper(priv)
	if err != nil {
		return Floor{}, err
	}
	body := []byte(
		`{"type":"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2","timestampMs":"1700000000000","organizationId":"00000000-0000-4000-8000-000000000000","parameters":{"signWith":"0x0000000000000000000000000000000000000000","payload":"` +
			"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff" + `","encoding":"PAYLOAD_ENCODING_HEXADECIMAL","hashFunction":"HASH_FUNCTION_NO_OP"}}`,
	)
	_, header, err := st.Stamp(body)
	if err != nil {
		return Floor{}, err
	}
	verify := func() error {
		_, err := stamp.VerifyAPIKeyStandard(header, body)
		return err
	}
	var sign func(digest []byte)
	switch curve {
	case "secp256k1":
		k, err := secp256k1.GeneratePrivateKey()
		if err != nil {
			return Floor{}, err
		}
		sign = func(digest []byte) { secpecdsa.SignCompact(k, digest, true) }
	case "ed25519":
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return Floor{}, err
		}
		sign = func(digest []byte) { ed25519.Sign(k, digest) }
	default:
		return Floor{}, fmt.Errorf("no floor for curve %q", curve)
	}
	if err := verify(); err != nil {
		return Floor{}, fmt.Errorf("the floor's own stamp does not verify: %w", err)
	}
	digest := make([]byte, 32)
	cores := runtime.GOMAXPROCS(0)
	f := Floor{Cores: cores, Curve: curve}
	f.VerifyPerSecond = onAllCores(ctx, cores, d/2, func() { _ = verify() })
	f.VerifySignPerSecond = onAllCores(ctx, cores, d/2, func() { _ = verify(); sign(digest) })
	return f, nil
}

// onAllCores runs op on n goroutines for d and returns how many ran per second.
func onAllCores(ctx context.Context, n int, d time.Duration, op func()) float64 {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var count atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := int64(0)
			for ctx.Err() == nil {
				op()
				local++
			}
			count.Add(local)
		}()
	}
	wg.Wait()
	return float64(count.Load()) / time.Since(start).Seconds()
}

// MeasureFsync writes 4 KiB and fsyncs it n times in a new file in dir (appending, as a
// write-ahead log does), and returns the median: the time the disk takes to make a small write
// durable. The file is removed.
func MeasureFsync(dir string, n int) (time.Duration, error) {
	f, err := os.CreateTemp(dir, "fsync-probe-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	page := make([]byte, 4096)
	times := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if _, err := f.Write(page); err != nil {
			return 0, err
		}
		if err := f.Sync(); err != nil {
			return 0, err
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}
