package custody

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
)

// QuorumOS envelopes: what @turnkey/crypto's quorumKeyEncrypt (and so encryptToEnclave and
// encryptOauth2ClientSecret) produces for a P-256 receiver. The borsh-serialized envelope is
// nonce (12 bytes) ‖ the sender's ephemeral uncompressed public key (65 bytes) ‖ u32
// little-endian length ‖ AES-256-GCM ciphertext‖tag. The AES key is the first 32 bytes of
// HMAC-SHA512 keyed by sender ‖ receiver ‖ ECDH x-coordinate over "qos_encryption_hmac_message";
// the additional data is sender ‖ len(sender) ‖ receiver ‖ len(receiver), one length byte each.

var qosHMACMessage = []byte("qos_encryption_hmac_message")

const maxQuorumPlaintext = 64 << 10

// ErrEnvelope is returned for an envelope that does not open; it never says why in detail
// beyond its shape, so it cannot serve as an oracle.
var ErrEnvelope = errors.New("custody: not an envelope encrypted to this server's key")

// openQuorumEnvelope decrypts envelopeHex with the named server key (with either key while a
// rotation of it overlaps: clients encrypt to the one they pinned).
func (s *ServerKeys) openQuorumEnvelope(name ServerKey, envelopeHex string) ([]byte, error) {
	for _, k := range s.decryptKeys(name) {
		if pt, err := openQuorumEnvelopeWith(k, envelopeHex); err == nil {
			return pt, nil
		}
	}
	return nil, ErrEnvelope
}

func openQuorumEnvelopeWith(k *ecdsa.PrivateKey, envelopeHex string) ([]byte, error) {
	env, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(envelopeHex), "0x"))
	if err != nil || len(env) < 12+65+4+16 {
		return nil, ErrEnvelope
	}
	nonce, sender := env[:12], env[12:77]
	n := binary.LittleEndian.Uint32(env[77:81])
	ct := env[81:]
	if int64(n) != int64(len(ct)) || n > maxQuorumPlaintext+16 {
		return nil, ErrEnvelope
	}
	priv, err := k.ECDH()
	if err != nil {
		return nil, ErrEnvelope
	}
	senderKey, err := priv.Curve().NewPublicKey(sender)
	if err != nil {
		return nil, ErrEnvelope
	}
	shared, err := priv.ECDH(senderKey)
	if err != nil {
		return nil, ErrEnvelope
	}
	defer wipe(shared)
	receiver := priv.PublicKey().Bytes()
	pre := append(append(append([]byte{}, sender...), receiver...), shared...)
	defer wipe(pre)
	mac := hmac.New(sha512.New, pre)
	mac.Write(qosHMACMessage)
	key := mac.Sum(nil)[:32]
	defer wipe(key)
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, ErrEnvelope
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, ErrEnvelope
	}
	aad := append(append(append(append([]byte{}, sender...), byte(len(sender))), receiver...), byte(len(receiver)))
	pt, err := gcm.Open(nil, nonce, ct, aad)
	if err != nil {
		return nil, ErrEnvelope
	}
	return pt, nil
}

// SealClientSecret opens an OAuth 2.0 client secret the client encrypted to the ClientSecrets
// server key and seals it for b at once: the plaintext never leaves this call.
func (c *Custodian) SealClientSecret(envelopeHex string, b Binding) ([]byte, error) {
	pt, err := c.keys.openQuorumEnvelope(ClientSecrets, envelopeHex)
	if err != nil {
		return nil, err
	}
	defer wipe(pt)
	if len(pt) == 0 {
		return nil, errors.New("custody: the client secret is empty")
	}
	return c.kr.Seal(pt, b)
}

// WithClientSecret opens a sealed client secret and passes it to use (the OAuth 2.0 token
// request that must send it to the provider); the buffer it was opened into is wiped when use
// returns (the string use receives is a copy Go cannot wipe, so use must not keep it).
func (c *Custodian) WithClientSecret(sealed []byte, b Binding, use func(secret string) error) error {
	pt, err := c.kr.Open(sealed, b)
	if err != nil {
		return err
	}
	defer wipe(pt)
	return use(string(pt))
}
