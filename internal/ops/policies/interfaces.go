package policies

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/mr-tron/base58"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/chain/ethereum"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Smart contract interface types.
const (
	InterfaceEthereum = "SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM"
	InterfaceSolana   = "SMART_CONTRACT_INTERFACE_TYPE_SOLANA"
)

// MaxInterfaceBytes bounds an uploaded ABI or IDL (the swagger says "Limited to 400kb").
const MaxInterfaceBytes = 400 << 10

// MaxIDLInstructions bounds the instructions of an uploaded Anchor IDL. The largest programs'
// IDLs (Drift, Mango v4) have under 200; an ABI's entries are bounded by ethereum.MaxABIEntries.
const MaxIDLInstructions = 4096

// MaxContractInterfaceBytesPerOrg bounds the stored bytes of an organization's smart contract
// interfaces together. list_smart_contract_interfaces takes no pagination and answers every
// one, so without it 100 interfaces of 400 KiB made each answer 41 MB (395 MB allocated). A
// hundred interfaces the size of Seaport's ABI (33 KB, about 40 KB stored with its quotes
// escaped) take half of it.
const MaxContractInterfaceBytesPerOrg = 8 << 20

func (d Deps) createInterface(x *activity.Exec, in *wire.CreateSmartContractInterfaceIntent) (any, error) {
	const (
		fAddress   = "parameters.smartContractAddress"
		fInterface = "parameters.smartContractInterface"
		fLabel     = "parameters.label"
	)
	label, err := directory.CheckName(fLabel, in.Label)
	if err != nil {
		return nil, err
	}
	if len(in.SmartContractInterface) > MaxInterfaceBytes {
		return nil, apierr.Invalid(
			fInterface,
			"must be at most %d bytes, got %d",
			MaxInterfaceBytes,
			len(in.SmartContractInterface),
		)
	}
	lim := d.Env(x).Limits
	if err := lim.Check(
		x.Ctx, x.Tx, KindSmartContractInterface, x.OrgID, lim.ContractInterfacesPerOrg, "smart contract interfaces",
	); err != nil {
		return nil, err
	}
	addr := strings.TrimSpace(in.SmartContractAddress)
	switch string(in.Type) {
	case InterfaceEthereum:
		if !isEthereumAddress(addr) {
			return nil, apierr.Invalid(
				fAddress,
				"not an Ethereum address (0x followed by 40 hex digits): %q",
				in.SmartContractAddress,
			)
		}
		addr = strings.ToLower(addr)
		if err := CheckABI([]byte(in.SmartContractInterface)); err != nil {
			return nil, apierr.Invalid(fInterface, "not an Ethereum ABI: %v", err)
		}
	case InterfaceSolana:
		if b, err := base58.Decode(addr); err != nil || len(b) != 32 {
			return nil, apierr.Invalid(
				fAddress,
				"not a Solana program id (base58 of 32 bytes): %q",
				in.SmartContractAddress,
			)
		}
		if err := CheckIDL([]byte(in.SmartContractInterface)); err != nil {
			return nil, apierr.Invalid(fInterface, "not an Anchor IDL: %v", err)
		}
	default:
		return nil, apierr.Invalid("parameters.type", "unknown smart contract interface type %q", in.Type)
	}
	s := &SmartContractInterface{ID: id.New(), OrgID: x.OrgID, Address: addr, Interface: in.SmartContractInterface,
		Type: string(in.Type), Label: label, Notes: in.Notes, CreatedAt: x.Now, UpdatedAt: x.Now}
	if err := checkInterfaceBytes(x, s); err != nil {
		return nil, err
	}
	if err := SaveSmartContractInterface(x.Ctx, x.Tx, s, fAddress); err != nil {
		return nil, err
	}
	return wire.CreateSmartContractInterfaceResult{SmartContractInterfaceId: s.ID}, nil
}

// checkInterfaceBytes refuses s when it would take the organization's interfaces over
// MaxContractInterfaceBytesPerOrg. It reads the interfaces that fit beside s and no further
// (store.ListOptions.MaxBytes), so its cost is bounded by the limit, and counts the rest.
func checkInterfaceBytes(x *activity.Exec, s *SmartContractInterface) error {
	b, err := json.Marshal(s)
	if err != nil {
		return apierr.Internalf(err, "encoding smart contract interface")
	}
	room := MaxContractInterfaceBytesPerOrg - len(b)
	recs, err := x.Tx.List(x.Ctx, KindSmartContractInterface, x.OrgID, store.ListOptions{MaxBytes: room})
	if err != nil {
		return apierr.Internalf(err, "listing smart contract interfaces")
	}
	held := 0
	for _, r := range recs {
		held += len(r.Data)
	}
	n := len(recs)
	if held <= room {
		// The page stops before the first interface that does not fit: is there one?
		if n, err = x.Tx.Count(x.Ctx, KindSmartContractInterface, x.OrgID, len(recs)+1); err != nil {
			return apierr.Internalf(err, "counting smart contract interfaces")
		}
	}
	if held > room || n > len(recs) {
		return apierr.New(
			apierr.ResourceExhausted,
			"RESOURCE_EXHAUSTED",
			"parameters.smartContractInterface: an organization can have at most %d bytes of smart contract "+
				"interfaces, and this one (%d bytes) would take it over",
			MaxContractInterfaceBytesPerOrg,
			len(b),
		)
	}
	return nil
}

