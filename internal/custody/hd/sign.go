package hd

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"

	"filippo.io/edwards25519"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// ErrWrongCurve is returned when a signing primitive does not match the key's curve.
var ErrWrongCurve = errors.New("signing scheme does not match the key's curve")

// ECDSASignature is an ECDSA signature as Turnkey returns it: 32-byte big-endian r and s and
// the recovery id V (0 or 1), the parity of R's y coordinate.
type ECDSASignature struct {
	R, S [32]byte
	V    byte
}

// SignECDSA signs a 32-byte digest with a secp256k1 or P-256 key. The caller decides what the
// digest is (Keccak-256, SHA-256, a sighash, ...); nothing is hashed here.
//
// secp256k1: RFC 6979 deterministic nonce, low-S (s ≤ n/2), V from the signer.
//
// P-256: RFC 6979 deterministic nonce (crypto/ecdsa with a nil random source). S is
// normalised to low-S as well: P-256 verifiers accept either half, and one canonical form keeps
// signatures of both ECDSA curves alike. V is then found by recovering the public key for
// both candidates; R.x ≥ n (probability about 2^-128) is not represented, as for secp256k1.
func (k *Key) SignECDSA(digest []byte) (ECDSASignature, error) {
	var sig ECDSASignature
	if len(digest) != 32 {
		return sig, fmt.Errorf("hd: ECDSA digest must be 32 bytes, got %d", len(digest))
	}
	switch k.curve {
	case CurveSecp256k1:
		return k.signSecp256k1(digest), nil
	case CurveP256:
		return k.signP256(digest)
	}
	return sig, fmt.Errorf("%w: ECDSA needs secp256k1 or P-256, key is %s", ErrWrongCurve, k.curve)
}

func (k *Key) signP256(digest []byte) (ECDSASignature, error) {
	var sig ECDSASignature
	// crypto/ecdsa copies the scalar into values of its own that cannot be wiped (and so does
	// crypto/ecdh in NewKey); D, at least, is cleared.
	priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), k.secret[:])
	if err != nil {
		return sig, err
	}
	defer wipeInt(priv.D)
	der, err := priv.Sign(nil, digest, crypto.SHA256) // nil random: RFC 6979
	if err != nil {
		return sig, err
	}
	var rs struct{ R, S *big.Int }
	if _, err := asn1.Unmarshal(der, &rs); err != nil {
		return sig, err
	}
	halfN := new(big.Int).Rsh(p256Order, 1)
	if rs.S.Cmp(halfN) > 0 {
		rs.S.Sub(p256Order, rs.S)
	}
	rs.R.FillBytes(sig.R[:])
	rs.S.FillBytes(sig.S[:])
	// A valid signature recovers the key under exactly one of the two candidates, so trying
	// v = 0 decides both (one recovery instead of two).
	x, y := recoverP256(sig.R[:], rs.S, digest, 0)
	if x == nil || x.Cmp(new(big.Int).SetBytes(k.pubUnc[1:33])) != 0 ||
		y.Cmp(new(big.Int).SetBytes(k.pubUnc[33:65])) != 0 {
		sig.V = 1
	}
	return sig, nil
}

// signSecp256k1 is ECDSA over secp256k1 with an RFC 6979 nonce and low S, the signature and
// recovery code the dcrd library's SignCompact gives, computed here so that no copy of the key
// is left behind: SignCompact derives the nonce from a heap buffer holding the private key
// (and its HMAC state), which it never clears. Every scalar here is on the stack and zeroed.
func (k *Key) signSecp256k1(digest []byte) ECDSASignature {
	var d, e, nonce, r, s, kinv secp256k1.ModNScalar
	defer d.Zero()
	defer nonce.Zero()
	defer kinv.Zero()
	d.SetBytes(&k.secret)
	e.SetByteSlice(digest)
	for iteration := uint32(0); ; iteration++ {
		rfc6979Nonce(&nonce, &k.secret, digest, iteration)
		var R secp256k1.JacobianPoint
		baseMult(&nonce, &R)
		var rx [32]byte
		odd := affineX(&R, &rx)
		overflow := r.SetBytes(&rx)
		if r.IsZero() {
			continue
		}
		code := byte(overflow<<1) | odd
		inverseBlinded(&kinv, &nonce)
		s.Mul2(&d, &r).Add(&e).Mul(&kinv)
		if s.IsZero() {
			continue
		}
		if s.IsOverHalfOrder() {
			s.Negate()
			code ^= 1
		}
		var sig ECDSASignature
		r.PutBytes(&sig.R)
		s.PutBytes(&sig.S)
		sig.V = code
		return sig
	}
}

