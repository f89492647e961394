package wallets

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/crypto/sha3"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/chain/address"
	"github.com/latchkey/latchkey/internal/chain/ethereum"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/tracing"
	"github.com/latchkey/latchkey/internal/wire"
)

func (d Deps) registerSigning(reg *activity.Registry) {
	rawIntents := []any{(*wire.SignRawPayloadIntentV2)(nil), (*wire.SignRawPayloadIntent)(nil)}
	reg.Submit(
		activity.Operation{
			Path:      "sign_raw_payload",
			Access:    activity.AccessRoot,
			Prepare:   activity.OnAny(d.prepareSignRaw, rawIntents...),
			Execute:   activity.OnAny(executeSigned, rawIntents...),
			PolicyEnv: activity.EnvAny(signedEnv, rawIntents...),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:      "sign_raw_payloads",
			Access:    activity.AccessRoot,
			Prepare:   activity.OnAny(d.prepareSignRaw, (*wire.SignRawPayloadsIntent)(nil)),
			Execute:   activity.OnAny(executeSigned, (*wire.SignRawPayloadsIntent)(nil)),
			PolicyEnv: activity.EnvAny(signedEnv, (*wire.SignRawPayloadsIntent)(nil)),
		},
	)
}

// SigningKey is a resolved signWith: a wallet account or a private key, with what signing needs.
type SigningKey struct {
	Kind          string // KindAccount or KindPrivateKey
	ID            string
	WalletID      string // accounts only
	Curve         string
	AddressFormat string // the account's format, or the private key's format matched by address ("" by id)
	PublicKey     string
	sealed        []byte
	binding       custody.Binding
}

// ResolveSigner finds what signWith names in orgID: a wallet account address, a private key id,
// a private key address, or a public key (of an account or a private key).
func ResolveSigner(ctx context.Context, r store.Reader, orgID, signWith string) (*SigningKey, error) {
	if signWith == "" {
		return nil, apierr.Required("parameters.signWith")
	}
	addr := address.Normalize(signWith)
	if ids, err := lookupIDs(ctx, r, KeyAccountAddress, addr, KindAccount, orgID); err != nil {
		return nil, err
	} else if len(ids) > 0 {
		return accountKey(ctx, r, orgID, ids[0])
	}
	if k, err := load[PrivateKey](ctx, r, KindPrivateKey, orgID, signWith, "private key"); err == nil {
		return privKey(k, ""), nil
	}
	if ids, err := lookupIDs(ctx, r, KeyPrivKeyAddress, addr, KindPrivateKey, orgID); err != nil {
		return nil, err
	} else if len(ids) > 0 {
		k, err := load[PrivateKey](ctx, r, KindPrivateKey, orgID, ids[0], "private key")
		if err != nil {
			return nil, err
		}
		format := ""
		for _, a := range k.Addresses {
			if address.Normalize(a.Address) == addr {
				format = a.Format
			}
		}
		return privKey(k, format), nil
	}
	pub := strings.ToLower(strings.TrimPrefix(signWith, "0x"))
	if ids, err := lookupIDs(ctx, r, KeyAccountPubKey, pub, KindAccount, orgID); err != nil {
		return nil, err
	} else if len(ids) > 0 {
		return accountKey(ctx, r, orgID, ids[0])
	}
	if ids, err := lookupIDs(ctx, r, KeyPrivKeyPubKey, pub, KindPrivateKey, orgID); err != nil {
		return nil, err
	} else if len(ids) > 0 {
		k, err := load[PrivateKey](ctx, r, KindPrivateKey, orgID, ids[0], "private key")
		if err != nil {
			return nil, err
		}
		return privKey(k, ""), nil
	}
	return nil, apierr.NotFoundf(
		"parameters.signWith: no wallet account, private key or address %q in this organization",
		signWith,
	)
}

func accountKey(ctx context.Context, r store.Reader, orgID, accountID string) (*SigningKey, error) {
	a, err := load[Account](ctx, r, KindAccount, orgID, accountID, "wallet account")
	if err != nil {
		return nil, err
	}
	return &SigningKey{
		Kind:          KindAccount,
		ID:            a.ID,
		WalletID:      a.WalletID,
		Curve:         a.Curve,
		AddressFormat: a.AddressFormat,
		PublicKey:     a.PublicKey,
		sealed:        a.SealedKey,
		binding:       a.binding(),
	}, nil
}

func privKey(k *PrivateKey, format string) *SigningKey {
	return &SigningKey{Kind: KindPrivateKey, ID: k.ID, Curve: k.Curve, AddressFormat: format, PublicKey: k.PublicKey,
		sealed: k.SealedKey, binding: k.binding()}
}

// stillThere checks, inside the activity's transaction, that the key signed with in Prepare
// has not been deleted since.
func (k *SigningKey) stillThere(x *activity.Exec, same unchanged) error {
	if same != nil && same(x.Ctx) {
		return nil // nothing of its organization was written since it was read
	}
	// Read without a lock: signing activities of one key must not queue behind each other.
	_, err := x.Tx.NoLock().Get(x.Ctx, k.Kind, k.ID)
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFoundf("parameters.signWith: the key was deleted while signing")
	}
	// Any other error is the store's: returned as it is, a lost store is retried by the engine
	// and answered 503 at worst, never a 404 that says the key is gone.
	return err
}

