package solana

import (
	"encoding/binary"
	"encoding/hex"
	"math/big"

	"github.com/mr-tron/base58"
)

// AddressTableLookupKey stands in the policy view for any account that is loaded from an
// address lookup table: its address cannot be known without chain state.
const AddressTableLookupKey = "ADDRESS_TABLE_LOOKUP"

// Well-known program ids.
var (
	systemProgramID    = mustKey("11111111111111111111111111111111")
	tokenProgramID     = mustKey("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
	token2022ProgramID = mustKey("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb")
)

func mustKey(s string) [pubkeySize]byte {
	b, err := base58.Decode(s)
	if err != nil || len(b) != pubkeySize {
		panic("solana: bad built-in program id " + s)
	}
	var k [pubkeySize]byte
	copy(k[:], b)
	return k
}

// Instruction discriminators: the System Program's is a little-endian u32, SPL Token's one
// byte (Token-2022 extensions add a second byte).
const (
	systemTransfer               = 2
	tokenTransfer                = 3
	tokenTransferChecked         = 12
	tokenTransferFeeExtension    = 26
	transferFeeTransferWithFee   = 1
	tokenTransferAccounts        = 3 // source, destination, owner
	tokenTransferCheckedAccounts = 4 // source, mint, destination, owner
)

// accountViews resolves every index of the message's account list once: its account, its
// address (base58, or AddressTableLookupKey) and the {account_key, signer, writable} value an
// instruction's accounts list shows, shared by every reference to that index. The view's cost
// is then linear in the transaction, a few words per reference.
type accountViews struct {
	accounts []account
	addrs    []string
	views    []map[string]any
}

func (t *Tx) resolveAccounts() *accountViews {
	h := t.header
	nStatic := len(t.staticKeys)
	nSig := int(h.NumRequiredSignatures)
	av := &accountViews{}
	for i, k := range t.staticKeys {
		a := account{key: k, signer: i < nSig}
		if a.signer {
			a.writable = i < nSig-int(h.NumReadonlySignedAccounts)
		} else {
			a.writable = i < nStatic-int(h.NumReadonlyUnsignedAccounts)
		}
		av.accounts = append(av.accounts, a)
	}
	for li, l := range t.lookups {
		for _, idx := range l.WritableIndexes {
			av.accounts = append(
				av.accounts,
				account{fromLUT: true, lut: li, lutIndex: idx, lutWrite: true, writable: true},
			)
		}
	}
	for li, l := range t.lookups {
		for _, idx := range l.ReadonlyIndexes {
			av.accounts = append(av.accounts, account{fromLUT: true, lut: li, lutIndex: idx})
		}
	}
	av.addrs = make([]string, len(av.accounts))
	av.views = make([]map[string]any, len(av.accounts))
	for i, a := range av.accounts {
		av.addrs[i] = AddressTableLookupKey
		if !a.fromLUT {
			av.addrs[i] = base58.Encode(a.key[:])
		}
	}
	return av
}

// view is the instruction-account value of index i, made on first use.
func (av *accountViews) view(i int) map[string]any {
	if av.views[i] == nil {
		a := av.accounts[i]
		av.views[i] = map[string]any{"account_key": av.addrs[i], "signer": a.signer, "writable": a.writable}
	}
	return av.views[i]
}

// PolicyView returns the transaction as the policy engine's solana.tx (docs/api-notes.md §4.3).
// Structs are map[string]any, lists []any, addresses base58 strings, amounts *big.Int and
// indexes int. parsed_instruction_data is left out: Turnkey fills it only from an uploaded
// IDL, so a policy that reads it without one meets a missing field, as on Turnkey. The maps of
// an instruction's accounts are shared between references to the same account: treat the view
// as read-only.
func (t *Tx) PolicyView() map[string]any {
	av := t.resolveAccounts()
	accountKeys := make([]any, len(t.staticKeys))
	for i := range t.staticKeys {
		accountKeys[i] = av.addrs[i]
	}
	var programKeys []any
	seenProgram := map[string]bool{}
	instructions := make([]any, len(t.instrs))
	transfers := []any{}
	splTransfers := []any{}
	for i, in := range t.instrs {
		prog := av.accounts[in.ProgramIDIndex]
		progKey := av.addrs[in.ProgramIDIndex]
		if !seenProgram[progKey] {
			seenProgram[progKey] = true
			programKeys = append(programKeys, progKey)
		}
		accounts := make([]any, len(in.Accounts))
		var used map[int]*[2][]any // lookup -> writable, read-only indexes this instruction uses
		var usedOrder []int
		for j, idx := range in.Accounts {
			a := av.accounts[idx]
			accounts[j] = av.view(int(idx))
			if a.fromLUT {
				if used == nil {
					used = map[int]*[2][]any{}
				}
				u := used[a.lut]
				if u == nil {
					u = &[2][]any{{}, {}}
					used[a.lut] = u
					usedOrder = append(usedOrder, a.lut)
				}
				if a.lutWrite {
					u[0] = append(u[0], int(a.lutIndex))
				} else {
					u[1] = append(u[1], int(a.lutIndex))
				}
			}
		}
		instrLookups := make([]any, 0, len(usedOrder))
		for _, li := range usedOrder {
			instrLookups = append(instrLookups, lookupView(t.lookups[li].AccountKey, used[li][0], used[li][1]))
		}
		instructions[i] = map[string]any{
			"program_key":           progKey,
			"accounts":              accounts,
			"instruction_data_hex":  hex.EncodeToString(in.Data),
			"address_table_lookups": instrLookups,
		}
		if prog.fromLUT {
			continue
		}
		switch prog.key {
		case systemProgramID:
			if tr := systemTransferView(in, av); tr != nil {
				transfers = append(transfers, tr)
			}
		case tokenProgramID, token2022ProgramID:
			if tr := splTransferView(in, av); tr != nil {
				splTransfers = append(splTransfers, tr)
			}
		}
	}
	if programKeys == nil {
		programKeys = []any{}
	}
	lookups := make([]any, len(t.lookups))
	for i, l := range t.lookups {
		lookups[i] = lookupView(l.AccountKey, intList(l.WritableIndexes), intList(l.ReadonlyIndexes))
	}
	return map[string]any{
		"account_keys":          accountKeys,
		"program_keys":          programKeys,
		"instructions":          instructions,
		"transfers":             transfers,
		"spl_transfers":         splTransfers,
		"recent_blockhash":      base58.Encode(t.blockhash[:]),
		"address_table_lookups": lookups,
	}
}

func lookupView(key [pubkeySize]byte, writable, readonly []any) map[string]any {
	return map[string]any{
		"address_table_key": base58.Encode(key[:]),
		"writable_indexes":  writable,
		"readonly_indexes":  readonly,
	}
}

func intList(b []uint8) []any {
	out := make([]any, len(b))
	for i, v := range b {
		out[i] = int(v)
	}
	return out
}

// systemTransferView recognises SystemInstruction::Transfer {lamports: u64}: accounts from, to.
func systemTransferView(in Instruction, av *accountViews) map[string]any {
	if len(in.Data) != 12 || binary.LittleEndian.Uint32(in.Data) != systemTransfer || len(in.Accounts) < 2 {
		return nil
	}
	return map[string]any{
		"from":   av.addrs[in.Accounts[0]],
		"to":     av.addrs[in.Accounts[1]],
		"amount": new(big.Int).SetUint64(binary.LittleEndian.Uint64(in.Data[4:])),
	}
}

// splTransferView recognises Transfer, TransferChecked and Token-2022 TransferCheckedWithFee.
// Accounts after the owner are multisig co-signers. Transfer names no mint, so token_mint
// is empty for it: a policy that pins a mint then denies it.
func splTransferView(in Instruction, av *accountViews) map[string]any {
	d, acc := in.Data, in.Accounts
	var amount uint64
	var from, to, mint, owner uint8
	var hasMint bool
	var rest []uint8
	switch {
	case len(d) == 9 && d[0] == tokenTransfer && len(acc) >= tokenTransferAccounts:
		amount = binary.LittleEndian.Uint64(d[1:])
		from, to, owner = acc[0], acc[1], acc[2]
		rest = acc[tokenTransferAccounts:]
	case len(d) == 10 && d[0] == tokenTransferChecked && len(acc) >= tokenTransferCheckedAccounts:
		amount = binary.LittleEndian.Uint64(d[1:])
		from, mint, to, owner, hasMint = acc[0], acc[1], acc[2], acc[3], true
		rest = acc[tokenTransferCheckedAccounts:]
	case len(d) == 19 && d[0] == tokenTransferFeeExtension && d[1] == transferFeeTransferWithFee &&
		len(acc) >= tokenTransferCheckedAccounts:
		amount = binary.LittleEndian.Uint64(d[2:])
		from, mint, to, owner, hasMint = acc[0], acc[1], acc[2], acc[3], true
		rest = acc[tokenTransferCheckedAccounts:]
	default:
		return nil
	}
	signers := make([]any, len(rest))
	for i, a := range rest {
		signers[i] = av.addrs[a]
	}
	tokenMint := ""
	if hasMint {
		tokenMint = av.addrs[mint]
	}
	return map[string]any{
		"from":       av.addrs[from],
		"to":         av.addrs[to],
		"amount":     new(big.Int).SetUint64(amount),
		"owner":      av.addrs[owner],
		"signers":    signers,
		"token_mint": tokenMint,
	}
}