// secp256k1P is the field prime, for math/big's inversion.
var secp256k1P, _ = new(big.Int).SetString("fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f", 16)

// affineX writes the affine x coordinate of R (not the point at infinity) to x and returns the
// parity of its affine y. R's Z is inverted by math/big's extended Euclid, about 0.8 µs on the
// project machine against 10-11 µs for the field's Fermat exponentiation that
// JacobianPoint.ToAffine uses (a quarter of a signature's CPU). Euclid's time depends on its
// input, and R comes from the secret nonce, so the input is blinded: Z·β for a fresh random
// nonzero β is inverted, and the result multiplied by β again. The inversion then sees a value
// independent of the nonce. (The base-point multiplication before it, baseMult, runs in
// variable time, as dcrd's did.)
func affineX(R *secp256k1.JacobianPoint, x *[32]byte) byte {
	var beta, zb, zinv, zinv2 secp256k1.FieldVal
	randomField(&beta)
	zb.Mul2(&R.Z, &beta).Normalize()
	var buf [32]byte
	zb.PutBytes(&buf)
	inv := new(big.Int).SetBytes(buf[:])
	if inv.ModInverse(inv, secp256k1P) == nil {
		panic("hd: inverting the Z of a point at infinity")
	}
	inv.FillBytes(buf[:])
	zinv.SetBytes(&buf)
	zinv.Mul(&beta)        // Z⁻¹
	zinv2.SquareVal(&zinv) // Z⁻²
	var ax, ay secp256k1.FieldVal
	ax.Mul2(&R.X, &zinv2).Normalize()           // X/Z²
	ay.Mul2(&R.Y, zinv2.Mul(&zinv)).Normalize() // Y/Z³
	ax.PutBytes(x)
	return byte(ay.IsOddBit())
}

// inverseBlinded sets kinv to k⁻¹ mod n, inverting k·γ for a fresh random nonzero γ and
// multiplying by γ again, so that the variable-time inversion never sees the nonce itself.
func inverseBlinded(kinv, k *secp256k1.ModNScalar) {
	var gamma, kg secp256k1.ModNScalar
	var b [32]byte
	for gamma.IsZero() {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
		gamma.SetBytes(&b)
	}
	kg.Mul2(k, &gamma)
	kinv.InverseValNonConst(&kg).Mul(&gamma)
	kg.Zero()
}

// randomField sets f to a uniformly random nonzero field element.
func randomField(f *secp256k1.FieldVal) {
	var b [32]byte
	for {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
		if f.SetBytes(&b) == 0 && !f.Normalize().IsZero() {
			return
		}
	}
}

