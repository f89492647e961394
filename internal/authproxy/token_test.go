package authproxy

import (
	"encoding/base64"
	"testing"
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
	for _, bad := range []string{"", "a.b", "a.!!!.c", "a." + base64.RawURLEncoding.EncodeToString([]byte(`[1]`)) + ".c",
		"a." + base64.RawURLEncoding.EncodeToString([]byte(`{"id":"x"}`)) + ".c"} {
		if _, err := tokenClaims(bad); err == nil {
			t.Errorf("tokenClaims(%q) accepted", bad)
		}
	}
}

func FuzzTokenClaims(f *testing.F) {
	f.Add("e30.eyJpZCI6IngiLCJjb250YWN0IjoiYyIsInZlcmlmaWNhdGlvbl90eXBlIjoiT1RQX1RZUEVfRU1BSUwifQ.x")
	f.Add("..")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := tokenClaims(s)
		if err == nil && (c.ID == "" || c.Contact == "") {
			t.Fatalf("accepted claims without id or contact: %+v", c)
		}
	})
}
