package custody

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// One-time-code bundles (docs/wire.md §3.5). init_otp answers with an OTP encryption target
// bundle: the ServerTargetMsgV1 envelope carrying the public half of a P-256 key made for that
// code, signed by the OTP key (Turnkey's TLS fetcher key, the key @turnkey/crypto's
// encryptOtpCodeToBundle verifies). The client HPKE-encrypts {"otp_code","public_key"} to it;
// verify_otp opens that with the sealed private half.

type otpTargetData struct {
	TargetPublic   string `json:"targetPublic"`
	OrganizationID string `json:"organizationId"`
}

// NewOTPTarget creates the one-time P-256 key a code is encrypted to. It returns the signed
// target bundle for the client and the key's private half sealed for b.
func (c *Custodian) NewOTPTarget(b Binding, orgID string) (bundle string, sealed []byte, err error) {
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return "", nil, err
	}
	scalar := k.Bytes()
	defer wipe(scalar)
	if sealed, err = c.kr.Seal(scalar, b); err != nil {
		return "", nil, err
	}
	bundle, err = c.signedEnvelopeWith(
		OTP,
		otpTargetData{TargetPublic: hex.EncodeToString(k.PublicKey().Bytes()), OrganizationID: orgID},
	)
	return bundle, sealed, err
}

func (c *Custodian) signedEnvelopeWith(key ServerKey, payload any) (string, error) {
	data, err := json.Marshal(payload)
	if err != nil {
		return "", err
	}
	sig, err := c.keys.SignSHA256DER(key, data)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(
		envelope{Version: "v1.0.0", Data: hex.EncodeToString(data), DataSignature: hex.EncodeToString(sig),
			EnclaveQuorumPublic: c.keys.PublicKey(key)},
	)
	return string(b), err
}

// ErrBadOTPBundle is returned for an encryptedOtpBundle that is malformed or does not open with
// the code's target key. Its text never includes the bundle.
var ErrBadOTPBundle = errors.New(
	"encryptedOtpBundle does not open with this OTP's target key (encrypt the code to the otpEncryptionTargetBundle of the same init_otp)",
)

type otpPlaintext struct {
	OTPCode   string `json:"otp_code"`
	PublicKey string `json:"public_key"`
}

// OpenOTPBundle opens a client's encryptedOtpBundle ({"encappedPublic","ciphertext"}, hex) with
// the target key sealed for b and returns the code and the client's public key it carries.
func (c *Custodian) OpenOTPBundle(
	encryptedBundle string,
	sealed []byte,
	b Binding,
) (code, publicKey string, err error) {
	var eb struct {
		EncappedPublic string `json:"encappedPublic"`
		Ciphertext     string `json:"ciphertext"`
	}
	if err := json.Unmarshal([]byte(encryptedBundle), &eb); err != nil {
		return "", "", errors.New("encryptedOtpBundle must be the JSON {encappedPublic, ciphertext}")
	}
	enc, err1 := hex.DecodeString(eb.EncappedPublic)
	ct, err2 := hex.DecodeString(eb.Ciphertext)
	if err1 != nil || err2 != nil {
		return "", "", errors.New("encryptedOtpBundle: encappedPublic and ciphertext must be hex")
	}
	if enc, err = P256Uncompressed(enc); err != nil {
		return "", "", fmt.Errorf("encryptedOtpBundle.encappedPublic: %w", err)
	}
	scalar, err := c.kr.Open(sealed, b)
	if err != nil {
		return "", "", err
	}
	defer wipe(scalar)
	priv, err := ecdh.P256().NewPrivateKey(scalar)
	if err != nil {
		return "", "", err
	}
	plain, err := hpkeOpen(priv, enc, ct)
	if err != nil {
		return "", "", ErrBadOTPBundle
	}
	defer wipe(plain)
	var p otpPlaintext
	if err := json.Unmarshal(plain, &p); err != nil || p.OTPCode == "" {
		return "", "", errors.New(`encryptedOtpBundle: the plaintext must be the JSON {"otp_code","public_key"}`)
	}
	return p.OTPCode, p.PublicKey, nil
}

// ---- client side ----

// SealOTPCode does what @turnkey/crypto's encryptOtpCodeToBundle does: it checks the target
// bundle's signer is otpPublicKey (uncompressed hex, plain string compare) and its signature,
// then HPKE-encrypts {"otp_code","public_key"} to targetPublic and returns the
// encryptedOtpBundle JSON.
func SealOTPCode(targetBundle, code, publicKey, otpPublicKey string) (string, error) {
	var env envelope
	if err := json.Unmarshal([]byte(targetBundle), &env); err != nil {
		return "", fmt.Errorf("OTP target bundle is not JSON: %w", err)
	}
	if env.EnclaveQuorumPublic != otpPublicKey {
		return "", fmt.Errorf("expected signer key %s does not match %s", otpPublicKey, env.EnclaveQuorumPublic)
	}
	data, err := verifyEnvelope(env)
	if err != nil {
		return "", err
	}
	var t otpTargetData
	if err := json.Unmarshal(data, &t); err != nil {
		return "", err
	}
	target, err := ParseP256PublicKeyHex(t.TargetPublic)
	if err != nil {
		return "", err
	}
	plain, err := json.Marshal(otpPlaintext{OTPCode: code, PublicKey: publicKey})
	if err != nil {
		return "", err
	}
	enc, ct, err := hpkeSeal(target, plain)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(
		map[string]string{"encappedPublic": hex.EncodeToString(enc), "ciphertext": hex.EncodeToString(ct)},
	)
	return string(b), err
}
