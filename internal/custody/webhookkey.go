package custody

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Webhook deliveries are signed the way Turnkey signs them: Ed25519, with a key id the receiver
// looks up in a JWKS. The Ed25519 key is derived from the sealed P-256 webhook server key (HMAC-
// SHA256 of its scalar under a fixed label), so every process of a deployment has the same key
// without a new stored secret, and it changes only with the webhook server key.
func (s *ServerKeys) webhookEd25519() ed25519.PrivateKey {
	mac := hmac.New(sha256.New, s.key(Webhook).D.FillBytes(make([]byte, 32)))
	mac.Write([]byte("latchkey webhook ed25519 v1"))
	return ed25519.NewKeyFromSeed(mac.Sum(nil))
}

// WebhookEd25519 returns the webhook signing key's public half and its key id (the first 16 hex
// characters of SHA-256 of the public key).
func (s *ServerKeys) WebhookEd25519() (ed25519.PublicKey, string) {
	pub := s.webhookEd25519().Public().(ed25519.PublicKey)
	sum := sha256.Sum256(pub)
	return pub, hex.EncodeToString(sum[:8])
}

// SignWebhook signs msg with the webhook Ed25519 key.
func (s *ServerKeys) SignWebhook(msg []byte) []byte {
	return ed25519.Sign(s.webhookEd25519(), msg)
}