// rfc6979Nonce sets nonce to the RFC 6979 HMAC-SHA256 nonce for key and digest (the digest
// taken as is, as the dcrd library does), skipping the first iteration valid candidates; the
// HMAC key and chain values are on the stack and cleared.
func rfc6979Nonce(nonce *secp256k1.ModNScalar, key *[32]byte, digest []byte, iteration uint32) {
	var v, kk [32]byte
	defer clear(v[:])
	defer clear(kk[:])
	for i := range v {
		v[i] = 1
	}
	hmacSHA256(&kk, kk[:], v[:], []byte{0}, key[:], digest)
	hmacSHA256(&v, kk[:], v[:])
	hmacSHA256(&kk, kk[:], v[:], []byte{1}, key[:], digest)
	hmacSHA256(&v, kk[:], v[:])
	var generated uint32
	for {
		hmacSHA256(&v, kk[:], v[:])
		overflow := nonce.SetBytes(&v)
		if overflow == 0 && !nonce.IsZero() {
			generated++
			if generated > iteration {
				return
			}
		}
		hmacSHA256(&kk, kk[:], v[:], []byte{0})
		hmacSHA256(&v, kk[:], v[:])
	}
}

// recoverP256 returns Q = r⁻¹(sR − eG) for the R with x = r and y parity v, or nil.
func recoverP256(r []byte, s *big.Int, digest []byte, v byte) (*big.Int, *big.Int) {
	curve := elliptic.P256()
	rx, ry := elliptic.UnmarshalCompressed(curve, append([]byte{0x02 | v}, r...))
	if rx == nil {
		return nil, nil
	}
	n := p256Order
	rInv := new(big.Int).ModInverse(new(big.Int).SetBytes(r), n)
	if rInv == nil {
		return nil, nil
	}
	e := new(big.Int).SetBytes(digest)
	u1 := new(big.Int).Neg(e)
	u1.Mul(u1, rInv).Mod(u1, n)
	u2 := new(big.Int).Mul(s, rInv)
	u2.Mod(u2, n)
	var b1, b2 [32]byte
	x1, y1 := curve.ScalarBaseMult(u1.FillBytes(b1[:]))
	x2, y2 := curve.ScalarMult(rx, ry, u2.FillBytes(b2[:]))
	return curve.Add(x1, y1, x2, y2)
}

// SignEd25519 signs message with an Ed25519 key (RFC 8032; the message is hashed by EdDSA
// itself) and returns the 64-byte signature.
func (k *Key) SignEd25519(message []byte) ([]byte, error) {
	if k.curve != CurveEd25519 {
		return nil, fmt.Errorf("%w: Ed25519 needs an Ed25519 key, key is %s", ErrWrongCurve, k.curve)
	}
	return ed25519Sign(&k.secret, k.pub, message), nil
}

// Ed25519 (RFC 8032 §5.1) is computed here over filippo.io/edwards25519 rather than by
// crypto/ed25519, whose private key values (seed, scalar, nonce prefix) are heap copies made on
// every call and never cleared. Here the expanded key lives on the stack and is zeroed; the
// signatures are crypto/ed25519's, byte for byte (tests check).

// ed25519Expand sets s to the clamped secret scalar and prefix to the nonce prefix of seed.
func ed25519Expand(seed *[32]byte, s *edwards25519.Scalar, prefix *[32]byte) {
	h := sha512.Sum512(seed[:])
	defer clear(h[:])
	if _, err := s.SetBytesWithClamping(h[:32]); err != nil {
		panic("hd: clamping an Ed25519 scalar: " + err.Error())
	}
	copy(prefix[:], h[32:])
}

func wipeScalar(s *edwards25519.Scalar) { s.Set(edwards25519.NewScalar()) }

// ed25519PublicKey returns the public key of an Ed25519 seed.
func ed25519PublicKey(seed *[32]byte) []byte {
	var s edwards25519.Scalar
	var prefix [32]byte
	defer wipeScalar(&s)
	defer clear(prefix[:])
	ed25519Expand(seed, &s, &prefix)
	return new(edwards25519.Point).ScalarBaseMult(&s).Bytes()
}

