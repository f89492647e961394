package session

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/latchkey/latchkey/internal/costtest"
)

func str(in []byte) string { return unsafe.String(unsafe.SliceData(in), len(in)) }

// An X-Session header is parsed before anyone is known: whatever its shape and size, parsing it
// costs no more than its length, and one over MaxTokenBytes costs nothing proportional to it.
func TestParseCost(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	run := func(in []byte) { _, _ = Parse(str(in), &k.PublicKey, now) }
	shapes := []costtest.Shape{
		{Name: "dots", Make: func(n int) []byte { return []byte(strings.Repeat(".", n)) }, Run: run},
		{Name: "many segments", Make: func(n int) []byte {
			return []byte(header + strings.Repeat(".a", n/2))
		}, Run: run},
		{Name: "long payload", Make: func(n int) []byte {
			return []byte(header + "." + strings.Repeat("e", n) + "." + strings.Repeat("A", 86))
		}, Run: run},
		{Name: "long signature", Make: func(n int) []byte {
			return []byte(header + ".e30." + strings.Repeat("A", n))
		}, Run: run},
	}
	costtest.Linear(t, 900, shapes...) // 900 B and 3.6 KB: under the limit

	for i := range shapes {
		shapes[i].Name += " over the limit"
		shapes[i].PerByte = 0.01
	}
	costtest.Linear(t, MaxTokenBytes, shapes...)
}

// A token over MaxTokenBytes is refused by its length, naming the limit; one at the limit is
// read as any other.
func TestParseLimit(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	_, err := Parse(strings.Repeat("a", MaxTokenBytes+1), &k.PublicKey, now)
	if !errors.Is(err, ErrInvalid) ||
		!strings.Contains(err.Error(), fmt.Sprintf("longer than %d bytes", MaxTokenBytes)) {
		t.Fatalf("over the limit: %v", err)
	}
	tok, err := Encode(Claims{Exp: now.Add(time.Minute).Unix(), PublicKey: strings.Repeat("04", 65),
		SessionType: ReadOnly, UserID: strings.Repeat("u", 1000), OrganizationID: strings.Repeat("o", 1000)},
		signer(k))
	if err != nil || len(tok) > MaxTokenBytes {
		t.Fatalf("%d bytes: %v", len(tok), err)
	}
	if _, err := Parse(tok, &k.PublicKey, now); err != nil {
		t.Fatalf("a %d-byte token: %v", len(tok), err)
	}
	// Three segments, no more: a dot in the signature or the payload is refused.
	for _, bad := range []string{tok + ".", tok[:len(tok)-1] + ".", header + ".a.b." + tok[len(tok)-86:]} {
		if _, err := Parse(bad, &k.PublicKey, now); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: %v", bad[len(bad)-10:], err)
		}
	}
}
