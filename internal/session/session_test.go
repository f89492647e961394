package session

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/costtest"
)

func signer(k *ecdsa.PrivateKey) func([]byte) ([]byte, error) {
	return func(d []byte) ([]byte, error) {
		r, s, err := ecdsa.Sign(rand.Reader, k, d)
		if err != nil {
			return nil, err
		}
		out := make([]byte, 64)
		r.FillBytes(out[:32])
		s.FillBytes(out[32:])
		return out, nil
	}
}

func TestEncodeParse(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	tok, err := Encode(
		Claims{
			Exp:            now.Add(time.Minute).Unix(),
			PublicKey:      "02ab",
			SessionType:    ReadOnly,
			UserID:         "u",
			OrganizationID: "o",
		},
		signer(k),
	)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(tok, &k.PublicKey, now)
	if err != nil || c.UserID != "u" || c.SessionType != ReadOnly {
		t.Fatalf("Parse = %+v, %v", c, err)
	}
	if _, err := Parse(tok, &k.PublicKey, now.Add(2*time.Minute)); err == nil {
		t.Fatal("expired token accepted")
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if _, err := Parse(tok, &other.PublicKey, now); err == nil {
		t.Fatal("token verified under another key")
	}
	parts := strings.Split(tok, ".")
	if _, err := Parse(parts[0]+"."+parts[1]+"x."+parts[2], &k.PublicKey, now); err == nil {
		t.Fatal("tampered payload accepted")
	}
	if _, err := Encode(Claims{UserID: "a?b", OrganizationID: "o", SessionType: ReadOnly}, signer(k)); err == nil {
		t.Fatal("claims with '?' accepted")
	}
}

func FuzzParse(f *testing.F) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	f.Add("a.b.c")
	f.Add(strings.Repeat(".", 100))
	f.Fuzz(func(t *testing.T, s string) {
		// A header read before anyone is known: a few bytes allocated per byte at most.
		costtest.Budget(t, []byte(s), 8, 16<<10, func() { _, _ = Parse(s, &k.PublicKey, time.Now()) })
	})
}
