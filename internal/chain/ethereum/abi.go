package ethereum

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
)

// Limits on a smart contract interface (a Solidity JSON ABI), checked by CheckABILimits before
// go-ethereum parses it: when the interface is uploaded (policies.CheckABI) and again when it is
// parsed to decode calls (ParseABI), since an interface stored before a limit existed is parsed
// for the signing requests to its contract. Each is far above what real ABIs use: Seaport 1.1's (33 KB, 63 entries) nests
// tuples 3 deep and arrays 2 deep and overloads nothing; ERC-721 overloads safeTransferFrom once;
// zk verifiers take fixed arrays of a few hundred integers at most.
const (
	// MaxABIEntries bounds the entries (functions, events, errors...) of one ABI.
	MaxABIEntries = 4096
	// MaxABITupleDepth bounds how deep tuple components nest.
	MaxABITupleDepth = 32
	// MaxABIArrayDims bounds the array dimensions of one parameter type (uint256[][2][] has 3).
	MaxABIArrayDims = 16
	// MaxABIStaticValues bounds the values one parameter type holds without a dynamic array:
	// fixed-size arrays multiply (uint256[1000][1000] holds a million), tuples add. go-ethereum
	// allocates a fixed-size array whole before reading it, and builds a Go type of that size for
	// a tuple's components.
	MaxABIStaticValues = 1 << 16
	// MaxABINameConflicts bounds the renaming go-ethereum does for repeated names: overloaded
	// functions and events (f, f0, f1, ...) and tuple components whose names are equal once
	// camel-cased. It tries every previous suffix for each repeat, so n repeats of one name cost
	// n²/2 tries; this bounds the tries in the whole ABI.
	MaxABINameConflicts = 1024
)

// Limits on what calldata decodes to (DecodeCall). Encoded the standard way, every value has a
// word of its own (an integer, an offset or a length) except tuples and fixed-size arrays, which
// add one value per level of nesting: Seaport's calls, with 1 to 8 elements in every array,
// decode to 1.0 to 1.2 values per word. Calldata whose offsets share children decodes to far more
// values than it has words (f(uint256[][][]) with all offsets equal: l³ values from 3·l words).
const (
	// MaxABIValuesPerWord bounds the values (integers, addresses, arrays, tuples, and one per 32
	// bytes of a string or bytes) the arguments may decode to, per 32-byte word of arguments.
	MaxABIValuesPerWord = 8
	// abiValuesFixed is the allowance beside MaxABIValuesPerWord, for short calldata.
	abiValuesFixed = 1024
)

// Call is calldata decoded against a contract's ABI, as the policy language's eth.tx exposes it
// (function_name, function_signature, contract_call_args).
type Call struct {
	Name      string         // e.g. "transfer"
	Signature string         // e.g. "transfer(address,uint256)"
	Args      map[string]any // argument name -> value: *big.Int, lowercase 0x address, 0x bytes, bool, string, []any
}

// ABI is a contract's ABI, checked against the limits above and parsed once, to decode any
// number of calls with. It is safe for concurrent use: decoding only reads it. Parsing is the
// costly part of a decode (about 15 ms for an ABI of 400 KB, against microseconds for a call),
// so a caller that decodes many calls against one ABI parses it once (policies.ContractABI).
type ABI struct {
	parsed abi.ABI
}

// ParseABI checks an ABI JSON array against the limits above and parses it.
func ParseABI(abiJSON []byte) (a *ABI, err error) {
	if err := CheckABILimits(abiJSON); err != nil {
		return nil, fmt.Errorf("ABI: %w", err)
	}
	defer func() { // go-ethereum's parser may panic on hostile input; an error is the answer
		if r := recover(); r != nil {
			a, err = nil, fmt.Errorf("ABI: %v", r)
		}
	}()
	parsed, err := abi.JSON(bytes.NewReader(abiJSON))
	if err != nil {
		return nil, fmt.Errorf("ABI: %w", err)
	}
	return &ABI{parsed: parsed}, nil
}

// DecodeCall decodes calldata (4-byte selector and arguments) with an ABI JSON array: ParseABI
// and ABI.DecodeCall.
func DecodeCall(abiJSON, data []byte) (*Call, error) {
	if len(data) < 4 {
		return nil, errors.New("calldata shorter than a function selector")
	}
	a, err := ParseABI(abiJSON)
	if err != nil {
		return nil, err
	}
	return a.DecodeCall(data)
}

