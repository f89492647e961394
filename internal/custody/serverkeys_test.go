package custody

import (
	"context"
	"crypto/ecdsa"
	"strings"
	"testing"
	"time"
)

// Server key rotation over time, as two processes over one store see it: the next key is
// pending until it takes over, by the clock, in both; the replaced key verifies for its grace
// period; a second rotation folds the first into the retired keys, which verify until their
// time runs out and are then dropped.
func TestServerKeyRotationOverTime(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	kr, err := OpenKeyring(ctx, st, testMaster(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	clock := func() time.Time { return now }
	a, err := LoadServerKeys(ctx, st, kr)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadServerKeys(ctx, st, kr)
	if err != nil {
		t.Fatal(err)
	}
	a.Now, b.Now = clock, clock
	first := a.PublicKey(OTP)
	if b.PublicKey(OTP) != first {
		t.Fatal("two processes loaded different keys")
	}
	hexes := func(keys []*ecdsa.PublicKey) string {
		var s []string
		for _, k := range keys {
			s = append(s, publicHex(k)[:8])
		}
		return strings.Join(s, ",")
	}
	r1, err := RotateServerKey(ctx, st, kr, OTP, time.Hour, 2*time.Hour, now)
	if err != nil || r1.Current != first || r1.Next == first {
		t.Fatalf("rotate: %+v %v", r1, err)
	}
	// A reload that finds the records unchanged keeps the keys it has (it opens none again).
	before := (*a.state.Load())[Signer]
	if err := a.Reload(ctx, st, kr); err != nil || (*a.state.Load())[Signer] != before {
		t.Fatalf("an unchanged record was read again: %v", err)
	}
	// b learns of it at its next reload; until then it knows one key, and signs with it.
	if len(b.VerifyKeys(OTP)) != 1 || len(b.Rotations()) != 0 {
		t.Fatal("b saw the rotation before reloading")
	}
	for _, k := range []*ServerKeys{a, b} {
		if err := k.Reload(ctx, st, kr); err != nil {
			t.Fatal(err)
		}
	}
	second := r1.Next
	for _, c := range []struct {
		at       time.Duration
		inUse    string
		verify   []string
		decrypt  int
		rotating bool
	}{
		{0, first, []string{first, second}, 2, true},
		{59 * time.Minute, first, []string{first, second}, 2, true},
		{time.Hour, second, []string{second, first}, 2, true},
		{3*time.Hour - time.Second, second, []string{second, first}, 2, true},
		{3 * time.Hour, second, []string{second}, 1, false},
	} {
		now = t0.Add(c.at)
		for name, k := range map[string]*ServerKeys{"a": a, "b": b} {
			var want []string
			for _, v := range c.verify {
				want = append(want, v[:8])
			}
			if k.PublicKey(OTP) != c.inUse || hexes(k.VerifyKeys(OTP)) != strings.Join(want, ",") ||
				len(k.decryptKeys(OTP)) != c.decrypt ||
				(len(k.Rotations()) == 1) != c.rotating {
				t.Fatalf(
					"%s at +%v: in use %s, verify %s, decrypt %d, rotations %+v",
					name,
					c.at,
					k.PublicKey(OTP)[:8],
					hexes(k.VerifyKeys(OTP)),
					len(k.decryptKeys(OTP)),
					k.Rotations(),
				)
			}
		}
	}
	// A second rotation after the first took over: the first key joins the retired keys, which
	// verify until the end of its grace period (t0+3h), then not at all.
	now = t0.Add(2 * time.Hour)
	r2, err := RotateServerKey(ctx, st, kr, OTP, time.Hour, time.Hour, now)
	if err != nil || r2.Current != second {
		t.Fatalf("second rotation: %+v %v", r2, err)
	}
	if err := a.Reload(ctx, st, kr); err != nil {
		t.Fatal(err)
	}
	if got := hexes(a.VerifyKeys(OTP)); got != strings.Join([]string{second[:8], r2.Next[:8], first[:8]}, ",") {
		t.Fatalf("after the second rotation: %s", got)
	}
	now = t0.Add(3 * time.Hour)
	if got := hexes(a.VerifyKeys(OTP)); got != strings.Join([]string{r2.Next[:8], second[:8]}, ",") {
		t.Fatalf("after the second switch: %s", got)
	}
	if _, err := RotateServerKey(ctx, st, kr, OTP, -time.Hour, 0, now); err == nil {
		t.Fatal("a negative overlap was accepted")
	}
}