func deleteInterface(x *activity.Exec, in *wire.DeleteSmartContractInterfaceIntent) (any, error) {
	s, err := LoadSmartContractInterface(x.Ctx, x.Tx, x.OrgID, in.SmartContractInterfaceId)
	if err != nil {
		return nil, notFoundAsInvalid(
			err,
			"parameters.smartContractInterfaceId",
			"no smart contract interface %s in this organization",
			in.SmartContractInterfaceId,
		)
	}
	if err := deleteRecord(x.Ctx, x.Tx, KindSmartContractInterface, s.ID); err != nil {
		return nil, err
	}
	return wire.DeleteSmartContractInterfaceResult{SmartContractInterfaceId: s.ID}, nil
}

func getInterface(q *activity.Read, in *wire.GetSmartContractInterfaceRequest) (any, error) {
	s, err := LoadSmartContractInterface(q.Ctx, q.R, q.OrgID, in.SmartContractInterfaceId)
	if err != nil {
		return nil, err
	}
	return wire.GetSmartContractInterfaceResponse{SmartContractInterface: s.ToWire()}, nil
}

func listInterfaces(q *activity.Read, _ *wire.GetSmartContractInterfacesRequest) (any, error) {
	ss, err := ListSmartContractInterfaces(q.Ctx, q.R, q.OrgID)
	if err != nil {
		return nil, err
	}
	out := wire.GetSmartContractInterfacesResponse{
		SmartContractInterfaces: make([]wire.Externaldatav1SmartContractInterface, 0, len(ss)),
	}
	for _, s := range ss {
		out.SmartContractInterfaces = append(out.SmartContractInterfaces, s.ToWire())
	}
	return out, nil
}

func isEthereumAddress(s string) bool {
	if len(s) != 42 || !strings.HasPrefix(s, "0x") {
		return false
	}
	for _, c := range s[2:] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// ---- Ethereum ABI ----

type abiEntry struct {
	Type            *string    `json:"type"`
	Name            *string    `json:"name"`
	Inputs          []abiParam `json:"inputs"`
	Outputs         []abiParam `json:"outputs"`
	StateMutability *string    `json:"stateMutability"`
	Anonymous       *bool      `json:"anonymous"`
}

type abiParam struct {
	Name       *string    `json:"name"`
	Type       *string    `json:"type"`
	Components []abiParam `json:"components"`
	Indexed    *bool      `json:"indexed"`
}

var (
	abiIdent = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)
	// A type is a base type followed by array dimensions: uint256, bytes32[], (tuple)[2][].
	abiType  = regexp.MustCompile(`^([a-z]+)([0-9]+(?:x[0-9]+)?)?((?:\[[0-9]*\])*)$`)
	abiArray = regexp.MustCompile(`\[([0-9]*)\]`)
)

// CheckABI checks that b is a Solidity JSON ABI: an array of function, constructor, receive,
// fallback, event and error entries whose names are identifiers and whose parameter types are
// ABI types (tuples with components), within the limits DecodeCall parses it under
// (ethereum.CheckABILimits: entries, tuple depth, array dimensions, fixed-size arrays, repeated
// names), so that an interface accepted here decodes calldata on every signing request.
func CheckABI(b []byte) error {
	var entries []json.RawMessage
	if err := strictUnmarshal(b, &entries); err != nil {
		return fmt.Errorf("expected a JSON array of ABI entries: %v", err)
	}
	if len(entries) == 0 {
		return fmt.Errorf("the ABI has no entries")
	}
	if len(entries) > ethereum.MaxABIEntries {
		return fmt.Errorf("%d entries, more than the limit of %d", len(entries), ethereum.MaxABIEntries)
	}
	for i, raw := range entries {
		var e abiEntry
		if err := strictUnmarshal(raw, &e); err != nil {
			return fmt.Errorf("entry %d: %v", i, err)
		}
		if err := checkEntry(&e); err != nil {
			return fmt.Errorf("entry %d: %v", i, err)
		}
	}
	return ethereum.CheckABILimits(b)
}

func checkEntry(e *abiEntry) error {
	typ := "function" // the Solidity ABI's default
	if e.Type != nil {
		typ = *e.Type
	}
	switch typ {
	case "function", "event", "error":
		if e.Name == nil || !abiIdent.MatchString(*e.Name) {
			article := "a"
			if typ != "function" {
				article = "an"
			}
			return fmt.Errorf("%s %s entry needs a name that is an identifier", article, typ)
		}
	case "constructor", "receive", "fallback":
	default:
		return fmt.Errorf("unknown type %q (expected function, constructor, receive, fallback, event or error)", typ)
	}
	where := typ
	if e.Name != nil && *e.Name != "" {
		where = typ + " " + strconv.Quote(*e.Name)
	}
	if e.StateMutability != nil {
		switch *e.StateMutability {
		case "pure", "view", "nonpayable", "payable":
		default:
			return fmt.Errorf("%s: unknown stateMutability %q", where, *e.StateMutability)
		}
	}
	for i := range e.Inputs {
		if err := checkParam(&e.Inputs[i], 0); err != nil {
			return fmt.Errorf("%s: input %d: %v", where, i, err)
		}
	}
	for i := range e.Outputs {
		if err := checkParam(&e.Outputs[i], 0); err != nil {
			return fmt.Errorf("%s: output %d: %v", where, i, err)
		}
	}
	return nil
}