// DecodeCall decodes calldata (4-byte selector and arguments) with the ABI. Calldata that would
// decode to more than MaxABIValuesPerWord values per word is an error, as calldata that does not
// decode is.
func (a *ABI) DecodeCall(data []byte) (call *Call, err error) {
	if len(data) < 4 {
		return nil, errors.New("calldata shorter than a function selector")
	}
	defer func() { // go-ethereum's decoder panics on some hostile inputs; an error is the answer
		if r := recover(); r != nil {
			call, err = nil, fmt.Errorf("calldata does not decode: %v", r)
		}
	}()
	m, err := a.parsed.MethodById(data[:4])
	if err != nil {
		return nil, fmt.Errorf("no function with selector 0x%x in the ABI", data[:4])
	}
	if err := checkDecodedSize(m.Inputs, data[4:]); err != nil {
		return nil, fmt.Errorf("calldata does not decode as %s: %w", m.Sig, err)
	}
	raw := map[string]any{}
	if err := m.Inputs.UnpackIntoMap(raw, data[4:]); err != nil {
		return nil, fmt.Errorf("calldata does not decode as %s: %w", m.Sig, err)
	}
	args := make(map[string]any, len(raw))
	for k, v := range raw {
		args[k] = policyValue(reflect.ValueOf(v))
	}
	return &Call{Name: m.RawName, Signature: m.Sig, Args: args}, nil
}

// ---- limits on the ABI ----

// abiShapeEntry and abiShapeParam are the parts of an ABI entry go-ethereum's parser does
// nonlinear work on.
type abiShapeEntry struct {
	Type    string          `json:"type"`
	Name    string          `json:"name"`
	Inputs  []abiShapeParam `json:"inputs"`
	Outputs []abiShapeParam `json:"outputs"`
}

type abiShapeParam struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Components []abiShapeParam `json:"components"`
}

// CheckABILimits checks an ABI JSON array against MaxABIEntries, MaxABITupleDepth,
// MaxABIArrayDims, MaxABIStaticValues and MaxABINameConflicts, in time linear in its size. It
// reads the first JSON value, as go-ethereum does, and says nothing of the ABI's validity
// otherwise (policies.CheckABI does).
func CheckABILimits(abiJSON []byte) error {
	var entries []json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(abiJSON)).Decode(&entries); err != nil {
		return fmt.Errorf("not a JSON array: %v", err)
	}
	if len(entries) > MaxABIEntries {
		return fmt.Errorf("%d entries, more than the limit of %d", len(entries), MaxABIEntries)
	}
	c := abiChecker{functions: map[string]bool{}, events: map[string]bool{}}
	for i, raw := range entries {
		var e abiShapeEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return fmt.Errorf("entry %d: %v", i, err)
		}
		if err := c.entry(&e); err != nil {
			return fmt.Errorf("entry %d: %v", i, err)
		}
	}
	return nil
}

type abiChecker struct {
	functions, events map[string]bool // names go-ethereum has given, per kind
	conflicts         int             // renaming tries so far
}

