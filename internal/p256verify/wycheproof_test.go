package p256verify

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"os"
	"testing"
)

type wycheproofFile struct {
	NumberOfTests int `json:"numberOfTests"`
	TestGroups    []struct {
		PublicKey struct {
			Uncompressed string `json:"uncompressed"`
		} `json:"publicKey"`
		SHA   string `json:"sha"`
		Tests []struct {
			TcID    int      `json:"tcId"`
			Comment string   `json:"comment"`
			Msg     string   `json:"msg"`
			Sig     string   `json:"sig"`
			Result  string   `json:"result"`
			Flags   []string `json:"flags"`
		} `json:"tests"`
	} `json:"testGroups"`
}

func loadWycheproof(t *testing.T, name string) wycheproofFile {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var f wycheproofFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWycheproofDER runs every DER vector (valid, invalid and "acceptable") through the table
// verifier and crypto/ecdsa: a vector marked valid must verify, one marked invalid must not,
// and on every vector the two verifiers must agree.
func TestWycheproofDER(t *testing.T) {
	f := loadWycheproof(t, "ecdsa_secp256r1_sha256_test.json")
	ran := 0
	for _, g := range f.TestGroups {
		if g.SHA != "SHA-256" {
			t.Fatalf("group hashes with %s", g.SHA)
		}
		raw := mustHex(t, g.PublicKey.Uncompressed)
		tbl, err := NewTableFromBytes(raw)
		if err != nil {
			t.Fatalf("key %s: %v", g.PublicKey.Uncompressed, err)
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range g.Tests {
			ran++
			h := sha256.Sum256(mustHex(t, tc.Msg))
			sig := mustHex(t, tc.Sig)
			got := tbl.VerifyASN1(h[:], sig)
			std := ecdsa.VerifyASN1(pub, h[:], sig)
			if got != std {
				t.Errorf("tcId %d (%s): table says %v, crypto/ecdsa says %v", tc.TcID, tc.Comment, got, std)
			}
			switch tc.Result {
			case "valid":
				if !got {
					t.Errorf("tcId %d (%s): valid signature rejected", tc.TcID, tc.Comment)
				}
			case "invalid":
				if got {
					t.Errorf("tcId %d (%s): invalid signature accepted", tc.TcID, tc.Comment)
				}
			}
		}
	}
	if ran != f.NumberOfTests {
		t.Fatalf("ran %d vectors, the file has %d", ran, f.NumberOfTests)
	}
}

// TestWycheproofP1363 runs every r‖s vector through Verify. A 64-byte signature is split into
// r and s as crypto/ecdsa's callers would; any other length is invalid.
func TestWycheproofP1363(t *testing.T) {
	f := loadWycheproof(t, "ecdsa_secp256r1_sha256_p1363_test.json")
	ran := 0
	for _, g := range f.TestGroups {
		raw := mustHex(t, g.PublicKey.Uncompressed)
		tbl, err := NewTableFromBytes(raw)
		if err != nil {
			t.Fatalf("key %s: %v", g.PublicKey.Uncompressed, err)
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range g.Tests {
			ran++
			h := sha256.Sum256(mustHex(t, tc.Msg))
			sig := mustHex(t, tc.Sig)
			got, std := false, false
			if len(sig) == 64 {
				r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
				got = tbl.Verify(h[:], r, s)
				std = ecdsa.Verify(pub, h[:], r, s)
			}
			if got != std {
				t.Errorf("tcId %d (%s): table says %v, crypto/ecdsa says %v", tc.TcID, tc.Comment, got, std)
			}
			if (tc.Result == "valid") != got && tc.Result != "acceptable" {
				t.Errorf("tcId %d (%s): result %s, table says %v", tc.TcID, tc.Comment, tc.Result, got)
			}
		}
	}
	if ran != f.NumberOfTests {
		t.Fatalf("ran %d vectors, the file has %d", ran, f.NumberOfTests)
	}
}