// signKind picks the signature a key makes: Ed25519 for Ed25519 keys; BIP-340 Schnorr for
// Taproot (tweaked) and Spark (plain) addresses; ECDSA otherwise.
func (k *SigningKey) signKind() custody.SignKind {
	switch {
	case k.Curve == "CURVE_ED25519":
		return custody.SignEd25519
	case strings.HasSuffix(k.AddressFormat, "_P2TR"):
		return custody.SignSchnorrTaproot
	case strings.HasPrefix(k.AddressFormat, "ADDRESS_FORMAT_SPARK_"):
		return custody.SignSchnorr
	}
	return custody.SignECDSA
}

// digest turns a payload into what the key signs, per encoding and hash function, and returns
// the payload's policy view for the encodings that have one. An EIP-712 payload is parsed and
// hashed once; its view is built only if a policy reads eth (chainView).
func (k *SigningKey) digest(field, payload, encoding, hashFunction string) ([]byte, *chainView, error) {
	var msg []byte
	switch encoding {
	case "PAYLOAD_ENCODING_HEXADECIMAL":
		b, err := hex.DecodeString(strings.TrimPrefix(strings.TrimPrefix(payload, "0x"), "0X"))
		if err != nil {
			return nil, nil, apierr.Invalid(field, "not hexadecimal")
		}
		msg = b
	case "PAYLOAD_ENCODING_TEXT_UTF8":
		msg = []byte(payload)
	case "PAYLOAD_ENCODING_EIP712", "PAYLOAD_ENCODING_EIP7702_AUTHORIZATION":
		if k.signKind() != custody.SignECDSA || k.Curve != "CURVE_SECP256K1" {
			return nil, nil, apierr.Invalid("parameters.encoding", "%s needs a secp256k1 (Ethereum) key", encoding)
		}
		if hashFunction != "HASH_FUNCTION_NO_OP" && hashFunction != "HASH_FUNCTION_NOT_APPLICABLE" {
			return nil, nil, apierr.Invalid(
				"parameters.hashFunction",
				"%s is hashed by its encoding; send HASH_FUNCTION_NO_OP",
				encoding,
			)
		}
		if encoding == "PAYLOAD_ENCODING_EIP7702_AUTHORIZATION" {
			d, view, err := ethereum.HashAuthorization([]byte(payload))
			if err != nil {
				return nil, nil, apierr.Invalid(field, "%v", err)
			}
			return d[:], &chainView{"eth", "eip_7702_authorization", func() map[string]any { return view }}, nil
		}
		td, err := ethereum.ParseTypedData([]byte(payload))
		if err != nil {
			return nil, nil, apierr.Invalid(field, "%v", err)
		}
		return td.Digest[:], &chainView{"eth", "eip_712", td.View}, nil
	default:
		return nil, nil, apierr.Invalid("parameters.encoding", "unknown payload encoding %q", encoding)
	}
	d, err := k.hashMessage(field, msg, hashFunction)
	return d, nil, err
}

// hashMessage applies the hash function to a hexadecimal or text payload's bytes (Ed25519
// signs the message itself).
func (k *SigningKey) hashMessage(field string, msg []byte, hashFunction string) ([]byte, error) {
	if k.signKind() == custody.SignEd25519 {
		if hashFunction != "HASH_FUNCTION_NOT_APPLICABLE" {
			return nil, apierr.Invalid(
				"parameters.hashFunction",
				"invalid hash function %s: Ed25519 signing requires HASH_FUNCTION_NOT_APPLICABLE",
				hashFunction,
			)
		}
		return msg, nil
	}
	switch hashFunction {
	case "HASH_FUNCTION_NO_OP":
		if len(msg) != 32 {
			return nil, apierr.Invalid(
				field,
				"with HASH_FUNCTION_NO_OP the payload must be a 32-byte digest, got %d bytes",
				len(msg),
			)
		}
		return msg, nil
	case "HASH_FUNCTION_SHA256":
		d := sha256.Sum256(msg)
		return d[:], nil
	case "HASH_FUNCTION_KECCAK256":
		h := sha3.NewLegacyKeccak256()
		h.Write(msg)
		return h.Sum(nil), nil
	case "HASH_FUNCTION_NOT_APPLICABLE":
		return nil, apierr.Invalid(
			"parameters.hashFunction",
			"invalid hash function: HASH_FUNCTION_NOT_APPLICABLE is for Ed25519 keys; this key signs with %s",
			k.Curve,
		)
	}
	return nil, apierr.Invalid("parameters.hashFunction", "unknown hash function %q", hashFunction)
}

