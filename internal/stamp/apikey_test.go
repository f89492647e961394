package stamp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	secpecdsa "github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
)

type vectors struct {
	P256 struct {
		PrivateKey, PublicKey, Body, Header, Signature string
	} `json:"p256"`
	Ed25519 struct {
		Seed, PublicKey, Body, Signature string
	} `json:"ed25519"`
	WebAuthnChallenges []struct {
		Body, Hex, ClientDataChallenge string
	} `json:"webauthn_challenges"`
}

func loadVectors(t testing.TB) vectors {
	t.Helper()
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// stampHeader builds an X-Stamp value from its three fields.
func stampHeader(pub, scheme, sig string) string {
	b, _ := json.Marshal(map[string]string{"publicKey": pub, "scheme": scheme, "signature": sig})
	return base64.RawURLEncoding.EncodeToString(b)
}

// derEncode encodes (r, s) as DER without normalising s, so tests can build
// high-S signatures.
func derEncode(r, s *big.Int) []byte {
	enc := func(x *big.Int) []byte {
		b := x.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return append([]byte{0x02, byte(len(b))}, b...)
	}
	body := append(enc(r), enc(s)...)
	return append([]byte{0x30, byte(len(body))}, body...)
}

func TestP256VectorVerifies(t *testing.T) {
	v := loadVectors(t)
	p, err := VerifyAPIKey(v.P256.Header, []byte(v.P256.Body))
	if err != nil {
		t.Fatalf("vector does not verify: %v", err)
	}
	want := APIKeyProof{PublicKey: v.P256.PublicKey, Curve: CurveP256, Scheme: SchemeP256, Signature: v.P256.Signature}
	if p.key == nil {
		t.Fatal("the proof does not carry its parsed key")
	}
	if p.key = nil; p != want {
		t.Fatalf("proof = %+v, want %+v", p, want)
	}
	// The vector's s is above n/2: high-S must be accepted.
	_, s, m := parseDER(mustHex(t, v.P256.Signature))
	if m != "" {
		t.Fatal(m)
	}
	half := new(big.Int).Rsh(elliptic.P256().Params().N, 1)
	if new(big.Int).SetBytes(s[:]).Cmp(half) <= 0 {
		t.Fatal("test vector is expected to be high-S")
	}
	// Our stamper derives the same public key from the fixture's private key.
	if pub, err := PublicKeyHex(CurveP256, v.P256.PrivateKey); err != nil || pub != v.P256.PublicKey {
		t.Fatalf("PublicKeyHex = %q, %v", pub, err)
	}
}

func TestP256VectorAnyFlipFails(t *testing.T) {
	v := loadVectors(t)
	body := []byte(v.P256.Body)
	key := mustHex(t, v.P256.PublicKey)
	sig := mustHex(t, v.P256.Signature)
	for i := range body {
		b := append([]byte(nil), body...)
		b[i] ^= 0x01
		if _, err := VerifyAPIKey(v.P256.Header, b); err == nil {
			t.Fatalf("body byte %d flipped: verified", i)
		}
	}
	for i := range sig {
		s := append([]byte(nil), sig...)
		s[i] ^= 0x01
		h := stampHeader(v.P256.PublicKey, SchemeP256, hex.EncodeToString(s))
		if _, err := VerifyAPIKey(h, body); err == nil {
			t.Fatalf("signature byte %d flipped: verified", i)
		}
	}
	for i := range key {
		k := append([]byte(nil), key...)
		k[i] ^= 0x01
		h := stampHeader(hex.EncodeToString(k), SchemeP256, v.P256.Signature)
		if _, err := VerifyAPIKey(h, body); err == nil {
			t.Fatalf("key byte %d flipped: verified", i)
		}
	}
}

func TestEd25519Vector(t *testing.T) {
	v := loadVectors(t)
	h := stampHeader(v.Ed25519.PublicKey, SchemeEd25519, v.Ed25519.Signature)
	p, err := VerifyAPIKey(h, []byte(v.Ed25519.Body))
	if err != nil {
		t.Fatal(err)
	}
	if p.PublicKey != v.Ed25519.PublicKey || p.Curve != CurveEd25519 {
		t.Fatalf("proof = %+v", p)
	}
	// Ed25519 is deterministic: our stamper must reproduce the vector.
	st, err := NewEd25519Stamper(v.Ed25519.Seed)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := st.Stamp([]byte(v.Ed25519.Body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(got)
	var fields map[string]string
	_ = json.Unmarshal(raw, &fields)
	if fields["signature"] != v.Ed25519.Signature || fields["publicKey"] != v.Ed25519.PublicKey {
		t.Fatalf("stamper produced %s", raw)
	}
	if _, err := VerifyAPIKey(h, []byte(v.Ed25519.Body+" ")); !errors.Is(err, ErrUnverified) {
		t.Fatalf("changed body: err = %v", err)
	}
}

func TestStamperRoundTrips(t *testing.T) {
	body := []byte(
		`{"type":"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2","timestampMs":"1700000000000","organizationId":"o","parameters":{}}`,
	)
	for _, tc := range []struct {
		name   string
		curve  Curve
		scheme string
		mk     func(string) (Stamper, error)
	}{
		{"p256", CurveP256, SchemeP256, NewP256Stamper},
		{"secp256k1", CurveSecp256k1, SchemeSecp256k1, NewSecp256k1Stamper},
		{"ed25519", CurveEd25519, SchemeEd25519, NewEd25519Stamper},
		{"eip191", CurveSecp256k1, SchemeSecp256k1EIP191, NewEIP191Stamper},
	} {
		t.Run(tc.name, func(t *testing.T) {
			priv, pub, err := GenerateKey(tc.curve)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := PublicKeyHex(tc.curve, priv); err != nil || got != pub {
				t.Fatalf("PublicKeyHex = %q, %v; want %q", got, err, pub)
			}
			st, err := tc.mk(priv)
			if err != nil {
				t.Fatal(err)
			}
			if st.(PublicKeyer).PublicKey() != pub {
				t.Fatal("stamper public key differs")
			}
			name, value, err := st.Stamp(body)
			if err != nil || name != HeaderAPIKey {
				t.Fatalf("Stamp: %q %v", name, err)
			}
			p, err := VerifyAPIKey(value, body)
			if err != nil {
				t.Fatal(err)
			}
			if p.PublicKey != pub || p.Curve != tc.curve || p.Scheme != tc.scheme {
				t.Fatalf("proof = %+v", p)
			}
			if _, err := VerifyAPIKey(value, append(body, ' ')); !errors.Is(err, ErrUnverified) {
				t.Fatalf("changed body: %v", err)
			}
		})
	}
}

func TestSecp256k1HighSAccepted(t *testing.T) {
	body := []byte(`{"organizationId":"high-s"}`)
	priv, pub, _ := GenerateKey(CurveSecp256k1)
	k := secp256k1.PrivKeyFromBytes(mustHex(t, priv))
	for _, tc := range []struct {
		scheme string
		digest []byte
	}{
		{SchemeSecp256k1, func() []byte { h := sha256.Sum256(body); return h[:] }()},
		{SchemeSecp256k1EIP191, EIP191Hash(body)},
	} {
		low := secpecdsa.Sign(k, tc.digest)
		r, s := low.R(), low.S()
		rb, sb := r.Bytes(), s.Bytes()
		n := secp256k1.S256().N
		highS := new(big.Int).Sub(n, new(big.Int).SetBytes(sb[:]))
		sig := derEncode(new(big.Int).SetBytes(rb[:]), highS)
		for _, sg := range [][]byte{low.Serialize(), sig} {
			if _, err := VerifyAPIKey(stampHeader(pub, tc.scheme, hex.EncodeToString(sg)), body); err != nil {
				t.Fatalf("%s: %v", tc.scheme, err)
			}
		}
	}
}

func TestEIP191Hash(t *testing.T) {
	// Independent value: keccak256("\x19Ethereum Signed Message:\n5hello"),
	// the well-known hashMessage("hello") of ethers.js and viem.
	got := hex.EncodeToString(EIP191Hash([]byte("hello")))
	if got != "50b2c43fd39106bafbba0da34fc430e1f91e3c96ea2acee2bc34119f92b37750" {
		t.Fatalf("EIP191Hash(hello) = %s", got)
	}
}

func TestHeaderEncodingsAccepted(t *testing.T) {
	v := loadVectors(t)
	body := []byte(v.P256.Body)
	raw, _ := base64.RawURLEncoding.DecodeString(v.P256.Header)
	key := mustHex(t, v.P256.PublicKey)
	x, y := elliptic.UnmarshalCompressed(elliptic.P256(), key)
	uncompressed := hex.EncodeToString(elliptic.Marshal(elliptic.P256(), x, y)) //nolint:staticcheck // test fixture
	for name, h := range map[string]string{
		"padded":        base64.URLEncoding.EncodeToString(raw),
		"std":           base64.StdEncoding.EncodeToString(raw),
		"whitespace":    " " + v.P256.Header + " ",
		"key order":     base64.RawURLEncoding.EncodeToString([]byte(`{"signature":"` + v.P256.Signature + `","scheme":"SIGNATURE_SCHEME_TK_API_P256","publicKey":"` + v.P256.PublicKey + `"}`)),
		"extra keys":    base64.RawURLEncoding.EncodeToString([]byte(`{"publicKey":"` + v.P256.PublicKey + `","extra":[1,{}],"scheme":"SIGNATURE_SCHEME_TK_API_P256","signature":"` + v.P256.Signature + `"}`)),
		"uppercase hex": stampHeader(strings.ToUpper(v.P256.PublicKey), SchemeP256, strings.ToUpper(v.P256.Signature)),
		"uncompressed":  stampHeader(uncompressed, SchemeP256, v.P256.Signature),
	} {
		p, err := VerifyAPIKey(h, body)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p.PublicKey != v.P256.PublicKey {
			t.Errorf("%s: PublicKey = %s", name, p.PublicKey)
		}
	}
}

func TestVerifyAPIKeyErrors(t *testing.T) {
	v := loadVectors(t)
	body := []byte(v.P256.Body)
	pub, sig := v.P256.PublicKey, v.P256.Signature
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		name, header string
		kind         error
		msg          string
	}{
		{"empty", "", ErrMalformed, "empty"},
		{"bad base64", "eyJ!!!", ErrMalformed, "base64"},
		{"mixed alphabets", "ab-+", ErrMalformed, "base64"},
		{"bad JSON", b64(`{"publicKey":`), ErrMalformed, "JSON"},
		{"JSON array", b64(`[]`), ErrMalformed, "JSON"},
		{"missing publicKey", b64(`{"scheme":"SIGNATURE_SCHEME_TK_API_P256","signature":"30"}`), ErrMalformed, "no publicKey"},
		{"missing signature", b64(`{"publicKey":"02","scheme":"SIGNATURE_SCHEME_TK_API_P256"}`), ErrMalformed, "no signature"},
		{"missing scheme", b64(`{"publicKey":"02","signature":"30"}`), ErrMalformed, "no scheme"},
		{"unknown scheme", stampHeader(pub, "SIGNATURE_SCHEME_TK_API_RSA", sig), ErrMalformed, "not supported"},
		{"bad key hex", stampHeader("02zz", SchemeP256, sig), ErrMalformed, "publicKey is not hex"},
		{"odd key hex", stampHeader(pub[:65], SchemeP256, sig), ErrMalformed, "publicKey is not hex"},
		{"bad signature hex", stampHeader(pub, SchemeP256, "30zz"), ErrMalformed, "signature is not hex"},
		{"short key", stampHeader(pub[:64], SchemeP256, sig), ErrMalformed, "33 bytes"},
		{"key not on curve", stampHeader("02"+strings.Repeat("ff", 32), SchemeP256, sig), ErrMalformed, "not a point"},
		{"ed25519 key length", stampHeader(pub, SchemeEd25519, strings.Repeat("00", 64)), ErrMalformed, "32 bytes"},
		{"ed25519 sig length", stampHeader(v.Ed25519.PublicKey, SchemeEd25519, "00"), ErrMalformed, "64 bytes"},
		{"secp256k1 key length", stampHeader("0211", SchemeSecp256k1, sig), ErrMalformed, "33 bytes"},
		{"non-DER signature", stampHeader(pub, SchemeP256, strings.Repeat("11", 64)), ErrMalformed, "not DER"},
		{"DER trailing bytes", stampHeader(pub, SchemeP256, sig+"00"), ErrMalformed, "not DER"},
		{"DER non-minimal", stampHeader(pub, SchemeP256, "300702020001020101"), ErrMalformed, "non-minimal"},
		{"DER negative", stampHeader(pub, SchemeP256, "3006020181020101"), ErrMalformed, "negative"},
		{"DER zero", stampHeader(pub, SchemeP256, "3006020100020101"), ErrMalformed, "zero"},
		{"secp256k1 non-DER", stampHeader("02"+strings.Repeat("79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798", 1), SchemeSecp256k1, "3000"), ErrMalformed, "not DER"},
		{"wrong key", stampHeader("03"+pub[2:], SchemeP256, sig), ErrUnverified, "does not verify"},
		{"p256 key as secp256k1", stampHeader(pub, SchemeSecp256k1, sig), ErrMalformed, "not a point on the curve"},
		{"too long", strings.Repeat("A", MaxStampHeaderBytes+1), ErrMalformed, "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := VerifyAPIKey(tc.header, body)
			if err == nil {
				t.Fatal("verified")
			}
			if !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v, want kind %v", err, tc.kind)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %q, want it to mention %q", err, tc.msg)
			}
		})
	}
}

