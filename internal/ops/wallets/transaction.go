package wallets

import (
	"encoding/hex"
	"math/big"
	"strings"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/chain/bitcoin"
	"github.com/latchkey/latchkey/internal/chain/ethereum"
	"github.com/latchkey/latchkey/internal/chain/solana"
	"github.com/latchkey/latchkey/internal/chain/tempo"
	"github.com/latchkey/latchkey/internal/chain/tron"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/wire"
)

// TransactionSigner signs one transaction type's unsigned bytes with a resolved key and returns
// the signed bytes and the transaction's policy view (built only if a policy reads it). A type
// without one answers "not supported".
type TransactionSigner func(d Deps, k *SigningKey, unsigned []byte) ([]byte, *chainView, error)

var transactionSigners = map[string]TransactionSigner{
	"TRANSACTION_TYPE_ETHEREUM": signEthereum,
	"TRANSACTION_TYPE_SOLANA":   signSolana,
	"TRANSACTION_TYPE_BITCOIN":  signBitcoin,
	"TRANSACTION_TYPE_TRON":     signTron,
	"TRANSACTION_TYPE_TEMPO":    signTempo,
}

// recoverable adapts the key to the chains' secp256k1 signer callback.
func (d Deps) recoverable(k *SigningKey) func(digest [32]byte) (r, s [32]byte, v byte, err error) {
	return func(digest [32]byte) (r, s [32]byte, v byte, err error) {
		sig, err := d.SignAs(k, custody.SignECDSA, digest[:])
		return sig.R, sig.S, sig.V, err
	}
}

func needSecp256k1(k *SigningKey, chain string) error {
	if k.Curve != "CURVE_SECP256K1" {
		return apierr.Invalid(
			"parameters.signWith",
			"a %s transaction is signed by a secp256k1 key; this key is %s",
			chain,
			k.Curve,
		)
	}
	return nil
}

func signEthereum(d Deps, k *SigningKey, unsigned []byte) ([]byte, *chainView, error) {
	if err := needSecp256k1(k, "Ethereum"); err != nil {
		return nil, nil, err
	}
	tx, err := ethereum.ParseUnsigned(unsigned)
	if err != nil {
		return nil, nil, err
	}
	out, err := tx.Sign(d.recoverable(k))
	from := signerAddress(k)
	return out, &chainView{"eth", "tx", func() map[string]any { return tx.PolicyView(from) }}, err
}

// signerAddress is the key's Ethereum address, the `from` of eth.tx and tempo.tx.
func signerAddress(k *SigningKey) string {
	pub, _ := hex.DecodeString(k.PublicKey)
	a, _ := ethereum.Address(pub)
	return strings.ToLower(a)
}

func signTron(d Deps, k *SigningKey, unsigned []byte) ([]byte, *chainView, error) {
	if err := needSecp256k1(k, "Tron"); err != nil {
		return nil, nil, err
	}
	tx, err := tron.ParseRaw(unsigned)
	if err != nil {
		return nil, nil, err
	}
	out, err := tx.Sign(d.recoverable(k))
	return out, &chainView{"tron", "tx", tx.PolicyView}, err
}

func signTempo(d Deps, k *SigningKey, unsigned []byte) ([]byte, *chainView, error) {
	if err := needSecp256k1(k, "Tempo"); err != nil {
		return nil, nil, err
	}
	tx, err := tempo.ParseUnsigned(unsigned)
	if err != nil {
		return nil, nil, err
	}
	out, err := tx.Sign(d.recoverable(k))
	from := signerAddress(k)
	return out, &chainView{"tempo", "tx", func() map[string]any { return tx.PolicyView(from) }}, err
}

func (d Deps) registerTransactions(reg *activity.Registry) {
	reg.Submit(
		activity.Operation{
			Path:   "sign_transaction",
			Access: activity.AccessRoot,
			Prepare: activity.OnAny(
				d.prepareSignTransaction,
				(*wire.SignTransactionIntentV2)(nil),
				(*wire.SignTransactionIntent)(nil),
			),
			Execute: activity.OnAny(
				executeSigned,
				(*wire.SignTransactionIntentV2)(nil),
				(*wire.SignTransactionIntent)(nil),
			),
			PolicyEnv: activity.EnvAny(
				signedEnv,
				(*wire.SignTransactionIntentV2)(nil),
				(*wire.SignTransactionIntent)(nil),
			),
		},
	)
}

func (d Deps) prepareSignTransaction(x *activity.Exec, intent any) (any, error) {
	var signWith, unsigned, txType string
	switch in := intent.(type) {
	case *wire.SignTransactionIntentV2:
		signWith, unsigned, txType = in.SignWith, in.UnsignedTransaction, string(in.Type)
	case *wire.SignTransactionIntent:
		signWith, unsigned, txType = in.PrivateKeyId, in.UnsignedTransaction, string(in.Type)
	}
	signer := transactionSigners[txType]
	if signer == nil {
		return nil, apierr.New(
			apierr.Unimplemented,
			"UNSUPPORTED_TRANSACTION_TYPE",
			"parameters.type: transaction type %s is not supported by Latchkey yet",
			txType,
		)
	}
	raw, err := hex.DecodeString(strings.TrimPrefix(strings.TrimPrefix(unsigned, "0x"), "0X"))
	if err != nil || len(raw) == 0 {
		return nil, apierr.Invalid("parameters.unsignedTransaction", "must be the hex of the unsigned transaction")
	}
	k, same, err := d.resolveSigner(x.Ctx, x.R, x.OrgID, signWith)
	if err != nil {
		return nil, err
	}
	span := startSign(x.Ctx, k, txType, 1)
	out, view, err := signer(d, k, raw)
	endSign(span, err)
	if err != nil {
		var ae *apierr.Error
		if ok := asAPIErr(err, &ae); ok {
			return nil, ae
		}
		return nil, apierr.Invalid("parameters.unsignedTransaction", "%v", err)
	}
	return signed{key: k, same: same, result: wire.SignTransactionResult{SignedTransaction: hex.EncodeToString(out)},
		view: view}, nil
}