// Sign signs a digest (or an Ed25519 message) with the key.
func (d Deps) Sign(k *SigningKey, msg []byte) (custody.Signature, error) {
	sig, err := d.Custodian.Sign(k.sealed, k.binding, k.Curve, k.signKind(), msg)
	if err != nil {
		return sig, apierr.Internalf(err, "signing")
	}
	return sig, nil
}

// SignECDSADigest signs a 32-byte digest with ECDSA whatever the key's address format says
// (transactions that define their own signature scheme).
func (d Deps) SignECDSADigest(k *SigningKey, digest []byte) (custody.Signature, error) {
	sig, err := d.Custodian.Sign(k.sealed, k.binding, k.Curve, custody.SignECDSA, digest)
	if err != nil {
		return sig, apierr.Internalf(err, "signing")
	}
	return sig, nil
}

// SignAs signs with an explicit kind.
func (d Deps) SignAs(k *SigningKey, kind custody.SignKind, msg []byte) (custody.Signature, error) {
	sig, err := d.Custodian.Sign(k.sealed, k.binding, k.Curve, kind, msg)
	if err != nil {
		return sig, apierr.Internalf(err, "signing")
	}
	return sig, nil
}

func rawResult(sig custody.Signature) wire.SignRawPayloadResult {
	return wire.SignRawPayloadResult{
		R: hex.EncodeToString(sig.R[:]),
		S: hex.EncodeToString(sig.S[:]),
		V: hex.EncodeToString([]byte{sig.V}),
	}
}

type signed struct {
	key    *SigningKey
	same   unchanged // whether key is certainly still there (nil: read the store)
	result any
	view   *chainView // the parsed payload, for policies (nil: none)
}

func (d Deps) prepareSignRaw(x *activity.Exec, intent any) (any, error) {
	var signWith, encoding, hashFn string
	var payloads []string
	single := false
	switch in := intent.(type) {
	case *wire.SignRawPayloadIntentV2:
		signWith, encoding, hashFn, payloads, single = in.SignWith, string(in.Encoding), string(in.HashFunction), []string{in.Payload}, true
	case *wire.SignRawPayloadIntent:
		signWith, encoding, hashFn, payloads, single = in.PrivateKeyId, string(in.Encoding), string(in.HashFunction), []string{in.Payload}, true
	case *wire.SignRawPayloadsIntent:
		signWith, encoding, hashFn, payloads = in.SignWith, string(in.Encoding), string(in.HashFunction), in.Payloads
	}
	if len(payloads) == 0 {
		return nil, apierr.Invalid("parameters.payloads", "at least one payload is required")
	}
	if err := checkCount("parameters.payloads", len(payloads), MaxPayloadsPerRequest, "payloads"); err != nil {
		return nil, err
	}
	k, same, err := d.resolveSigner(x.Ctx, x.R, x.OrgID, signWith)
	if err != nil {
		return nil, err
	}
	span := startSign(x.Ctx, k, "raw_payload", len(payloads))
	sigs, view, err := d.signPayloads(k, payloads, single, encoding, hashFn)
	endSign(span, err)
	if err != nil {
		return nil, err
	}
	if single {
		return signed{key: k, same: same, result: sigs[0], view: view}, nil
	}
	return signed{key: k, same: same, result: wire.SignRawPayloadsResult{Signatures: sigs}, view: view}, nil
}

// signPayloads digests and signs each payload, returning the signatures and the policy view of
// the first.
func (d Deps) signPayloads(
	k *SigningKey,
	payloads []string,
	single bool,
	encoding, hashFn string,
) ([]wire.SignRawPayloadResult, *chainView, error) {
	sigs := make([]wire.SignRawPayloadResult, 0, len(payloads))
	var first *chainView
	for i, p := range payloads {
		field := "parameters.payload"
		if !single {
			field = fieldIdx("parameters.payloads", i)
		}
		msg, view, err := k.digest(field, p, encoding, hashFn)
		if err != nil {
			return nil, nil, err
		}
		if i == 0 {
			first = view
		}
		sig, err := d.Sign(k, msg)
		if err != nil {
			return nil, nil, err
		}
		sigs = append(sigs, rawResult(sig))
	}
	return sigs, first, nil
}

// startSign opens the "sign" span of what (raw_payload, transaction type) signed n times with
// k: the key's curve and the count, never the key, its id, the payload or the signature.
func startSign(ctx context.Context, k *SigningKey, what string, n int) trace.Span {
	_, span := tracing.Start(ctx, "sign")
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("latchkey.sign.what", what),
			attribute.String("latchkey.sign.curve", k.Curve),
			attribute.Int("latchkey.sign.count", n),
		)
	}
	return span
}

// endSign ends a "sign" span, marking it failed when err (its code only: messages can quote
// the payload).
func endSign(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, apierr.From(err).TurnkeyCode)
	}
	span.End()
}

// executeSigned completes a signing activity whose signature Prepare made.
func executeSigned(x *activity.Exec, _ any) (any, error) {
	s := x.Prepared.(signed)
	if err := s.key.stillThere(x, s.same); err != nil {
		return nil, err
	}
	return s.result, nil
}
