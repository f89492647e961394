package stamp

import (
	"encoding/json"
	"testing"

	"github.com/latchkey/latchkey/internal/stamp/stamptest"
)

// A body of typical size (~330 bytes) for a signing activity.
var benchBody = []byte(
	`{"type":"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2","timestampMs":"1700000000000","organizationId":"11111111-2222-3333-4444-555555555555","parameters":{"signWith":"0x2Bd8C1B7dF3e4A5b6C7d8E9f0A1B2c3D4e5F6a7B","payload":"0x68656c6c6f","encoding":"PAYLOAD_ENCODING_HEXADECIMAL","hashFunction":"HASH_FUNCTION_KECCAK256"}}`,
)

// BenchmarkVerifyAPIKey verifies one registered key's stamps repeatedly, as a caller's requests
// are: for P-256 that is the per-key table's path ("p256"); "p256-standard" is crypto/ecdsa's, the floor
// latchkey bench divides by.
func BenchmarkVerifyAPIKey(b *testing.B) {
	b.Run("p256-standard", func(b *testing.B) {
		priv, _, _ := GenerateKey(CurveP256)
		st, _ := NewP256Stamper(priv)
		_, h, _ := st.Stamp(benchBody)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := VerifyAPIKeyStandard(h, benchBody); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, tc := range []struct {
		name  string
		curve Curve
		mk    func(string) (Stamper, error)
	}{
		{"p256", CurveP256, NewP256Stamper},
		{"secp256k1", CurveSecp256k1, NewSecp256k1Stamper},
		{"ed25519", CurveEd25519, NewEd25519Stamper},
		{"eip191", CurveSecp256k1, NewEIP191Stamper},
	} {
		b.Run(tc.name, func(b *testing.B) {
			priv, _, _ := GenerateKey(tc.curve)
			st, _ := tc.mk(priv)
			_, h, _ := st.Stamp(benchBody)
			if p, err := VerifyAPIKey(h, benchBody); err == nil {
				p.Registered() // as the API layer reports a key it resolved
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := VerifyAPIKey(h, benchBody); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerifyWebAuthn(b *testing.B) {
	auth, _ := stamptest.New(testRPID, testOrigin)
	_, h, _ := auth.Stamp(benchBody)
	cose := auth.COSEPublicKey()
	b.ReportAllocs()
	for b.Loop() {
		a, err := ParseWebAuthn(h)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := a.Verify(benchBody, cose, testPolicy); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseAttestation(b *testing.B) {
	auth, _ := stamptest.New(testRPID, testOrigin)
	reg, _ := auth.Attest([]byte("challenge"), "packed")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseAttestation(Attestation(reg), "Y2hhbGxlbmdl", testPolicy); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseAPIKeyStamp compares reading an X-Stamp's JSON directly with json.Unmarshal.
func BenchmarkParseAPIKeyStamp(b *testing.B) {
	priv, _, _ := GenerateKey(CurveP256)
	st, _ := NewP256Stamper(priv)
	_, h, _ := st.Stamp(benchBody)
	raw, _ := decodeBase64(h)
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseAPIKeyStamp(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var s apiKeyStampJSON
			if err := json.Unmarshal(raw, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
