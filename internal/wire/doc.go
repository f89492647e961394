// Package wire holds the JSON shapes of Turnkey's public wire protocol as
// Go types, and the table of its operations. It owns shapes only: no
// handlers, no storage, no policy, no I/O.
//
// Almost everything here is generated from the swagger files in spec/:
//
//   - types_gen.go: one type per swagger definition of
//     public_api.swagger.json, plus those only the http superset has. Each
//     object type has a Validate method that reports the first missing
//     required field or unlisted enum value as a *FieldError.
//   - ops_gen.go: Ops, one entry per swagger path (submit, query, other),
//     with the activity types each submit path accepts, their intent and
//     result members, and constructors for request and response bodies.
//   - proxy/types_gen.go: the same for auth_proxy.swagger.json.
//
// Conventions of the generated types: a required member is a value, an
// optional one a pointer (or an omitempty string, slice or map); int64
// members the swagger declares as strings stay strings; enums are string
// types with a Values list and a Valid method; protobufAny is a map of raw
// JSON; a definition with no properties is an empty struct.
//
// A submit request's generated type (e.g. CreateUsersRequest) carries only
// the current version's intent. To accept every version, decode a
// SubmitEnvelope, find the version with Op.Version(envelope.Type), decode
// the parameters into its NewIntent() and call Validate("parameters").
//
// Generated files must not be edited by hand. To regenerate after changing
// the generator or a swagger file, run, from internal/wire:
//
//	go generate   # or: go run ./gen
//
// TestGeneratedFilesUpToDate fails when the checked-in files differ from
// what the generator writes.
//
// Hand-written: errors.go (FieldError and the path helpers the generated
// validation uses) and ops.go (the Op types, Lookup, LookupType, SubmitEnvelope).
package wire

//go:generate go run ./gen
