package wire

import (
	"cmp"
	"encoding/json"
	"slices"
)

// OpKind says how an operation is reached.
type OpKind int

// The kinds of operation, in the order Ops is sorted by.
const (
	Submit OpKind = iota + 1 // POST /public/v1/submit/<path>: creates an activity
	Query                    // POST /public/v1/query/<path>: reads
	Other                    // any other path (/tkhq/api/v1/...)
)

func (k OpKind) String() string {
	switch k {
	case Submit:
		return "submit"
	case Query:
		return "query"
	case Other:
		return "other"
	}
	return "OpKind(?)"
}

// Validator is a wire type that can check its required fields and enums.
type Validator interface {
	// Validate returns a *FieldError for the first problem, naming fields
	// under path ("" for bare names).
	Validate(path string) error
}

// ActivityVersion is one activity type a submit path accepts.
type ActivityVersion struct {
	Type         string           // e.g. "ACTIVITY_TYPE_CREATE_USERS_V4"
	IntentMember string           // member of Intent that holds the parameters, e.g. "createUsersIntentV4"
	NewIntent    func() Validator // a new intent value, e.g. new(CreateUsersIntentV4)
	// Unlisted is set on a type that is not a v1ActivityType value but that
	// an SDK sends (see gen/main.go, extraTypes). Store such activities
	// under Versions[0].Type.
	Unlisted bool
}

// Op is one operation of the public API.
type Op struct {
	Path     string // last path segment, e.g. "create_users"
	Route    string // the full swagger path, e.g. "/public/v1/submit/create_users"
	Kind     OpKind
	Summary  string
	Superset bool // only in public_api.http-superset.swagger.json (legacy, preview or internal)

	// Submit only: Versions[0] is the type the swagger's request enum
	// lists; then every older version, newest first; then types SDKs send
	// that the swagger does not tie to this path.
	Versions []ActivityVersion
	// Submit only: the member of Result that holds the result, e.g.
	// "createUsersResult"; "" for approve_activity and reject_activity.
	ResultMember string

	// NewRequest returns a new request body. For a submit it is the current
	// version's request; decode SubmitEnvelope and pick the version by type
	// to accept older ones. Nil when the path has no body.
	NewRequest func() Validator
	// NewResponse returns a new 200 response body.
	NewResponse func() any
}

// Version returns the accepted version with activity type typ.
func (op *Op) Version(typ string) (*ActivityVersion, bool) {
	for i := range op.Versions {
		if op.Versions[i].Type == typ {
			return &op.Versions[i], true
		}
	}
	return nil, false
}

type opKey struct {
	kind OpKind
	path string
}

// Ops is every operation of the public API: the swagger's (ops_gen.go) and the newer ones
// written by hand (newer.go), sorted by Kind then Path.
var Ops = func() []Op {
	ops := append(slices.Clip(swaggerOps), newerOps...)
	slices.SortStableFunc(ops, func(a, b Op) int {
		if a.Kind != b.Kind {
			return cmp.Compare(a.Kind, b.Kind)
		}
		return cmp.Compare(a.Path, b.Path)
	})
	return ops
}()

var opIndex = func() map[opKey]int {
	m := make(map[opKey]int, len(Ops))
	for i, op := range Ops {
		m[opKey{op.Kind, op.Path}] = i
	}
	return m
}()

// Lookup finds the operation of the given kind at path (the last segment,
// e.g. "create_users").
func Lookup(kind OpKind, path string) (*Op, bool) {
	i, ok := opIndex[opKey{kind, path}]
	if !ok {
		return nil, false
	}
	return &Ops[i], true
}

// LookupType finds the submit operation that accepts activity type typ,
// and that version. Old types no path accepts (e.g.
// ACTIVITY_TYPE_CREATE_ORGANIZATION) are not found.
func LookupType(typ string) (*Op, *ActivityVersion, bool) {
	for i := range Ops {
		if v, ok := Ops[i].Version(typ); ok {
			return &Ops[i], v, true
		}
	}
	return nil, nil, false
}

// SubmitEnvelope is the body every submit request shares. Parameters stay
// raw until the version is known: decode them with Version(Type).NewIntent.
type SubmitEnvelope struct {
	Type              string          `json:"type"`
	TimestampMs       string          `json:"timestampMs"`
	OrganizationId    string          `json:"organizationId"`
	Parameters        json.RawMessage `json:"parameters"`
	GenerateAppProofs *bool           `json:"generateAppProofs,omitempty"`
}

// Validate checks the envelope's required members; the parameters are
// checked by the intent type.
func (e *SubmitEnvelope) Validate(path string) error {
	switch {
	case e.Type == "":
		return Required(FieldPath(path, "type"))
	case e.TimestampMs == "":
		return Required(FieldPath(path, "timestampMs"))
	case e.OrganizationId == "":
		return Required(FieldPath(path, "organizationId"))
	case len(e.Parameters) == 0 || string(e.Parameters) == "null":
		return Required(FieldPath(path, "parameters"))
	}
	return nil
}