func checkParam(p *abiParam, depth int) error {
	if depth > ethereum.MaxABITupleDepth {
		return fmt.Errorf("tuples nested deeper than %d", ethereum.MaxABITupleDepth)
	}
	if p.Type == nil {
		return fmt.Errorf("type is required")
	}
	if p.Name != nil && *p.Name != "" && !abiIdent.MatchString(*p.Name) {
		return fmt.Errorf("name %q is not an identifier", *p.Name)
	}
	if dims := strings.Count(*p.Type, "["); dims > ethereum.MaxABIArrayDims {
		return fmt.Errorf("type has %d array dimensions, more than the limit of %d", dims, ethereum.MaxABIArrayDims)
	}
	m := abiType.FindStringSubmatch(*p.Type)
	if m == nil {
		return fmt.Errorf("unknown type %q", *p.Type)
	}
	for _, dim := range abiArray.FindAllStringSubmatch(m[3], -1) {
		if dim[1] != "" {
			if n, err := strconv.Atoi(dim[1]); err != nil || n <= 0 {
				return fmt.Errorf("type %q: array length must be positive", *p.Type)
			}
		}
	}
	if !validBaseType(m[1], m[2]) {
		return fmt.Errorf("unknown type %q", *p.Type)
	}
	if m[1] == "tuple" {
		if p.Components == nil {
			return fmt.Errorf("type %q needs components", *p.Type)
		}
		for i := range p.Components {
			if err := checkParam(&p.Components[i], depth+1); err != nil {
				return fmt.Errorf("component %d: %v", i, err)
			}
		}
	}
	return nil
}

func validBaseType(base, size string) bool {
	bits := func(s string) bool {
		n, err := strconv.Atoi(s)
		return err == nil && n >= 8 && n <= 256 && n%8 == 0 && s[0] != '0'
	}
	switch base {
	case "address", "bool", "string", "function", "tuple":
		return size == ""
	case "uint", "int":
		return size == "" || bits(size)
	case "bytes":
		if size == "" {
			return true
		}
		n, err := strconv.Atoi(size)
		return err == nil && n >= 1 && n <= 32 && size[0] != '0'
	case "fixed", "ufixed":
		if size == "" {
			return true
		}
		m, n, ok := strings.Cut(size, "x")
		if !ok || !bits(m) {
			return false
		}
		k, err := strconv.Atoi(n)
		return err == nil && k >= 0 && k <= 80
	}
	return false
}

// ---- Solana Anchor IDL ----

type idl struct {
	Instructions *[]idlInstruction `json:"instructions"`
}

type idlInstruction struct {
	Name     *string           `json:"name"`
	Accounts []json.RawMessage `json:"accounts"`
	Args     []idlArg          `json:"args"`
}

type idlArg struct {
	Name *string         `json:"name"`
	Type json.RawMessage `json:"type"`
}

// CheckIDL checks that b is an Anchor IDL: a JSON object whose instructions are named, with
// named, typed arguments. Other members (accounts, types, events, errors, metadata...) are kept
// as uploaded and read by the evaluator.
func CheckIDL(b []byte) error {
	var v idl
	if err := strictUnmarshal(b, &v); err != nil {
		return fmt.Errorf("expected a JSON object: %v", err)
	}
	if v.Instructions == nil {
		return fmt.Errorf("instructions is required")
	}
	if n := len(*v.Instructions); n > MaxIDLInstructions {
		return fmt.Errorf("%d instructions, more than the limit of %d", n, MaxIDLInstructions)
	}
	for i, ins := range *v.Instructions {
		if ins.Name == nil || strings.TrimSpace(*ins.Name) == "" {
			return fmt.Errorf("instruction %d: name is required", i)
		}
		for j, a := range ins.Args {
			if a.Name == nil || *a.Name == "" {
				return fmt.Errorf("instruction %q: arg %d: name is required", *ins.Name, j)
			}
			if t := bytes.TrimSpace(a.Type); len(t) == 0 || bytes.Equal(t, []byte("null")) {
				return fmt.Errorf("instruction %q: arg %q: type is required", *ins.Name, *a.Name)
			}
		}
	}
	return nil
}

// strictUnmarshal decodes exactly one JSON value into v, rendering type errors by field.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field != "" {
				return fmt.Errorf("%s: expected %s, got JSON %s", te.Field, kindOf(te.Type), te.Value)
			}
			return fmt.Errorf("expected %s, got JSON %s", kindOf(te.Type), te.Value)
		}
		return err
	}
	if len(bytes.TrimSpace(b[dec.InputOffset():])) != 0 {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

func kindOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}
