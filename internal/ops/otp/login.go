package otp

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/ops/login"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/wire"
)

// ClientSignatureScheme is the only clientSignature scheme.
const ClientSignatureScheme = "CLIENT_SIGNATURE_SCHEME_API_P256"

func (d Deps) otpLogin(x *activity.Exec, intent any) (any, error) {
	var tokenStr, publicKey, expiration, profile string
	var invalidate bool
	var sig *wire.ClientSignature
	switch in := intent.(type) {
	case *wire.OtpLoginIntentV2:
		tokenStr, publicKey, expiration, profile = in.VerificationToken, in.PublicKey, in.ExpirationSeconds, in.SessionProfileId
		invalidate = in.InvalidateExisting != nil && *in.InvalidateExisting
		sig = &in.ClientSignature
	case *wire.OtpLoginIntent:
		tokenStr, publicKey, expiration, profile = in.VerificationToken, in.PublicKey, in.ExpirationSeconds, in.SessionProfileId
		invalidate = in.InvalidateExisting != nil && *in.InvalidateExisting
		sig = in.ClientSignature
	}
	secs, err := login.Seconds(
		"parameters.expirationSeconds",
		expiration,
		login.DefaultSessionSeconds,
		login.MaxSessionSeconds,
	)
	if err != nil {
		return nil, err
	}
	sessionKey, err := custody.ParseP256PublicKeyHex(publicKey)
	if err != nil {
		return nil, apierr.Invalid("parameters.publicKey", "must be a P-256 public key in hex: %v", err)
	}

	claims, err := ParseToken(tokenStr, x.Services.ServerKeys.VerifyKeys(custody.OTP), x.Now)
	if err != nil {
		return nil, apierr.Invalid("parameters.verificationToken", "%v", err)
	}
	// The token's record: it must exist (tokens are used once) and be the token's issuer's —
	// this organization or its parent (a parent's tokens serve its sub-organizations).
	t, err := records.Load[Token](x.Ctx, x.Tx, KindVerificationToken, "", claims.ID, "verification token")
	if err != nil || t.OrgID != claims.OrganizationID {
		return nil, apierr.Invalid("parameters.verificationToken", "unknown verification token")
	}
	if t.Used {
		return nil, apierr.Invalid("parameters.verificationToken", "this verification token was already used")
	}
	if t.OrgID != x.OrgID && t.OrgID != x.Caller.Target.ParentID {
		return nil, apierr.Invalid(
			"parameters.verificationToken",
			"the verification token was issued for another organization",
		)
	}

	// The client signature proves the holder of the token's key asked for this login.
	if claims.PublicKey != "" || sig != nil {
		if sig == nil {
			return nil, apierr.Required("parameters.clientSignature")
		}
		if err := checkClientSignature(sig, tokenStr, claims, sessionKey); err != nil {
			return nil, err
		}
	}

	u, err := contactUser(x, claims.VerificationType, claims.Contact)
	if err != nil {
		return nil, err
	}
	t.Used = true
	if err := records.Save(x.Ctx, x.Tx, KindVerificationToken, t.ID, t.OrgID, x.Now, x.Now, t); err != nil {
		return nil, err
	}
	tok, err := login.Issue(
		x,
		d.Env(x),
		u,
		login.Spec{PublicKey: publicKey, Seconds: secs, CredentialType: directory.CredentialOTPAuth,
			Name: "OTP Login", InvalidateExisting: invalidate, SessionProfileID: profile},
	)
	if err != nil {
		return nil, err
	}
	return wire.OtpLoginResult{Session: tok}, nil
}

// tokenUsage is the v1TokenUsage message a login's client signature covers.
type tokenUsage struct {
	Login *struct {
		PublicKey string `json:"publicKey"`
	} `json:"login"`
	TokenID string `json:"tokenId"`
	Type    string `json:"type"`
}

