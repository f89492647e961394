package stamp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/p256verify"
)

// p256Fixture is a fresh P-256 key with a stamper and the cache key its stamps are filed under.
type p256Fixture struct {
	priv *ecdsa.PrivateKey
	st   Stamper
	ck   string
}

func newP256Fixture(t *testing.T) p256Fixture {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewP256Stamper(hex.EncodeToString(mustBytes(priv.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	u := mustBytes(priv.PublicKey.Bytes())
	return p256Fixture{priv: priv, st: st, ck: cacheKey(CurveP256, compressPoint(u))}
}

func (f p256Fixture) stamp(t *testing.T, body []byte) string {
	t.Helper()
	_, h, err := f.st.Stamp(body)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// highS re-signs body with s replaced by n-s, a signature crypto/ecdsa accepts and so must the
// table.
func (f p256Fixture) highS(t *testing.T, body []byte) string {
	t.Helper()
	h := sha256.Sum256(body)
	r, s, err := ecdsa.Sign(rand.Reader, f.priv, h[:])
	if err != nil {
		t.Fatal(err)
	}
	s.Sub(elliptic.P256().Params().N, s)
	pub := hex.EncodeToString(compressPoint(mustBytes(f.priv.PublicKey.Bytes())))
	return stampHeader(pub, SchemeP256, hex.EncodeToString(derEncode(r, s)))
}

func TestP256TableOnlyForRegisteredKeysVerifiedAgain(t *testing.T) {
	f := newP256Fixture(t)
	body := []byte(`{"organizationId":"tables"}`)
	h := f.stamp(t, body)

	p, err := VerifyAPIKey(h, body)
	if err != nil {
		t.Fatal(err)
	}
	pk := parsedKeys.get(f.ck)
	if pk == nil || pk.table.Load() != nil {
		t.Fatalf("after one verification: cached %v, want cached without a table", pk != nil)
	}
	for range 3 {
		if _, err := VerifyAPIKey(h, body); err != nil {
			t.Fatal(err)
		}
	}
	if pk.table.Load() != nil {
		t.Fatal("a table for a key no caller reported registered")
	}
	p.Registered()
	if _, err := VerifyAPIKeyStandard(h, body); err != nil {
		t.Fatal(err)
	}
	if pk.table.Load() != nil {
		t.Fatal("VerifyAPIKeyStandard built a table")
	}
	if _, err := VerifyAPIKey(h, body); err != nil {
		t.Fatal(err)
	}
	if pk.table.Load() == nil {
		t.Fatal("no table for a registered key verified again")
	}

	// With the table: the same answers as crypto/ecdsa, valid, high-S and wrong.
	for name, c := range map[string]struct {
		header string
		body   []byte
		ok     bool
	}{
		"the stamp":               {h, body, true},
		"a new stamp":             {f.stamp(t, []byte("{}")), []byte("{}"), true},
		"a high-S stamp":          {f.highS(t, body), body, true},
		"another body":            {h, []byte(`{"organizationId":"other"}`), false},
		"r = s = 1":               {stampHeader(pk.hex, SchemeP256, "3006020101020101"), body, false},
		"a stamp of another body": {f.stamp(t, []byte("x")), body, false},
	} {
		_, errTable := VerifyAPIKey(c.header, c.body)
		_, errStd := VerifyAPIKeyStandard(c.header, c.body)
		if (errTable == nil) != c.ok || (errStd == nil) != c.ok {
			t.Errorf("%s: with the table %v, standard %v, want verified %v", name, errTable, errStd, c.ok)
		}
		if !c.ok && !errors.Is(errTable, ErrUnverified) && !errors.Is(errTable, ErrMalformed) {
			t.Errorf("%s: error of unknown kind %v", name, errTable)
		}
	}
	if pk.table.Load() == nil {
		t.Fatal("the table went away")
	}
}

// fakeClock is a clock tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func cachedP256Key(t *testing.T) *publicKey {
	t.Helper()
	f := newP256Fixture(t)
	pk, err := decodeP256(compressPoint(mustBytes(f.priv.PublicKey.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	return pk
}

func TestP256TablesBoundedInCount(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1700000000, 0)}
	c := newTableCache(3, 1000, clock.now)
	keys := make([]*publicKey, 5)
	for i := range keys {
		keys[i] = cachedP256Key(t)
		c.build(keys[i])
	}
	if c.len() != 3 {
		t.Fatalf("%d tables, want 3", c.len())
	}
	with := 0
	for _, pk := range keys {
		if pk.table.Load() != nil {
			with++
			if _, ok := c.holders[pk]; !ok {
				t.Fatal("a key holds a table the cache does not count")
			}
		}
	}
	if with != 3 {
		t.Fatalf("%d keys hold a table, want 3 (evicted keys must let theirs go)", with)
	}
}

func TestP256TableBuildsBoundedPerSecond(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1700000000, 0)}
	c := newTableCache(100, 2, clock.now)
	built := func() int { return c.len() }
	keys := make([]*publicKey, 6)
	for i := range keys {
		keys[i] = cachedP256Key(t)
		c.build(keys[i])
	}
	if built() != 2 {
		t.Fatalf("%d builds at one instant, want the bucket's 2", built())
	}
	clock.t = clock.t.Add(500 * time.Millisecond)
	for _, pk := range keys {
		c.build(pk)
	}
	if built() != 3 {
		t.Fatalf("%d builds after half a second more, want 3", built())
	}
	clock.t = clock.t.Add(time.Hour) // the bucket refills to its size, no more
	for _, pk := range keys {
		c.build(pk)
	}
	if built() != 5 {
		t.Fatalf("%d builds after an hour, want 5", built())
	}
}

func TestP256TableDroppedWithItsKey(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1700000000, 0)}
	c := newTableCache(10, 10, clock.now)
	pk := cachedP256Key(t)
	c.build(pk)
	if pk.table.Load() == nil {
		t.Fatal("no table")
	}
	c.drop(pk)
	if pk.table.Load() != nil || c.len() != 0 {
		t.Fatal("the table outlived its key")
	}
	c.build(pk)
	if pk.table.Load() != nil {
		t.Fatal("a table was built for a key the key cache has let go")
	}
}

