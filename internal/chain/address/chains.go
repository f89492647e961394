package address

import (
	"crypto/sha256"
	"crypto/sha3"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"

	"github.com/btcsuite/btcd/btcutil/bech32"
	"github.com/mr-tron/base58"
	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/ripemd160" //nolint:staticcheck // RIPEMD-160 is part of HASH160; there is no other Go implementation
	legacysha3 "golang.org/x/crypto/sha3"
)

func keccak256(b []byte) []byte {
	h := legacysha3.NewLegacyKeccak256()
	h.Write(b)
	return h.Sum(nil)
}

// hash160 is RIPEMD160(SHA256(b)).
func hash160(b []byte) []byte {
	s := sha256.Sum256(b)
	r := ripemd160.New()
	r.Write(s[:])
	return r.Sum(nil)
}

func doubleSHA256(b []byte) []byte {
	s := sha256.Sum256(b)
	s = sha256.Sum256(s[:])
	return s[:]
}

var rippleAlphabet = base58.NewAlphabet("rpshnaf39wBUDNEGHJKLM4PQRST7VWXYZ2bcdeCg65jkm8oFqi1tuvAxyz")

// base58Check is Base58Check (Bitcoin alphabet) of version ‖ payload.
func base58Check(version byte, payload []byte) string {
	return base58.Encode(withChecksum(version, payload))
}

func withChecksum(version byte, payload []byte) []byte {
	b := append([]byte{version}, payload...)
	return append(b, doubleSHA256(b)[:4]...)
}

// ethereum is EIP-55: 0x + last 20 bytes of Keccak-256(X‖Y), mixed-case checksummed.
func ethereum(k key) (string, error) {
	addr := hex.EncodeToString(keccak256(k.uncompressed[1:])[12:])
	sum := keccak256([]byte(addr))
	out := []byte(addr)
	for i, c := range out {
		if c >= 'a' && c <= 'f' && sum[i/2]>>(4*(1-uint(i%2)))&0x0f >= 8 {
			out[i] = c - 'a' + 'A'
		}
	}
	return "0x" + string(out), nil
}

func solana(k key) (string, error) { return base58.Encode(k.compressed), nil }

// cosmos is bech32(hrp, RIPEMD160(SHA256(compressed key))), the Cosmos SDK secp256k1 rule.
func cosmos(hrp string) func(key) (string, error) {
	return func(k key) (string, error) { return bech32.EncodeFromBase256(hrp, hash160(k.compressed)) }
}

// tron is Base58Check(0x41 ‖ last 20 bytes of Keccak-256(X‖Y)).
func tron(k key) (string, error) {
	return base58Check(0x41, keccak256(k.uncompressed[1:])[12:]), nil
}

// sui is 0x + BLAKE2b-256(flag 0x00 (Ed25519) ‖ public key).
func sui(k key) (string, error) {
	h := blake2b.Sum256(append([]byte{0x00}, k.compressed...))
	return "0x" + hex.EncodeToString(h[:]), nil
}

// aptos is 0x + SHA3-256(public key ‖ scheme 0x00 (single Ed25519)), the account's
// authentication key and initial address, in the long (64 hex digit) form.
func aptos(k key) (string, error) {
	h := sha3.Sum256(append(append([]byte(nil), k.compressed...), 0x00))
	return "0x" + hex.EncodeToString(h[:]), nil
}

// stellar is the StrKey account id "G…": base32(version 6<<3 ‖ key ‖ CRC16-XModem LE).
func stellar(k key) (string, error) {
	b := append([]byte{6 << 3}, k.compressed...)
	b = binary.LittleEndian.AppendUint16(b, crc16XModem(b))
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b), nil
}

func crc16XModem(b []byte) uint16 {
	var crc uint16
	for _, v := range b {
		crc ^= uint16(v) << 8
		for i := 0; i < 8; i++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// xrp is the classic "r…" address: Base58Check in the Ripple alphabet of 0x00 ‖ HASH160(key).
func xrp(k key) (string, error) {
	return base58.EncodeAlphabet(withChecksum(0x00, hash160(k.compressed)), rippleAlphabet), nil
}

// spark is bech32m(hrp, SparkAddress protobuf {1: identity public key}).
func spark(hrp string) func(key) (string, error) {
	return func(k key) (string, error) {
		payload := append([]byte{0x0a, byte(len(k.compressed))}, k.compressed...)
		data, err := bech32.ConvertBits(payload, 8, 5, true)
		if err != nil {
			return "", err
		}
		return bech32.EncodeM(hrp, data)
	}
}

type bitcoinNetwork struct {
	name       string
	pubKeyHash byte
	scriptHash byte
	hrp        string
}

var bitcoinNetworks = []bitcoinNetwork{
	{"MAINNET", 0x00, 0x05, "bc"},
	{"TESTNET", 0x6f, 0xc4, "tb"},
	{"SIGNET", 0x6f, 0xc4, "tb"},
	{"REGTEST", 0x6f, 0xc4, "bcrt"},
}

func p2pkh(n bitcoinNetwork, k key) (string, error) {
	return base58Check(n.pubKeyHash, hash160(k.compressed)), nil
}

// p2sh wraps P2WPKH: redeem script 0 <HASH160(pk)> (see the package doc).
func p2sh(n bitcoinNetwork, k key) (string, error) {
	redeem := append([]byte{0x00, 0x14}, hash160(k.compressed)...)
	return base58Check(n.scriptHash, hash160(redeem)), nil
}

func p2wpkh(n bitcoinNetwork, k key) (string, error) {
	return segwit(n.hrp, 0, hash160(k.compressed))
}

// p2wsh commits to the witness script <pk> OP_CHECKSIG (see the package doc).
func p2wsh(n bitcoinNetwork, k key) (string, error) {
	script := append(append([]byte{0x21}, k.compressed...), 0xac)
	h := sha256.Sum256(script)
	return segwit(n.hrp, 0, h[:])
}

func p2tr(n bitcoinNetwork, k key) (string, error) {
	out, err := taprootOutputKey(k.compressed)
	if err != nil {
		return "", err
	}
	return segwit(n.hrp, 1, out)
}

// segwit encodes a witness program: bech32 for version 0, bech32m for version 1 (BIP-350).
func segwit(hrp string, version byte, program []byte) (string, error) {
	data, err := bech32.ConvertBits(program, 8, 5, true)
	if err != nil {
		return "", err
	}
	data = append([]byte{version}, data...)
	if version == 0 {
		return bech32.Encode(hrp, data)
	}
	return bech32.EncodeM(hrp, data)
}