// checkClientSignature checks a login's client signature: over the TokenUsage message, or —
// the auth proxy's `client_signature` (the spec's hex signature over the verification token) —
// over the token itself. The second form binds the token but not the session key; the token
// is used once either way.
func checkClientSignature(sig *wire.ClientSignature, token string, claims *TokenClaims, sessionKey []byte) error {
	const f = "parameters.clientSignature"
	if string(sig.Scheme) != ClientSignatureScheme {
		return apierr.Invalid(f+".scheme", "must be %s", ClientSignatureScheme)
	}
	signer, err := custody.ParseP256PublicKeyHex(sig.PublicKey)
	if err != nil {
		return apierr.Invalid(f+".publicKey", "must be a P-256 public key in hex: %v", err)
	}
	bound, err := custody.ParseP256PublicKeyHex(claims.PublicKey)
	if err != nil || !bytes.Equal(signer, bound) {
		return apierr.Invalid(f+".publicKey", "must be the public key the verification token is bound to")
	}
	if sig.Message == token {
		if !verifyP256(signer, []byte(token), sig.Signature) {
			return apierr.Invalid(
				f+".signature",
				"does not verify: expected a P-256 signature (r‖s hex, or DER) over SHA-256 of the verification token by its key",
			)
		}
		return nil
	}
	var m tokenUsage
	if err := json.Unmarshal([]byte(sig.Message), &m); err != nil {
		return apierr.Invalid(
			f+".message",
			`must be the token usage JSON {"login":{"publicKey":..},"tokenId":..,"type":"USAGE_TYPE_LOGIN"}`,
		)
	}
	if m.Type != "USAGE_TYPE_LOGIN" || m.Login == nil {
		return apierr.Invalid(f+".message", "must be a USAGE_TYPE_LOGIN token usage, got type %q", m.Type)
	}
	if m.TokenID != claims.ID {
		return apierr.Invalid(f+".message", "tokenId is not the verification token's id")
	}
	if lk, err := custody.ParseP256PublicKeyHex(m.Login.PublicKey); err != nil || !bytes.Equal(lk, sessionKey) {
		return apierr.Invalid(f+".message", "login.publicKey must be the publicKey of this login")
	}
	if !verifyP256(signer, []byte(sig.Message), sig.Signature) {
		return apierr.Invalid(
			f+".signature",
			"does not verify: expected a P-256 signature (r‖s hex, or DER) over SHA-256 of the message by publicKey",
		)
	}
	return nil
}

// verifyP256 checks a P-256 signature over SHA-256(msg), given as hex of r‖s or of DER.
func verifyP256(uncompressed, msg []byte, sigHex string) bool {
	pk, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), uncompressed)
	if err != nil {
		return false
	}
	sig, err := hex.DecodeString(strings.TrimPrefix(sigHex, "0x"))
	if err != nil {
		return false
	}
	d := sha256.Sum256(msg)
	if len(sig) == 64 {
		return ecdsa.Verify(pk, d[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
	}
	return ecdsa.VerifyASN1(pk, d[:], sig)
}

// contactUser is the one user of the activity's organization with the verified contact.
func contactUser(x *activity.Exec, otpType, contact string) (*directory.User, error) {
	var us []*directory.User
	var err error
	what := "e-mail address"
	switch otpType {
	case TypeEmail:
		us, err = directory.UsersByEmail(x.Ctx, x.Tx, x.OrgID, contact)
	case TypeSMS:
		what = "phone number"
		us, err = records.LookupAll[directory.User](
			x.Ctx,
			x.Tx,
			directory.KeyUserPhone,
			contact,
			directory.KindUser,
			x.OrgID,
		)
	default:
		return nil, apierr.Invalid("parameters.verificationToken", "unknown verification type %q", otpType)
	}
	if err != nil {
		return nil, err
	}
	switch len(us) {
	case 0:
		return nil, apierr.NotFoundf("no user of organization %s has the verified %s", x.OrgID, what)
	case 1:
		return us[0], nil
	}
	return nil, apierr.New(
		apierr.FailedPrecondition,
		"INVALID_REQUEST",
		"%d users of organization %s have the verified %s; cannot tell which one logs in",
		len(us),
		x.OrgID,
		fmt.Sprint(what),
	)
}