// TestP256TableMemoryBound: the tables the cache may hold fit the byte bound docs/limits.md states.
func TestP256TableMemoryBound(t *testing.T) {
	if maxTables < 1 || maxTables*p256verify.Bytes > maxTableBytes {
		t.Fatalf("%d tables of %d bytes exceed %d", maxTables, p256verify.Bytes, maxTableBytes)
	}
}

// FuzzVerifyAPIKeyWithTable checks, at the stamp level, that a registered key's table path
// gives the standard path's answer for any body and any signature bytes, and that the table is
// in use while it does.
func FuzzVerifyAPIKeyWithTable(f *testing.F) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	st, err := NewP256Stamper(hex.EncodeToString(mustBytes(priv.Bytes())))
	if err != nil {
		f.Fatal(err)
	}
	pub := hex.EncodeToString(compressPoint(mustBytes(priv.PublicKey.Bytes())))
	body := []byte(`{"organizationId":"fuzz"}`)
	_, h, err := st.Stamp(body)
	if err != nil {
		f.Fatal(err)
	}
	p, err := VerifyAPIKey(h, body)
	if err != nil {
		f.Fatal(err)
	}
	p.Registered()
	if _, err := VerifyAPIKey(h, body); err != nil {
		f.Fatal(err)
	}
	pk := p.key
	sig := mustBytes(hex.DecodeString(p.Signature))
	f.Add(body, sig)
	f.Add([]byte("{}"), sig)
	f.Add(body, []byte{0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01})
	f.Fuzz(func(t *testing.T, body, sig []byte) {
		if pk.table.Load() == nil {
			t.Skip("the key's table was evicted") // another test filled the cache
		}
		header := stampHeader(pub, SchemeP256, hex.EncodeToString(sig))
		_, errTable := VerifyAPIKey(header, body)
		_, errStd := VerifyAPIKeyStandard(header, body)
		if (errTable == nil) != (errStd == nil) {
			t.Fatalf("with the table: %v; standard: %v", errTable, errStd)
		}
		if errTable != nil && errTable.Error() != errStd.Error() {
			t.Fatalf("different refusals: %q and %q", errTable, errStd)
		}
	})
}