// SignEthereum signs an unsigned Ethereum transaction with the key signWith names in x's
// organization and returns the signed transaction (eth_send_transaction).
func (d Deps) SignEthereum(x *activity.Exec, signWith string, unsigned []byte) ([]byte, error) {
	k, err := ResolveSigner(x.Ctx, x.Tx, x.OrgID, signWith)
	if err != nil {
		return nil, err
	}
	span := startSign(x.Ctx, k, "TRANSACTION_TYPE_ETHEREUM", 1)
	out, _, err := signEthereum(d, k, unsigned)
	endSign(span, err)
	return out, err
}

// SignEthereumDigest signs a 32-byte digest with the secp256k1 key signWith names in x's
// organization (eth_send_transaction's batch execution and EIP-7702 authorization) and returns
// r, s and the recovery id v (0 or 1).
func (d Deps) SignEthereumDigest(
	x *activity.Exec,
	signWith string,
	digest [32]byte,
) (r, s [32]byte, v byte, err error) {
	k, err := ResolveSigner(x.Ctx, x.Tx, x.OrgID, signWith)
	if err != nil {
		return r, s, v, err
	}
	if err := needSecp256k1(k, "Ethereum"); err != nil {
		return r, s, v, err
	}
	span := startSign(x.Ctx, k, "TRANSACTION_TYPE_ETHEREUM", 1)
	r, s, v, err = d.recoverable(k)(digest)
	endSign(span, err)
	return r, s, v, err
}

// SignSolana signs a Solana transaction (wire bytes) with the key signWith names in x's
// organization, in that key's signer slot, and returns the transaction with the signature.
func (d Deps) SignSolana(x *activity.Exec, signWith string, unsigned []byte) ([]byte, error) {
	k, err := ResolveSigner(x.Ctx, x.Tx, x.OrgID, signWith)
	if err != nil {
		return nil, err
	}
	out, _, err := signSolana(d, k, unsigned)
	return out, err
}

func signSolana(d Deps, k *SigningKey, unsigned []byte) ([]byte, *chainView, error) {
	if k.Curve != "CURVE_ED25519" {
		return nil, nil, apierr.Invalid(
			"parameters.signWith",
			"a Solana transaction is signed by an Ed25519 key; this key is %s",
			k.Curve,
		)
	}
	tx, err := solana.ParseTransaction(unsigned)
	if err != nil {
		return nil, nil, err
	}
	if err := solana.CheckNoLookupProgramIDs(tx); err != nil {
		return nil, nil, err
	}
	pub, _ := hex.DecodeString(k.PublicKey)
	slot, err := tx.SignerIndex(pub)
	if err != nil {
		return nil, nil, apierr.Invalid("parameters.signWith", "%v", err)
	}
	sig, err := d.SignAs(k, custody.SignEd25519, tx.Message())
	if err != nil {
		return nil, nil, err
	}
	out, err := tx.WithSignature(slot, sig.Bytes())
	return out, &chainView{"solana", "tx", tx.PolicyView}, err
}

// bitcoinNetwork is the network a key's address format names (mainnet for keys without one).
func bitcoinNetwork(format string) string {
	for _, n := range []string{"TESTNET", "SIGNET", "REGTEST"} {
		if strings.Contains(format, "_"+n+"_") {
			return strings.ToLower(n)
		}
	}
	return "mainnet"
}

func signBitcoin(d Deps, k *SigningKey, unsigned []byte) ([]byte, *chainView, error) {
	if k.Curve != "CURVE_SECP256K1" {
		return nil, nil, apierr.Invalid(
			"parameters.signWith",
			"a Bitcoin transaction is signed by a secp256k1 key; this key is %s",
			k.Curve,
		)
	}
	p, err := bitcoin.ParsePSBT(unsigned)
	if err != nil {
		return nil, nil, err
	}
	pub, _ := hex.DecodeString(k.PublicKey)
	ecdsaSign := func(digest [32]byte) ([]byte, error) {
		sig, err := d.SignAs(k, custody.SignECDSA, digest[:])
		if err != nil {
			return nil, err
		}
		return derSignature(sig), nil
	}
	schnorrSign := func(digest [32]byte) ([64]byte, error) {
		var out [64]byte
		sig, err := d.SignAs(k, custody.SignSchnorrTaproot, digest[:])
		if err != nil {
			return out, err
		}
		copy(out[:], sig.Bytes())
		return out, nil
	}
	net := bitcoinNetwork(k.AddressFormat)
	out, _, err := p.Sign(pub, net, ecdsaSign, schnorrSign)
	return out, &chainView{"bitcoin", "tx", func() map[string]any { return p.PolicyView(net) }}, err
}

// derSignature encodes r, s as ASN.1 DER.
func derSignature(sig custody.Signature) []byte {
	enc := func(b []byte) []byte {
		v := new(big.Int).SetBytes(b).Bytes()
		if len(v) == 0 {
			v = []byte{0}
		}
		if v[0]&0x80 != 0 {
			v = append([]byte{0}, v...)
		}
		return append([]byte{0x02, byte(len(v))}, v...)
	}
	r, s := enc(sig.R[:]), enc(sig.S[:])
	return append([]byte{0x30, byte(len(r) + len(s))}, append(r, s...)...)
}
