package stamp

// NormalizePublicKey checks that raw is a public key on curve and returns the lowercase hex form
// API keys are registered under (compressed SEC1 for P-256 and secp256k1, 32 bytes for Ed25519),
// the same form VerifyAPIKey reports in APIKeyProof.PublicKey.
func NormalizePublicKey(curve Curve, raw []byte) (string, error) {
	pk, _, err := parsePublicKey(curve, raw)
	if err != nil {
		return "", err
	}
	return pk.hex, nil
}
