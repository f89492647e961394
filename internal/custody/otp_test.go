package custody

import (
	"errors"
	"strings"
	"testing"
)

func TestOTPTargetRoundTrip(t *testing.T) {
	c := testCustodian(t)
	b := Binding{OrgID: "org", Kind: "otp", ID: "otp-1"}
	bundle, sealed, err := c.NewOTPTarget(b, "org")
	if err != nil {
		t.Fatal(err)
	}
	otpPub := c.Keys().PublicKey(OTP)
	if _, err := SealOTPCode(bundle, "ABC123", "02aa", c.Keys().PublicKey(Signer)); err == nil ||
		!strings.Contains(err.Error(), "does not match") {
		t.Fatalf("bundle accepted under the signer key: %v", err)
	}
	enc, err := SealOTPCode(bundle, "ABC123", "02"+strings.Repeat("ab", 32), otpPub)
	if err != nil {
		t.Fatal(err)
	}
	code, pub, err := c.OpenOTPBundle(enc, sealed, b)
	if err != nil || code != "ABC123" || pub != "02"+strings.Repeat("ab", 32) {
		t.Fatalf("OpenOTPBundle = %q, %q, %v", code, pub, err)
	}
	// Another OTP's target key does not open it; nor does the binding of another record.
	_, sealed2, _ := c.NewOTPTarget(Binding{OrgID: "org", Kind: "otp", ID: "otp-2"}, "org")
	if _, _, err := c.OpenOTPBundle(enc, sealed2, Binding{OrgID: "org", Kind: "otp", ID: "otp-2"}); !errors.Is(
		err,
		ErrBadOTPBundle,
	) {
		t.Fatalf("opened with another target: %v", err)
	}
	if _, _, err := c.OpenOTPBundle(enc, sealed, Binding{OrgID: "org", Kind: "otp", ID: "otp-2"}); err == nil {
		t.Fatal("opened under another binding")
	}
	// A tampered signature is refused by the client.
	if _, err := SealOTPCode(strings.Replace(bundle, `"dataSignature":"30`, `"dataSignature":"31`, 1), "x", "", otpPub); err == nil {
		t.Fatal("tampered bundle accepted")
	}
	for _, bad := range []string{"", "{}", `{"encappedPublic":"zz","ciphertext":"00"}`} {
		if _, _, err := c.OpenOTPBundle(bad, sealed, b); err == nil {
			t.Fatalf("OpenOTPBundle(%q) succeeded", bad)
		}
	}
}
