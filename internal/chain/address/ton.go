package address

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
)

// TON wallet addresses are the representation hash of the wallet's StateInit cell
// {code, data}. Only the code cell's hash and depth enter that hash, so the wallet code is
// carried as those two constants (the published wallet contracts, as computed by @ton/ton
// 16.3.0 from its embedded code BoCs):
//
//	V3R2 code hash 84dafa44…d599, depth 0
//	V4R2 code hash feb5ff68…d5c0, depth 7
//	V5R1 code hash 20834b7b…b72f, depth 6
type tonWallet struct {
	codeHash  string
	codeDepth uint16
	data      func(pub []byte) *tonCell
}

// Default wallet ids (see the package doc).
const (
	tonDefaultWalletID  = 698983191 // V3/V4: 0x29a9a317 + workchain 0
	tonV5R1MainnetID    = -239      // network global id of TON mainnet
	tonV5R1ClientMarker = 1 << 31   // context: client wallet id
)

var (
	tonV3R2 = tonWallet{
		"84dafa449f98a6987789ba232358072bc0f76dc4524002a5d0918b9a75d2d599",
		0,
		func(pub []byte) *tonCell {
			c := &tonCell{}
			c.uint(0, 32)                  // seqno
			c.uint(tonDefaultWalletID, 32) // subwallet id
			c.bytes(pub)                   // public key
			return c
		},
	}
	tonV4R2 = tonWallet{
		"feb5ff6820e2ff0d9483e7e0d62c817d846789fb4ae580c878866d959dabd5c0",
		7,
		func(pub []byte) *tonCell {
			c := &tonCell{}
			c.uint(0, 32)
			c.uint(tonDefaultWalletID, 32)
			c.bytes(pub)
			c.uint(0, 1) // empty plugin dictionary
			return c
		},
	}
	tonV5R1 = tonWallet{
		"20834b7b72b112147e1b2fb457b84e74d1a30f04f737d4f62a668e9552d2b72f",
		6,
		func(pub []byte) *tonCell {
			// wallet_id = network_global_id XOR context, context = 1<<31 | workchain<<23 |
			// version<<15 | subwallet, with workchain, version and subwallet all 0.
			var network int32 = tonV5R1MainnetID
			walletID := uint32(network) ^ tonV5R1ClientMarker
			c := &tonCell{}
			c.uint(1, 1) // is_signature_allowed
			c.uint(0, 32)
			c.uint(uint64(walletID), 32)
			c.bytes(pub)
			c.uint(0, 1) // empty extensions dictionary
			return c
		},
	}
)

// tonCell is an ordinary (level 0) cell under construction; refs are given by hash and depth.
type tonCell struct {
	data    []byte
	bits    int
	refHash [][]byte
	refDeep []uint16
}

func (c *tonCell) bit(b uint64) {
	if c.bits%8 == 0 {
		c.data = append(c.data, 0)
	}
	if b&1 == 1 {
		c.data[c.bits/8] |= 0x80 >> uint(c.bits%8)
	}
	c.bits++
}

func (c *tonCell) uint(v uint64, n int) {
	for i := n - 1; i >= 0; i-- {
		c.bit(v >> uint(i))
	}
}

func (c *tonCell) bytes(b []byte) {
	for _, v := range b {
		c.uint(uint64(v), 8)
	}
}

func (c *tonCell) depth() uint16 {
	var d uint16
	for _, r := range c.refDeep {
		if r+1 > d {
			d = r + 1
		}
	}
	return d
}

// hash is the cell's representation hash: SHA-256(d1 ‖ d2 ‖ padded data ‖ ref depths ‖ ref
// hashes), d1 = number of refs, d2 = ⌊bits/8⌋ + ⌈bits/8⌉, padding = a 1 bit then zeros.
func (c *tonCell) hash() []byte {
	h := sha256.New()
	h.Write([]byte{byte(len(c.refHash)), byte(c.bits/8 + (c.bits+7)/8)})
	data := append([]byte(nil), c.data...)
	if c.bits%8 != 0 {
		data[c.bits/8] |= 0x80 >> uint(c.bits%8)
	}
	h.Write(data)
	for _, d := range c.refDeep {
		h.Write(binary.BigEndian.AppendUint16(nil, d))
	}
	for _, r := range c.refHash {
		h.Write(r)
	}
	return h.Sum(nil)
}

// tonAddress returns the user-friendly, URL-safe, non-bounceable mainnet address of the
// wallet on workchain 0.
func tonAddress(w tonWallet) func(key) (string, error) {
	return func(k key) (string, error) {
		data := w.data(k.compressed)
		code, _ := hex.DecodeString(w.codeHash)
		state := &tonCell{}
		state.uint(0b00110, 5) // no split_depth, no special, code present, data present, no library
		state.refHash = [][]byte{code, data.hash()}
		state.refDeep = []uint16{w.codeDepth, data.depth()}
		return tonFriendly(0, state.hash(), false, false), nil
	}
}

// tonFriendly encodes flags ‖ workchain ‖ hash ‖ CRC16-XModem (big-endian) as URL-safe base64.
func tonFriendly(workchain int8, hash []byte, bounceable, testOnly bool) string {
	tag := byte(0x51)
	if bounceable {
		tag = 0x11
	}
	if testOnly {
		tag |= 0x80
	}
	b := append([]byte{tag, byte(workchain)}, hash...)
	b = binary.BigEndian.AppendUint16(b, crc16XModem(b))
	return base64.URLEncoding.EncodeToString(b)
}