// ed25519Sign returns R ‖ S for message under seed, whose public key is pub.
func ed25519Sign(seed *[32]byte, pub, message []byte) []byte {
	var s, r, c edwards25519.Scalar
	var prefix [32]byte
	var digest [64]byte
	defer wipeScalar(&s)
	defer wipeScalar(&r)
	defer clear(prefix[:])
	defer clear(digest[:])
	ed25519Expand(seed, &s, &prefix)
	h := sha512.New()
	defer scrub(h)
	// r = SHA-512(prefix ‖ M) mod L; R = rB.
	h.Write(prefix[:])
	h.Write(message)
	h.Sum(digest[:0])
	if _, err := r.SetUniformBytes(digest[:]); err != nil {
		panic("hd: reducing an Ed25519 nonce: " + err.Error())
	}
	sig := make([]byte, 64)
	copy(sig, new(edwards25519.Point).ScalarBaseMult(&r).Bytes())
	// S = (SHA-512(R ‖ A ‖ M) mod L)·s + r.
	scrub(h)
	h.Write(sig[:32])
	h.Write(pub)
	h.Write(message)
	h.Sum(digest[:0])
	if _, err := c.SetUniformBytes(digest[:]); err != nil {
		panic("hd: reducing an Ed25519 challenge: " + err.Error())
	}
	copy(sig[32:], new(edwards25519.Scalar).MultiplyAdd(&c, &s, &r).Bytes())
	return sig
}

// SignSchnorr makes a BIP-340 Schnorr signature (64 bytes) over a 32-byte digest with a
// secp256k1 key, using fresh auxiliary randomness as BIP-340 recommends. With taprootTweak the
// key is first tweaked as a BIP-86 key-path spend (BIP-341 t = hash_TapTweak(x(P)), no script
// tree), which is how Turnkey signs for P2TR addresses; without it the key signs as is (Spark).
func (k *Key) SignSchnorr(digest []byte, taprootTweak bool) ([]byte, error) {
	var aux [32]byte
	if _, err := rand.Read(aux[:]); err != nil {
		return nil, err
	}
	return k.signSchnorr(digest, taprootTweak, aux)
}

func (k *Key) signSchnorr(digest []byte, taprootTweak bool, aux [32]byte) ([]byte, error) {
	if k.curve != CurveSecp256k1 {
		return nil, fmt.Errorf("%w: Schnorr needs a secp256k1 key, key is %s", ErrWrongCurve, k.curve)
	}
	if len(digest) != 32 {
		return nil, fmt.Errorf("hd: Schnorr digest must be 32 bytes, got %d", len(digest))
	}
	var d secp256k1.ModNScalar
	d.SetBytes(&k.secret)
	defer d.Zero()
	if taprootTweak {
		k.ensurePub()
		if err := tapTweak(&d, k.pub); err != nil {
			return nil, err
		}
	}
	priv := secp256k1.NewPrivateKey(&d)
	defer priv.Zero()
	sig, err := schnorr.Sign(priv, digest, schnorr.CustomNonce(aux))
	if err != nil {
		return nil, err
	}
	return sig.Serialize(), nil
}

// tapTweak turns d into the BIP-86 output key's secret: d' = (±d) + hash_TapTweak(x(P)) where
// ±d is negated when P = dG has an odd y.
func tapTweak(d *secp256k1.ModNScalar, compressedPub []byte) error {
	if compressedPub[0] == 0x03 {
		d.Negate()
	}
	t := taggedHash("TapTweak", compressedPub[1:33])
	var ts secp256k1.ModNScalar
	if overflow := ts.SetBytes(&t); overflow != 0 {
		return errors.New("hd: taproot tweak out of range")
	}
	d.Add(&ts)
	if d.IsZero() {
		return errors.New("hd: taproot tweak gives a zero key")
	}
	return nil
}

// taggedHash is BIP-340's hash_tag(x) = SHA256(SHA256(tag) ‖ SHA256(tag) ‖ x).
func taggedHash(tag string, msg ...[]byte) [32]byte {
	th := sha256.Sum256([]byte(tag))
	h := sha256.New()
	h.Write(th[:])
	h.Write(th[:])
	for _, m := range msg {
		h.Write(m)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}
