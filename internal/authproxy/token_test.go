package authproxy

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/latchkey/latchkey/internal/costtest"
)

func TestTokenClaims(t *testing.T) {
	payload := base64.RawURLEncoding.EncodeToString(
		[]byte(
			`{"exp":"1","id":"t1","organization_id":"o","verification_type":"OTP_TYPE_EMAIL","contact":"a@example.com","public_key":"02ab"}`,
		),
	)
	c, err := tokenClaims("e30." + payload + ".sig")
	if err != nil || c.ID != "t1" || c.Contact != "a@example.com" || c.PublicKey != "02ab" ||
		c.VerificationType != "OTP_TYPE_EMAIL" {
		t.Fatalf("tokenClaims = %+v, %v", c, err)
	}
	for _, bad := range []string{"", "a.b", "a.!!!.c", "a.e30.c.d", "a." + base64.RawURLEncoding.EncodeToString([]byte(`[1]`)) + ".c",
		"a." + base64.RawURLEncoding.EncodeToString([]byte(`{"id":"x"}`)) + ".c"} {
		if _, err := tokenClaims(bad); err == nil {
			t.Errorf("tokenClaims(%q) accepted", bad)
		}
	}
}

// The proxy reads a verification token before anyone is known: whatever its shape, reading it
// costs no more than its length, and one over MaxTokenBytes costs nothing proportional to it.
func TestTokenClaimsCost(t *testing.T) {
	run := func(in []byte) { _, _ = tokenClaims(unsafe.String(unsafe.SliceData(in), len(in))) }
	enc := base64.RawURLEncoding.EncodeToString
	shapes := []costtest.Shape{
		{Name: "dots", Run: run, Make: func(n int) []byte { return []byte(strings.Repeat(".", n)) }},
		{Name: "many segments", Run: run, Make: func(n int) []byte { return []byte(strings.Repeat("e30.", n/4)) }},
		{Name: "deep payload", Run: run, Make: func(n int) []byte {
			return []byte("e30." + enc([]byte(strings.Repeat("[", n/2)+strings.Repeat("]", n/2))) + ".x")
		}},
		{Name: "payload of many members", Run: run, Make: func(n int) []byte {
			return []byte("e30." + enc([]byte("{"+strings.Repeat(`"id":"abcdef",`, n/14)+`"x":0}`)) + ".x")
		}},
		{Name: "escapes", Run: run, Make: func(n int) []byte {
			return []byte("e30." + enc([]byte(`{"contact":"`+strings.Repeat(`\u00e9`, n/6)+`"}`)) + ".x")
		}},
	}
	costtest.Linear(t, 1<<10, shapes...)
	for i := range shapes {
		shapes[i].Name += " over the limit"
		shapes[i].PerByte = 0.01
	}
	costtest.Linear(t, MaxTokenBytes, shapes...)
	if _, err := tokenClaims(strings.Repeat(".", MaxTokenBytes+1)); err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf("at most %d bytes", MaxTokenBytes)) {
		t.Fatalf("over the limit: %v", err)
	}
}

func FuzzTokenClaims(f *testing.F) {
	f.Add("e30.eyJpZCI6IngiLCJjb250YWN0IjoiYyIsInZlcmlmaWNhdGlvbl90eXBlIjoiT1RQX1RZUEVfRU1BSUwifQ.x")
	f.Add("..")
	f.Add(strings.Repeat(".", 100))
	f.Fuzz(func(t *testing.T, s string) {
		var c *verificationClaims
		var err error
		costtest.Budget(t, []byte(s), 16, 16<<10, func() { c, err = tokenClaims(s) })
		if err == nil && (c.ID == "" || c.Contact == "") {
			t.Fatalf("accepted claims without id or contact: %+v", c)
		}
	})
}