func (c *abiChecker) entry(e *abiShapeEntry) error {
	switch e.Type {
	case "function":
		if err := c.rename(e.Name, c.functions); err != nil {
			return err
		}
	case "event":
		if err := c.rename(e.Name, c.events); err != nil {
			return err
		}
	}
	for _, list := range [][]abiShapeParam{e.Inputs, e.Outputs} {
		for i := range list {
			if _, err := c.param(&list[i], 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// rename does what go-ethereum's abi.ResolveNameConflict does to name, counting its tries.
func (c *abiChecker) rename(name string, used map[string]bool) error {
	got := name
	for i := 0; used[got]; i++ {
		if c.conflicts++; c.conflicts > MaxABINameConflicts {
			return fmt.Errorf("more than %d repeated names to resolve (%q)", MaxABINameConflicts, abiAbbrev(name))
		}
		got = name + strconv.Itoa(i)
	}
	used[got] = true
	return nil
}

// param checks one parameter and returns the values its type holds without a dynamic array.
func (c *abiChecker) param(p *abiShapeParam, depth int) (int, error) {
	if depth > MaxABITupleDepth {
		return 0, fmt.Errorf("tuples nested deeper than %d", MaxABITupleDepth)
	}
	if dims := strings.Count(p.Type, "["); dims > MaxABIArrayDims {
		return 0, fmt.Errorf("type %q has %d array dimensions, more than the limit of %d",
			abiAbbrev(p.Type), dims, MaxABIArrayDims)
	}
	values := 1
	if strings.HasPrefix(p.Type, "tuple") {
		used := map[string]bool{}
		for i := range p.Components {
			n, err := c.param(&p.Components[i], depth+1)
			if err != nil {
				return 0, err
			}
			if values += n; values > MaxABIStaticValues {
				return 0, c.tooLarge(p.Type)
			}
			if err := c.rename(abi.ToCamelCase(p.Components[i].Name), used); err != nil {
				return 0, err
			}
		}
	}
	return c.staticValues(p.Type, values)
}

// staticValues multiplies the values of the base type by the fixed dimensions of typ, innermost
// first, and resets them at a dynamic dimension (whose elements are read only as they come).
func (c *abiChecker) staticValues(typ string, base int) (int, error) {
	values := base
	i := strings.IndexByte(typ, '[')
	if i < 0 {
		return values, nil
	}
	for _, dim := range strings.Split(typ[i+1:], "[") {
		dim = strings.TrimSuffix(dim, "]")
		if dim == "" {
			values = 1
			continue
		}
		n, err := strconv.Atoi(dim)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("type %q: array dimension %q is not a length", abiAbbrev(typ), abiAbbrev(dim))
		}
		if n > MaxABIStaticValues || values*n+1 > MaxABIStaticValues {
			return 0, c.tooLarge(typ)
		}
		values = values*n + 1
	}
	return values, nil
}

func (c *abiChecker) tooLarge(typ string) error {
	return fmt.Errorf("type %q holds more than %d values in fixed-size arrays and tuples",
		abiAbbrev(typ), MaxABIStaticValues)
}

func abiAbbrev(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// ---- limits on the decoded values ----

var errABITooManyValues = fmt.Errorf("the arguments decode to more values than %d per 32-byte word",
	MaxABIValuesPerWord)

// checkDecodedSize walks the arguments as go-ethereum's Arguments.UnpackValues does (same offsets,
// same bounds checks, so the same structural errors) without building anything, and counts the
// values it would produce, refusing past the budget. It stops there, so it costs at most the
// budget, and go-ethereum, run after it, builds at most that many values.
func checkDecodedSize(args abi.Arguments, data []byte) error {
	if len(data) == 0 {
		return nil // UnpackIntoMap answers without decoding
	}
	b := &abiValueBudget{left: MaxABIValuesPerWord*(len(data)/32+1) + abiValuesFixed}
	virtual, index := 0, 0
	for _, arg := range args {
		if arg.Indexed {
			continue
		}
		if err := b.value((index+virtual)*32, arg.Type, data); err != nil {
			return err
		}
		virtual += abiInlineWords(arg.Type)
		index++
	}
	return nil
}

type abiValueBudget struct{ left int }

func (b *abiValueBudget) spend(n int) error {
	if b.left -= n; b.left < 0 {
		return errABITooManyValues
	}
	return nil
}

// value mirrors go-ethereum's toGoType.
func (b *abiValueBudget) value(index int, t abi.Type, output []byte) error {
	if index < 0 || index+32 > len(output) {
		return fmt.Errorf("abi: cannot marshal in to go type: length insufficient %d require %d",
			len(output), index+32)
	}
	if err := b.spend(1); err != nil {
		return err
	}
	switch t.T {
	case abi.TupleTy:
		if abiIsDynamic(t) {
			begin, err := abiTupleOffset(index, output)
			if err != nil {
				return err
			}
			return b.tuple(t, output[begin:])
		}
		return b.tuple(t, output[index:])
	case abi.SliceTy:
		begin, length, err := abiLengthPrefix(index, output)
		if err != nil {
			return err
		}
		return b.each(t, output[begin:], length)
	case abi.ArrayTy:
		if abiIsDynamic(*t.Elem) {
			offset := binary.BigEndian.Uint64(output[index+24 : index+32])
			if offset > uint64(len(output)) {
				return fmt.Errorf("abi: offset %d greater than output length %d", offset, len(output))
			}
			return b.each(t, output[offset:], t.Size)
		}
		return b.each(t, output[index:], t.Size)
	case abi.StringTy, abi.BytesTy:
		_, length, err := abiLengthPrefix(index, output)
		if err != nil {
			return err
		}
		return b.spend(length / 32)
	}
	return nil
}

// each mirrors forEachUnpack: size elements from the start of output.
func (b *abiValueBudget) each(t abi.Type, output []byte, size int) error {
	if size < 0 || size > len(output)/32 {
		return fmt.Errorf("abi: cannot marshal into go array: %d elements would go over slice boundary (len=%d)",
			size, len(output))
	}
	elemSize := abiTypeSize(*t.Elem)
	for i, j := 0, 0; j < size; i, j = i+elemSize, j+1 {
		if err := b.value(i, *t.Elem, output); err != nil {
			return err
		}
	}
	return nil
}

// tuple mirrors forTupleUnpack.
func (b *abiValueBudget) tuple(t abi.Type, output []byte) error {
	virtual := 0
	for index, elem := range t.TupleElems {
		if err := b.value((index+virtual)*32, *elem, output); err != nil {
			return err
		}
		virtual += abiInlineWords(*elem)
	}
	return nil
}

// abiInlineWords is the words past the first that a static array or tuple takes in place (what
// go-ethereum adds to its "virtual" argument count).
func abiInlineWords(t abi.Type) int {
	if (t.T == abi.ArrayTy || t.T == abi.TupleTy) && !abiIsDynamic(t) {
		return abiTypeSize(t)/32 - 1
	}
	return 0
}

// abiIsDynamic is go-ethereum's isDynamicType.
func abiIsDynamic(t abi.Type) bool {
	if t.T == abi.TupleTy {
		for _, elem := range t.TupleElems {
			if abiIsDynamic(*elem) {
				return true
			}
		}
		return false
	}
	return t.T == abi.StringTy || t.T == abi.BytesTy || t.T == abi.SliceTy ||
		(t.T == abi.ArrayTy && abiIsDynamic(*t.Elem))
}

// abiTypeSize is go-ethereum's getTypeSize: the bytes a value takes in place.
func abiTypeSize(t abi.Type) int {
	if t.T == abi.ArrayTy && !abiIsDynamic(*t.Elem) {
		if t.Elem.T == abi.ArrayTy || t.Elem.T == abi.TupleTy {
			return t.Size * abiTypeSize(*t.Elem)
		}
		return t.Size * 32
	} else if t.T == abi.TupleTy && !abiIsDynamic(t) {
		total := 0
		for _, elem := range t.TupleElems {
			total += abiTypeSize(*elem)
		}
		return total
	}
	return 32
}

// abiWordInt reads a 32-byte word as a non-negative int, false when it does not fit in 63 bits.
func abiWordInt(w []byte) (int, bool) {
	for _, c := range w[:24] {
		if c != 0 {
			return 0, false
		}
	}
	v := binary.BigEndian.Uint64(w[24:32])
	return int(v), v < 1<<63
}

// abiLengthPrefix mirrors lengthPrefixPointsTo: the word at index is an offset to a length word,
// and the data after it must hold length bytes (or, for an array, at least length bytes; each
// checks its elements).
func abiLengthPrefix(index int, output []byte) (start, length int, err error) {
	offset, ok := abiWordInt(output[index : index+32])
	if !ok || offset > len(output)-32 {
		return 0, 0, fmt.Errorf("abi: cannot marshal in to go slice: offset would go over slice boundary (len=%d)",
			len(output))
	}
	start = offset + 32
	length, ok = abiWordInt(output[start-32 : start])
	if !ok || length > len(output)-start {
		return 0, 0, fmt.Errorf("abi: cannot marshal in to go type: length insufficient %d", len(output))
	}
	return start, length, nil
}

// abiTupleOffset mirrors tuplePointsTo.
func abiTupleOffset(index int, output []byte) (int, error) {
	offset, ok := abiWordInt(output[index : index+32])
	if !ok || offset > len(output) {
		return 0, fmt.Errorf("abi: cannot marshal in to go slice: offset would go over slice boundary (len=%d)",
			len(output))
	}
	return offset, nil
}

// policyValue converts an ABI-decoded Go value to the plain values policies compare.
func policyValue(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	switch x := v.Interface().(type) {
	case *big.Int:
		return new(big.Int).Set(x)
	case common.Address:
		return strings.ToLower(x.Hex())
	case []byte:
		return "0x" + hex.EncodeToString(x)
	case bool, string:
		return x
	}
	switch v.Kind() {
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return new(big.Int).SetUint64(v.Uint())
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return big.NewInt(v.Int())
	case reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 { // bytesN
			b := make([]byte, v.Len())
			reflect.Copy(reflect.ValueOf(b), v)
			return "0x" + hex.EncodeToString(b)
		}
		fallthrough
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = policyValue(v.Index(i))
		}
		return out
	case reflect.Struct: // tuples
		out := map[string]any{}
		for i := 0; i < v.NumField(); i++ {
			name := v.Type().Field(i).Tag.Get("json")
			if name == "" {
				name = strings.ToLower(v.Type().Field(i).Name[:1]) + v.Type().Field(i).Name[1:]
			}
			out[name] = policyValue(v.Field(i))
		}
		return out
	case reflect.Pointer, reflect.Interface:
		return policyValue(v.Elem())
	}
	return fmt.Sprint(v.Interface())
}
