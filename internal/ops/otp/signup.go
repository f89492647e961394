package otp

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/wire"
)

// CheckSignupToken checks the verificationToken (and clientSignature) of a
// create_sub_organization, the sign-up of a user who proved a contact with a one-time code
// (the auth proxy's signup, core's signUpWithOtp): the token must be valid, issued by the
// organization creating the sub-organization, not yet used, and name a root user's contact;
// a token bound to a key needs a client signature by that key over the USAGE_TYPE_SIGNUP
// token usage (docs/wire.md §4.3) or, the auth proxy's hex client_signature, over the token.
// Sign-up does not use the token up: the login that follows does. It returns the contact the
// token proved (directory.Contact{} without a token): the sub-organization stores that
// contact as proven, and, when the auth proxy signs up, every other contact as unproven.
func CheckSignupToken(
	x *activity.Exec,
	token string,
	sig *wire.ClientSignature,
	users []directory.UserSpec,
) (directory.Contact, error) {
	const tf, sf = "parameters.verificationToken", "parameters.clientSignature"
	if token == "" {
		if sig != nil {
			return directory.Contact{}, apierr.Invalid(
				sf,
				"a client signature needs the verificationToken it is bound to",
			)
		}
		return directory.Contact{}, nil
	}
	claims, t, err := liveToken(x, tf, token)
	if err != nil {
		return directory.Contact{}, err
	}
	if t.OrgID != x.OrgID {
		return directory.Contact{}, apierr.Invalid(tf, "the verification token was issued for another organization")
	}
	proven := directory.Contact{}
	switch claims.VerificationType {
	case TypeEmail:
		proven.Email = claims.Contact
	case TypeSMS:
		proven.Phone = claims.Contact
	}
	if err := checkSignupClaims(claims, token, sig, users); err != nil {
		return directory.Contact{}, err
	}
	return proven, nil
}

// liveToken parses a verification token and loads its record, refusing an unknown or used
// one (field names the parameter in errors).
func liveToken(x *activity.Exec, field, token string) (*TokenClaims, *Token, error) {
	claims, err := ParseToken(token, x.Services.ServerKeys.VerifyKeys(custody.OTP), x.Now)
	if err != nil {
		return nil, nil, apierr.Invalid(field, "%v", err)
	}
	t, err := records.Load[Token](x.Ctx, x.Tx, KindVerificationToken, "", claims.ID, "verification token")
	if err != nil || t.OrgID != claims.OrganizationID {
		return nil, nil, apierr.Invalid(field, "unknown verification token")
	}
	if t.Used {
		return nil, nil, apierr.Invalid(field, "this verification token was already used")
	}
	return claims, t, nil
}

// ProveContact checks that token is a live verification token, issued by x's organization or
// its parent, for exactly the contact (an e-mail address or a phone number, by otpType), and
// uses it up: update_user_email and update_user_phone_number then store the contact as
// proven (directory.User.EmailUnproven).
func ProveContact(x *activity.Exec, field, token, otpType, contact string) error {
	claims, t, err := liveToken(x, field, token)
	if err != nil {
		return err
	}
	parent := ""
	if x.Caller != nil && x.Caller.Target != nil {
		parent = x.Caller.Target.ParentID
	}
	if t.OrgID != x.OrgID && (parent == "" || t.OrgID != parent) {
		return apierr.Invalid(field, "the verification token was issued for another organization")
	}
	if claims.VerificationType != otpType {
		return apierr.Invalid(
			field,
			"the verification token verified a contact of type %s, not %s",
			claims.VerificationType,
			otpType,
		)
	}
	same := claims.Contact == contact
	if otpType == TypeEmail {
		same = strings.EqualFold(claims.Contact, contact)
	}
	if !same {
		return apierr.Invalid(field, "the verification token verified another contact")
	}
	t.Used = true
	return records.Save(x.Ctx, x.Tx, KindVerificationToken, t.ID, t.OrgID, x.Now, x.Now, t)
}

// checkSignupClaims checks that a root user has the token's contact and the client signature.
func checkSignupClaims(claims *TokenClaims, token string, sig *wire.ClientSignature, users []directory.UserSpec) error {
	const sf = "parameters.clientSignature"
	found := false
	for _, u := range users {
		switch claims.VerificationType {
		case TypeEmail:
			found = found || strings.EqualFold(u.Email, claims.Contact)
		case TypeSMS:
			found = found || u.PhoneNumber == claims.Contact
		}
	}
	if !found {
		return apierr.Invalid("parameters.rootUsers", "no root user has the contact the verification token verified")
	}
	if claims.PublicKey == "" && sig == nil {
		return nil
	}
	if sig == nil {
		return apierr.Required(sf)
	}
	if string(sig.Scheme) != ClientSignatureScheme {
		return apierr.Invalid(sf+".scheme", "must be %s", ClientSignatureScheme)
	}
	signer, err := custody.ParseP256PublicKeyHex(sig.PublicKey)
	if err != nil {
		return apierr.Invalid(sf+".publicKey", "must be a P-256 public key in hex: %v", err)
	}
	bound, err := custody.ParseP256PublicKeyHex(claims.PublicKey)
	if err != nil || !bytes.Equal(signer, bound) {
		return apierr.Invalid(sf+".publicKey", "must be the public key the verification token is bound to")
	}
	if sig.Message != token {
		var m struct {
			SignupV2 *struct {
				Email       string `json:"email"`
				PhoneNumber string `json:"phoneNumber"`
			} `json:"signupV2"`
			TokenID string `json:"tokenId"`
			Type    string `json:"type"`
		}
		if err := json.Unmarshal([]byte(sig.Message), &m); err != nil || m.Type != "USAGE_TYPE_SIGNUP" {
			return apierr.Invalid(
				sf+".message",
				`must be the sign-up token usage {"signupV2":{..},"tokenId":..,"type":"USAGE_TYPE_SIGNUP"}`,
			)
		}
		if m.TokenID != claims.ID {
			return apierr.Invalid(sf+".message", "tokenId is not the verification token's id")
		}
		if m.SignupV2 != nil && (m.SignupV2.Email != "" && !strings.EqualFold(m.SignupV2.Email, claims.Contact) ||
			m.SignupV2.PhoneNumber != "" && m.SignupV2.PhoneNumber != claims.Contact) {
			return apierr.Invalid(sf+".message", "signupV2 names another contact than the verification token")
		}
	}
	if !verifyP256(signer, []byte(sig.Message), sig.Signature) {
		return apierr.Invalid(
			sf+".signature",
			"does not verify: expected a P-256 signature (r‖s hex, or DER) over SHA-256 of the message by the token's key",
		)
	}
	return nil
}
