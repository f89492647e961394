package solana

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/mr-tron/base58"
)

const (
	pubkeySize    = 32
	signatureSize = 64
)

// Limits of a Solana transaction (docs/limits.md §5.1). They are the network's own, so no
// transaction that could be sent is refused; ParseTransaction checks each before the work it
// bounds, so the parse and the policy view cost at most a few hundred kilobytes.
const (
	// MaxTransactionSize is the network's packet data size (PACKET_DATA_SIZE): validators
	// refuse a serialized transaction, signatures included, that is larger. It holds for
	// legacy and v0 messages alike.
	MaxTransactionSize = 1232
	// MaxAccounts is the most accounts a message can address, static keys and lookup-table
	// accounts together: instruction account indexes are one byte.
	MaxAccounts = 256
	// MaxInstructions is the most top-level instructions: the runtime's instruction trace
	// holds 64 (MAX_INSTRUCTION_TRACE_LENGTH), so a transaction with more can never succeed.
	MaxInstructions = 64
	// MaxInstructionAccounts is the most account references one instruction may carry (the
	// runtime's MAX_ACCOUNTS_PER_INSTRUCTION).
	MaxInstructionAccounts = 255
)

// ErrNotSigner is returned by SignerIndex when the key is not among the required signers.
var ErrNotSigner = errors.New("solana: key is not a required signer of this transaction")

// Header is the three counts that open a message.
type Header struct {
	NumRequiredSignatures       uint8
	NumReadonlySignedAccounts   uint8
	NumReadonlyUnsignedAccounts uint8
}

// Instruction is one compiled instruction: indexes into the message's account list
// (static keys first, then lookup-table writable, then lookup-table read-only).
type Instruction struct {
	ProgramIDIndex uint8
	Accounts       []uint8
	Data           []byte
}

// AddressTableLookup names accounts loaded from an on-chain address lookup table.
type AddressTableLookup struct {
	AccountKey      [pubkeySize]byte
	WritableIndexes []uint8
	ReadonlyIndexes []uint8
}

// Tx is a parsed wire transaction. The original bytes are kept: signing inserts the
// signature into them rather than re-encoding, so nothing else can change.
type Tx struct {
	raw        []byte
	sigOffset  int // where signature 0 starts
	msgOffset  int // where the message starts
	numSigs    int
	versioned  bool
	header     Header
	staticKeys [][pubkeySize]byte
	blockhash  [pubkeySize]byte
	bhOffset   int // where the recent blockhash starts in raw
	instrs     []Instruction
	lookups    []AddressTableLookup
}

// Versioned reports whether the message is a v0 message (false: legacy).
func (t *Tx) Versioned() bool { return t.versioned }

// Header returns the message header.
func (t *Tx) Header() Header { return t.header }

// Message returns the bytes the signers sign: the serialized message.
func (t *Tx) Message() []byte { return bytes.Clone(t.raw[t.msgOffset:]) }

// reader walks untrusted bytes; every read is bounds-checked.
type reader struct {
	b   []byte
	off int
}

func (r *reader) errf(format string, a ...any) error {
	return fmt.Errorf("solana: at byte %d: %s", r.off, fmt.Sprintf(format, a...))
}

func (r *reader) byte(what string) (uint8, error) {
	if r.off >= len(r.b) {
		return 0, r.errf("truncated reading %s", what)
	}
	v := r.b[r.off]
	r.off++
	return v, nil
}

func (r *reader) take(n int, what string) ([]byte, error) {
	if n < 0 || len(r.b)-r.off < n {
		return nil, r.errf("truncated reading %s: need %d bytes, have %d", what, n, len(r.b)-r.off)
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v, nil
}

// compactU16 reads Solana's shortvec length: 7 bits a byte, at most three bytes, and only
// the shortest encoding (the runtime rejects aliases, so must we).
func (r *reader) compactU16(what string) (int, error) {
	start := r.off
	var v int
	for i := 0; i < 3; i++ {
		c, err := r.byte(what)
		if err != nil {
			return 0, err
		}
		if i == 2 && c > 0x03 {
			r.off = start
			return 0, r.errf("%s: compact-u16 overflows 16 bits", what)
		}
		v |= int(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if i > 0 && c == 0 {
				r.off = start
				return 0, r.errf("%s: compact-u16 is not minimally encoded", what)
			}
			return v, nil
		}
	}
	r.off = start
	return 0, r.errf("%s: compact-u16 longer than 3 bytes", what)
}

func (r *reader) indexes(what string, limit int) ([]uint8, error) {
	n, err := r.compactU16(what + " count")
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, r.errf("%s: %d indexes, at most %d allowed", what, n, limit)
	}
	b, err := r.take(n, what)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(b), nil
}