func TestKeyCacheBoundedAndOnlyVerifiedKeys(t *testing.T) {
	c := &keyCache{m: map[string]*publicKey{}}
	for i := range keyCacheSize + 100 {
		c.put(string(rune(i))+"k", &publicKey{})
	}
	if len(c.m) != keyCacheSize {
		t.Fatalf("cache holds %d entries, want %d", len(c.m), keyCacheSize)
	}

	// A key whose signature fails is not remembered.
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), nil)
	u, _ := priv.PublicKey.Bytes()
	pubHex := hex.EncodeToString(compressPoint(u))
	h := stampHeader(pubHex, SchemeP256, "3006020101020101")
	if _, err := VerifyAPIKey(h, []byte("x")); err == nil {
		t.Fatal("verified")
	}
	if parsedKeys.get(cacheKey(CurveP256, compressPoint(u))) != nil {
		t.Fatal("unverified key was cached")
	}
	st, _ := NewP256Stamper(hex.EncodeToString(mustBytes(priv.Bytes())))
	_, hv, _ := st.Stamp([]byte("x"))
	if _, err := VerifyAPIKey(hv, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if parsedKeys.get(cacheKey(CurveP256, compressPoint(u))) == nil {
		t.Fatal("verified key was not cached")
	}
	// A cached key still verifies signatures, and still rejects bad ones.
	if _, err := VerifyAPIKey(hv, []byte("y")); !errors.Is(err, ErrUnverified) {
		t.Fatalf("cached key, wrong body: %v", err)
	}
}

func TestStamperBadKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		mk   func(string) (Stamper, error)
		key  string
	}{
		{"p256 short", NewP256Stamper, "0102"},
		{"p256 zero", NewP256Stamper, strings.Repeat("00", 32)},
		{"p256 not hex", NewP256Stamper, strings.Repeat("zz", 32)},
		{"secp256k1 over order", NewSecp256k1Stamper, strings.Repeat("ff", 32)},
		{"ed25519 wrong length", NewEd25519Stamper, strings.Repeat("00", 33)},
		{"ed25519 mismatched public half", NewEd25519Stamper, strings.Repeat("00", 64)},
	} {
		if _, err := tc.mk(tc.key); err == nil {
			t.Errorf("%s: accepted", tc.name)
		} else if strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: error echoes the private key", tc.name)
		}
	}
	v := loadVectors(t)
	st, err := NewEd25519Stamper(v.Ed25519.Seed + v.Ed25519.PublicKey)
	if err != nil || st.(PublicKeyer).PublicKey() != v.Ed25519.PublicKey {
		t.Fatalf("64-byte ed25519 key: %v", err)
	}
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustBytes(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestVerifyAPIKeyConcurrent(t *testing.T) {
	body := []byte(`{"organizationId":"concurrent"}`)
	var headers []string
	for _, c := range []Curve{CurveP256, CurveSecp256k1, CurveEd25519} {
		priv, _, _ := GenerateKey(c)
		var st Stamper
		switch c {
		case CurveP256:
			st, _ = NewP256Stamper(priv)
		case CurveSecp256k1:
			st, _ = NewSecp256k1Stamper(priv)
		default:
			st, _ = NewEd25519Stamper(priv)
		}
		_, h, _ := st.Stamp(body)
		headers = append(headers, h)
	}
	done := make(chan error)
	for g := range 4 {
		go func() {
			var err error
			for i := range 6 {
				if _, e := VerifyAPIKey(headers[(g+i)%len(headers)], body); e != nil {
					err = e
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestNormalizePublicKey(t *testing.T) {
	v := loadVectors(t)
	key := mustHex(t, v.P256.PublicKey)
	x, y := elliptic.UnmarshalCompressed(elliptic.P256(), key)
	for _, raw := range [][]byte{key, elliptic.Marshal(elliptic.P256(), x, y)} { //nolint:staticcheck // test fixture
		if got, err := NormalizePublicKey(CurveP256, raw); err != nil || got != v.P256.PublicKey {
			t.Fatalf("NormalizePublicKey = %q, %v", got, err)
		}
	}
	if _, err := NormalizePublicKey(CurveEd25519, key); !errors.Is(err, ErrMalformed) {
		t.Fatalf("33-byte ed25519 key: %v", err)
	}
}

// TestParseAPIKeyStampDirect checks that stamps as clients make them are read without
// json.Unmarshal, and the rest are not.
func TestParseAPIKeyStampDirect(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"publicKey":"02ab","scheme":"SIGNATURE_SCHEME_TK_API_P256","signature":"3044"}`: true,
		` { "signature" : "3044" ,	"scheme":"s","publicKey":""}` + "\n":                   true,
		`{"publicKey":"a","scheme":"b","signature":"c","publicKey":"d"}`:                  false,
		`{"publicKey":"a","scheme":"b","signature":"c"}x`:                                 false,
		`{"publicKey":"a","scheme":"b"}`:                                                  true, // signature nil, as decoded
		`{"publicKey":"a","scheme":"b","signature":"c","x":1}`:                            false,
		`{"PublicKey":"a","scheme":"b","signature":"c"}`:                                  false,
		`{"publicKey":"a\u0041","scheme":"b","signature":"c"}`:                            false,
	} {
		if _, ok := parsePlainStamp([]byte(raw)); ok != want {
			t.Errorf("parsePlainStamp(%s): %v, want %v", raw, ok, want)
		}
	}
}
