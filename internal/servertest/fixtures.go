package servertest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/latchkey/latchkey/internal/oidc"
)

// WalletAccounts are create_wallet accounts as SDKs send them: Ethereum (secp256k1), Solana
// (ed25519) and Bitcoin Taproot, in that order.
var WalletAccounts = []any{
	map[string]any{
		"curve":         "CURVE_SECP256K1",
		"pathFormat":    "PATH_FORMAT_BIP32",
		"path":          "m/44'/60'/0'/0/0",
		"addressFormat": "ADDRESS_FORMAT_ETHEREUM",
	},
	map[string]any{
		"curve":         "CURVE_ED25519",
		"pathFormat":    "PATH_FORMAT_BIP32",
		"path":          "m/44'/501'/0'/0'",
		"addressFormat": "ADDRESS_FORMAT_SOLANA",
	},
	map[string]any{
		"curve":         "CURVE_SECP256K1",
		"pathFormat":    "PATH_FORMAT_BIP32",
		"path":          "m/86'/0'/0'/0/0",
		"addressFormat": "ADDRESS_FORMAT_BITCOIN_MAINNET_P2TR",
	},
}

// UnsignedEthTx is an unsigned EIP-1559 transaction on Sepolia sending 5 wei to to: 0x02 ‖
// rlp([chainId, nonce, tip, feeCap, gas, to, value, data, accessList]), as viem serializes it
// before signing.
func UnsignedEthTx(to string) string {
	addr := common.HexToAddress(to)
	b, _ := rlp.EncodeToBytes(
		[]any{
			big.NewInt(11155111),
			uint64(1),
			big.NewInt(1),
			big.NewInt(2),
			uint64(21000),
			addr,
			big.NewInt(5),
			[]byte{},
			[]any{},
		},
	)
	return "02" + hex.EncodeToString(b)
}

// EncryptToServer encrypts msg to one of the server's P-256 public keys (uncompressed hex) as
// @turnkey/crypto's quorumKeyEncrypt does (encryptOauth2ClientSecret), written from its
// description: nonce ‖ ephemeral key ‖ length ‖ AES-GCM ciphertext, hex.
func EncryptToServer(t testing.TB, receiverHex, msg string) string {
	t.Helper()
	rb, _ := hex.DecodeString(receiverHex)
	recv, err := ecdh.P256().NewPublicKey(rb)
	if err != nil {
		t.Fatal(err)
	}
	eph, _ := ecdh.P256().GenerateKey(rand.Reader)
	shared, _ := eph.ECDH(recv)
	sender := eph.PublicKey().Bytes()
	mac := hmac.New(sha512.New, append(append(append([]byte{}, sender...), rb...), shared...))
	mac.Write([]byte("qos_encryption_hmac_message"))
	block, _ := aes.NewCipher(mac.Sum(nil)[:32])
	gcm, _ := cipher.NewGCM(block)
	nonce := make([]byte, 12)
	_, _ = rand.Read(nonce)
	aad := append(append(append(append([]byte{}, sender...), 65), rb...), 65)
	ct := gcm.Seal(nil, nonce, []byte(msg), aad)
	out := append(append([]byte{}, nonce...), sender...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(ct)))
	return hex.EncodeToString(append(out, ct...))
}

// OIDCIssuer is a local OIDC issuer (ES256, discovery and JWKS) on loopback whose clock is now;
// trust it with server.Config.OIDCTrustedIssuers = []string{ts.URL}.
func OIDCIssuer(t testing.TB, now func() time.Time) (*oidc.Issuer, *httptest.Server) {
	t.Helper()
	var iss *oidc.Issuer
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { iss.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	var err error
	if iss, err = oidc.NewIssuer(oidc.IssuerConfig{URL: ts.URL, Signer: k, Now: now}); err != nil {
		t.Fatal(err)
	}
	return iss, ts
}