// ParseTransaction parses a full wire transaction: a compact-u16 signature count, that many
// 64-byte signatures (zeroed placeholders for the missing ones), then a legacy or v0 message.
// It applies the runtime's structural checks, so any transaction it accepts has exactly one
// signature slot per required signer and only in-range account indexes.
func ParseTransaction(b []byte) (*Tx, error) {
	if len(b) > MaxTransactionSize {
		return nil, fmt.Errorf(
			"solana: the transaction is %d bytes; the network accepts at most %d (its packet size)",
			len(b), MaxTransactionSize)
	}
	r := &reader{b: b}
	n, err := r.compactU16("signature count")
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("solana: transaction has no signature slots")
	}
	t := &Tx{raw: bytes.Clone(b), sigOffset: r.off, numSigs: n}
	if _, err := r.take(n*signatureSize, "signatures"); err != nil {
		return nil, err
	}
	t.msgOffset = r.off
	if err := t.parseMessage(r); err != nil {
		return nil, err
	}
	if r.off != len(b) {
		return nil, r.errf("%d trailing bytes after the message", len(b)-r.off)
	}
	return t, nil
}

func (t *Tx) parseMessage(r *reader) error {
	first, err := r.byte("message header")
	if err != nil {
		return err
	}
	if first&0x80 != 0 {
		if v := first & 0x7f; v != 0 {
			return r.errf("unsupported message version %d", v)
		}
		t.versioned = true
		if first, err = r.byte("message header"); err != nil {
			return err
		}
	}
	t.header.NumRequiredSignatures = first
	if t.header.NumReadonlySignedAccounts, err = r.byte("message header"); err != nil {
		return err
	}
	if t.header.NumReadonlyUnsignedAccounts, err = r.byte("message header"); err != nil {
		return err
	}
	nKeys, err := r.compactU16("account key count")
	if err != nil {
		return err
	}
	if nKeys > MaxAccounts {
		return r.errf("%d account keys, at most %d allowed", nKeys, MaxAccounts)
	}
	keys, err := r.take(nKeys*pubkeySize, "account keys")
	if err != nil {
		return err
	}
	seen := make(map[[pubkeySize]byte]bool, nKeys)
	t.staticKeys = make([][pubkeySize]byte, nKeys)
	for i := range t.staticKeys {
		copy(t.staticKeys[i][:], keys[i*pubkeySize:])
		if seen[t.staticKeys[i]] {
			return fmt.Errorf("solana: account key %d is listed twice", i)
		}
		seen[t.staticKeys[i]] = true
	}
	t.bhOffset = r.off
	bh, err := r.take(pubkeySize, "recent blockhash")
	if err != nil {
		return err
	}
	copy(t.blockhash[:], bh)

	nInstr, err := r.compactU16("instruction count")
	if err != nil {
		return err
	}
	// Each instruction takes at least three bytes; refuse counts the input cannot hold
	// before allocating for them.
	if nInstr > (len(r.b)-r.off)/3 {
		return r.errf("instruction count %d exceeds the remaining bytes", nInstr)
	}
	if nInstr > MaxInstructions {
		return r.errf("%d instructions, at most %d allowed", nInstr, MaxInstructions)
	}
	t.instrs = make([]Instruction, nInstr)
	for i := range t.instrs {
		in := &t.instrs[i]
		if in.ProgramIDIndex, err = r.byte(fmt.Sprintf("instruction %d program index", i)); err != nil {
			return err
		}
		in.Accounts, err = r.indexes(fmt.Sprintf("instruction %d accounts", i), MaxInstructionAccounts)
		if err != nil {
			return err
		}
		dl, err := r.compactU16(fmt.Sprintf("instruction %d data length", i))
		if err != nil {
			return err
		}
		d, err := r.take(dl, fmt.Sprintf("instruction %d data", i))
		if err != nil {
			return err
		}
		in.Data = bytes.Clone(d)
	}
	if t.versioned {
		nl, err := r.compactU16("address table lookup count")
		if err != nil {
			return err
		}
		// Each lookup takes at least 34 bytes.
		if nl > (len(r.b)-r.off)/34 {
			return r.errf("address table lookup count %d exceeds the remaining bytes", nl)
		}
		t.lookups = make([]AddressTableLookup, nl)
		for i := range t.lookups {
			l := &t.lookups[i]
			k, err := r.take(pubkeySize, fmt.Sprintf("address table lookup %d key", i))
			if err != nil {
				return err
			}
			copy(l.AccountKey[:], k)
			l.WritableIndexes, err = r.indexes(fmt.Sprintf("address table lookup %d writable indexes", i), MaxAccounts)
			if err != nil {
				return err
			}
			l.ReadonlyIndexes, err = r.indexes(fmt.Sprintf("address table lookup %d read-only indexes", i), MaxAccounts)
			if err != nil {
				return err
			}
			if len(l.WritableIndexes)+len(l.ReadonlyIndexes) == 0 {
				return fmt.Errorf("solana: address table lookup %d loads no accounts", i)
			}
		}
	}
	return t.sanitize()
}

