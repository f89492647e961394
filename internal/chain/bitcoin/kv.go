package bitcoin

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/wire"
)

// MaxUnsignedTxSize bounds the PSBT's unsigned transaction: a standard transaction is at most
// 400,000 weight units, so its non-witness serialization is at most 100,000 bytes. The bound
// also caps the legacy sighash work, which grows with inputs × transaction size.
const MaxUnsignedTxSize = 100_000

// MaxMapEntries bounds the key-value pairs of one PSBT map (the global map, an input's, an
// output's), checked by prewalk before btcutil/psbt decodes: btcutil compares each new entry
// of an input or output map with every one before it (partial signatures, derivations,
// unknown keys), quadratic in the entries. A 15-of-15 multisig input holds about 35.
const MaxMapEntries = 1000

// Smallest serializations, used to refuse counts the remaining bytes cannot hold.
const (
	minTxInSize  = 32 + 4 + 1 + 4 // outpoint, empty script, sequence
	minTxOutSize = 8 + 1          // value, empty script
)

// prewalk checks the raw key-value structure before btcutil/psbt decodes it. btcutil (and
// btcd's wire decoder under it) allocates for the counts a transaction claims before reading
// them, so a few bytes could ask for tens of megabytes; prewalk refuses any transaction whose
// input, output or witness counts its bytes cannot hold. It also requires every transaction
// value (the global unsigned transaction and each non_witness_utxo) to be filled exactly,
// which BIP-174 requires and btcutil/psbt does not check, and refuses duplicate keys.
func prewalk(b []byte) error {
	if len(b) < 5 {
		return errors.New("too short")
	}
	r := bytes.NewReader(b[5:])
	nIn, nOut := -1, -1
	for m := 0; nIn < 0 || m < 1+nIn+nOut; m++ {
		seen := map[string]bool{}
		for {
			key, val, err := readKV(r)
			if err != nil {
				return err
			}
			if key == nil {
				break
			}
			// btcutil/psbt keeps a repeated unknown key (even a second unsigned
			// transaction) instead of refusing it as BIP-174 requires.
			if seen[string(key)] {
				return fmt.Errorf("duplicate key %x in map %d", key[:min(len(key), 40)], m)
			}
			if len(seen) == MaxMapEntries {
				return fmt.Errorf("map %d has more than %d entries", m, MaxMapEntries)
			}
			seen[string(key)] = true
			if len(key) != 1 || key[0] != 0x00 {
				continue
			}
			switch {
			case m == 0:
				if len(val) > MaxUnsignedTxSize {
					return fmt.Errorf(
						"unsigned transaction is %d bytes, at most %d accepted",
						len(val),
						MaxUnsignedTxSize,
					)
				}
				in, out, err := txShape(val, false)
				if err != nil {
					return fmt.Errorf("unsigned transaction: %w", err)
				}
				nIn, nOut = in, out
			case m <= nIn:
				if _, _, err := txShape(val, true); err != nil {
					return fmt.Errorf("input %d non_witness_utxo: %w", m-1, err)
				}
			}
		}
		if m == 0 && nIn < 0 {
			return errors.New("no unsigned transaction")
		}
	}
	return nil
}

// readKV reads one key-value pair; a nil key is the map's separator.
func readKV(r *bytes.Reader) (key, val []byte, err error) {
	klen, err := wire.ReadVarInt(r, 0)
	if err != nil {
		return nil, nil, err
	}
	if klen == 0 {
		return nil, nil, nil
	}
	if key, err = take(r, klen); err != nil {
		return nil, nil, fmt.Errorf("key: %w", err)
	}
	vlen, err := wire.ReadVarInt(r, 0)
	if err != nil {
		return nil, nil, err
	}
	if val, err = take(r, vlen); err != nil {
		return nil, nil, fmt.Errorf("value: %w", err)
	}
	return key, val, nil
}

func take(r *bytes.Reader, n uint64) ([]byte, error) {
	if n > uint64(r.Len()) {
		return nil, fmt.Errorf("%d bytes stated, %d left", n, r.Len())
	}
	b := make([]byte, n)
	_, _ = r.Read(b)
	return b, nil
}

func skip(r *bytes.Reader, n uint64) error {
	if n > uint64(r.Len()) {
		return fmt.Errorf("%d bytes stated, %d left", n, r.Len())
	}
	_, err := r.Seek(int64(n), 1)
	return err
}

// txShape walks a serialized transaction without allocating for it and returns its input
// and output counts; the transaction must fill b exactly. With allowWitness, the segwit
// serialization (marker 0x00, flag 0x01) is accepted.
func txShape(b []byte, allowWitness bool) (int, int, error) {
	r := bytes.NewReader(b)
	if err := skip(r, 4); err != nil { // version
		return 0, 0, err
	}
	count := func(min int, what string) (uint64, error) {
		n, err := wire.ReadVarInt(r, 0)
		if err != nil {
			return 0, err
		}
		if n > uint64(r.Len()/min) {
			return 0, fmt.Errorf("%d %s cannot fit in %d bytes", n, what, r.Len())
		}
		return n, nil
	}
	nIn, err := count(minTxInSize, "inputs")
	if err != nil {
		return 0, 0, err
	}
	witness := false
	// As btcd's decoder does: with witness serialization allowed, a zero input count is the
	// segwit marker and must be followed by flag 0x01.
	if nIn == 0 && allowWitness {
		flag, err := r.ReadByte()
		if err != nil || flag != 0x01 {
			return 0, 0, errors.New("bad segwit marker or flag")
		}
		witness = true
		if nIn, err = count(minTxInSize, "inputs"); err != nil {
			return 0, 0, err
		}
	}
	for i := uint64(0); i < nIn; i++ {
		if err := skip(r, 36); err != nil {
			return 0, 0, err
		}
		sl, err := wire.ReadVarInt(r, 0)
		if err != nil {
			return 0, 0, err
		}
		if err := skip(r, sl+4); err != nil {
			return 0, 0, err
		}
	}
	nOut, err := count(minTxOutSize, "outputs")
	if err != nil {
		return 0, 0, err
	}
	for i := uint64(0); i < nOut; i++ {
		if err := skip(r, 8); err != nil {
			return 0, 0, err
		}
		sl, err := wire.ReadVarInt(r, 0)
		if err != nil {
			return 0, 0, err
		}
		if err := skip(r, sl); err != nil {
			return 0, 0, err
		}
	}
	if witness {
		for i := uint64(0); i < nIn; i++ {
			items, err := count(1, "witness items")
			if err != nil {
				return 0, 0, err
			}
			for j := uint64(0); j < items; j++ {
				l, err := wire.ReadVarInt(r, 0)
				if err != nil {
					return 0, 0, err
				}
				if err := skip(r, l); err != nil {
					return 0, 0, err
				}
			}
		}
	}
	if err := skip(r, 4); err != nil { // lock time
		return 0, 0, err
	}
	if r.Len() != 0 {
		return 0, 0, fmt.Errorf("%d bytes after the transaction in its value", r.Len())
	}
	if nIn > 1<<31 || nOut > 1<<31 {
		return 0, 0, errors.New("too many inputs or outputs")
	}
	return int(nIn), int(nOut), nil
}
