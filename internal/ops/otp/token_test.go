package otp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/latchkey/latchkey/internal/costtest"
)

func tokenSigner(k *ecdsa.PrivateKey) func([]byte) ([]byte, error) {
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

func str(in []byte) string { return unsafe.String(unsafe.SliceData(in), len(in)) }

// A verification token arrives in an X-Stamp-Attested header (before anyone is known) and in
// request parameters: whatever its shape, reading it costs no more than its length, and one over
// MaxTokenBytes costs nothing proportional to it.
func TestParseTokenCost(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keys := []*ecdsa.PublicKey{&k.PublicKey}
	now := time.Now()
	run := func(in []byte) { _, _ = ParseToken(str(in), keys, now) }
	shapes := []costtest.Shape{
		{Name: "dots", Run: run, Make: func(n int) []byte { return []byte(strings.Repeat(".", n)) }},
		{Name: "many segments", Run: run, Make: func(n int) []byte {
			return []byte(tokenHeader + strings.Repeat(".a", n/2))
		}},
		{Name: "deep header", Run: run, Make: func(n int) []byte {
			h := b64(strings.Repeat("[", n/2) + strings.Repeat("]", n/2))
			return []byte(h + ".e30." + strings.Repeat("A", 86))
		}},
		{Name: "header of many members", Run: run, Make: func(n int) []byte {
			h := b64("{" + strings.Repeat(`"alg":"ES256",`, n/14) + `"typ":"JWT"}`)
			return []byte(h + ".e30." + strings.Repeat("A", 86))
		}},
		{Name: "long payload", Run: run, Make: func(n int) []byte {
			return []byte(tokenHeader + "." + strings.Repeat("e", n) + "." + strings.Repeat("A", 86))
		}},
	}
	costtest.Linear(t, 1<<10, shapes...)
	for i := range shapes {
		shapes[i].Name += " over the limit"
		shapes[i].PerByte = 0.01
	}
	costtest.Linear(t, MaxTokenBytes, shapes...)
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// A token over MaxTokenBytes is refused naming the limit; one as long as a long real contact
// makes it is read.
func TestParseTokenLimit(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keys := []*ecdsa.PublicKey{&k.PublicKey}
	now := time.Now()
	_, err := ParseToken(strings.Repeat(".", MaxTokenBytes+1), keys, now)
	if !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), fmt.Sprintf("%d bytes", MaxTokenBytes)) {
		t.Fatalf("over the limit: %v", err)
	}
	// The longest e-mail address (254 bytes), every character non-ASCII and so escaped.
	contact := strings.Repeat("é", 120) + "@example.com"
	tok, err := EncodeToken(TokenClaims{Exp: fmt.Sprint(now.Add(time.Minute).UnixMilli()), ID: "t",
		OrganizationID: "o", VerificationType: TypeEmail, Contact: contact, PublicKey: strings.Repeat("04", 65)},
		tokenSigner(k))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseToken(tok, keys, now)
	if err != nil || c.Contact != contact {
		t.Fatalf("a %d-byte token: %+v, %v", len(tok), c, err)
	}
	for _, bad := range []string{tok + ".", tok + ".x", strings.Replace(tok, ".", "..", 1)} {
		if _, err := ParseToken(bad, keys, now); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%d segments accepted: %v", strings.Count(bad, ".")+1, err)
		}
	}
}

func FuzzParseToken(f *testing.F) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keys := []*ecdsa.PublicKey{&k.PublicKey}
	now := time.Now()
	tok, _ := EncodeToken(TokenClaims{Exp: fmt.Sprint(now.Add(time.Minute).UnixMilli()), ID: "t",
		OrganizationID: "o", VerificationType: TypeEmail, Contact: "a@b.c"}, tokenSigner(k))
	f.Add(tok)
	f.Add("..")
	f.Add(strings.Repeat(".", 100))
	f.Fuzz(func(t *testing.T, s string) {
		var c *TokenClaims
		var err error
		costtest.Budget(t, []byte(s), 16, 16<<10, func() { c, err = ParseToken(s, keys, now) })
		if err == nil && (c.ID == "" || c.Contact == "") {
			t.Fatalf("accepted claims without id or contact: %+v", c)
		}
	})
}