// sanitize applies the runtime's message checks (solana-program Message::sanitize and
// v0::Message::sanitize).
func (t *Tx) sanitize() error {
	h := t.header
	nStatic := len(t.staticKeys)
	if int(h.NumRequiredSignatures) != t.numSigs {
		return fmt.Errorf(
			"solana: %d signature slots but the message requires %d signatures",
			t.numSigs,
			h.NumRequiredSignatures,
		)
	}
	if int(h.NumRequiredSignatures)+int(h.NumReadonlyUnsignedAccounts) > nStatic {
		return fmt.Errorf(
			"solana: header counts (%d signers, %d read-only unsigned) exceed the %d account keys",
			h.NumRequiredSignatures,
			h.NumReadonlyUnsignedAccounts,
			nStatic,
		)
	}
	if h.NumReadonlySignedAccounts >= h.NumRequiredSignatures {
		return errors.New("solana: the fee payer must be a writable signer")
	}
	total := t.numAccounts()
	if total > MaxAccounts {
		return fmt.Errorf("solana: %d accounts after address table lookups, at most %d allowed", total, MaxAccounts)
	}
	for i, in := range t.instrs {
		if in.ProgramIDIndex == 0 || int(in.ProgramIDIndex) >= total {
			return fmt.Errorf("solana: instruction %d: program index %d out of range", i, in.ProgramIDIndex)
		}
		for j, a := range in.Accounts {
			if int(a) >= total {
				return fmt.Errorf(
					"solana: instruction %d: account %d index %d out of range (%d accounts)",
					i,
					j,
					a,
					total,
				)
			}
		}
	}
	return nil
}

func (t *Tx) numAccounts() int {
	n := len(t.staticKeys)
	for _, l := range t.lookups {
		n += len(l.WritableIndexes) + len(l.ReadonlyIndexes)
	}
	return n
}

// SignerIndex returns the signature slot of a 32-byte ed25519 public key among the
// transaction's required signers.
func (t *Tx) SignerIndex(pubkey []byte) (int, error) {
	if len(pubkey) != pubkeySize {
		return 0, fmt.Errorf("solana: public key is %d bytes, want %d", len(pubkey), pubkeySize)
	}
	for i := 0; i < int(t.header.NumRequiredSignatures); i++ {
		if bytes.Equal(t.staticKeys[i][:], pubkey) {
			return i, nil
		}
	}
	return 0, ErrNotSigner
}

// WithSignature returns the full wire transaction with signature slot index set to sig and
// every other byte unchanged. The receiver is not modified.
func (t *Tx) WithSignature(index int, sig []byte) ([]byte, error) {
	if len(sig) != signatureSize {
		return nil, fmt.Errorf("solana: signature is %d bytes, want %d", len(sig), signatureSize)
	}
	if index < 0 || index >= t.numSigs {
		return nil, fmt.Errorf("solana: signature slot %d out of range (%d slots)", index, t.numSigs)
	}
	out := bytes.Clone(t.raw)
	copy(out[t.sigOffset+index*signatureSize:], sig)
	return out, nil
}

// FirstSignature returns the first signature, base58: the transaction's id on Solana (what
// sendTransaction answers and getSignatureStatuses takes). An unsigned first slot is an error.
func (t *Tx) FirstSignature() (string, error) {
	if t.numSigs == 0 {
		return "", fmt.Errorf("solana: the transaction has no signature slot")
	}
	sig := t.raw[t.sigOffset : t.sigOffset+signatureSize]
	if bytes.Equal(sig, make([]byte, signatureSize)) {
		return "", fmt.Errorf("solana: the fee payer's signature (slot 0) is missing")
	}
	return base58.Encode(sig), nil
}

// WithBlockhash returns the transaction's bytes with its recent blockhash replaced and every
// signature slot cleared (a new blockhash invalidates them).
func (t *Tx) WithBlockhash(bh [pubkeySize]byte) []byte {
	out := bytes.Clone(t.raw)
	clear(out[t.sigOffset : t.sigOffset+t.numSigs*signatureSize])
	copy(out[t.bhOffset:], bh[:])
	return out
}

// account describes the account at one index of the message's account list.
type account struct {
	key      [pubkeySize]byte
	fromLUT  bool
	lut      int // lookup number, when fromLUT
	lutIndex uint8
	lutWrite bool
	signer   bool
	writable bool
}

// CheckNoLookupProgramIDs rejects a transaction that names a program through an address
// lookup table: Turnkey refuses those outright, since the program cannot be known (and so
// cannot be checked by policy) without reading chain state.
func CheckNoLookupProgramIDs(t *Tx) error {
	for i, in := range t.instrs {
		if int(in.ProgramIDIndex) >= len(t.staticKeys) {
			return fmt.Errorf(
				"solana: instruction %d: program id comes from an address lookup table, which is not allowed",
				i,
			)
		}
	}
	return nil
}
