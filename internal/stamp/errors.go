package stamp

import (
	"errors"
	"fmt"
)

// The two kinds of failure. Every error this package returns wraps exactly one
// of them, so the HTTP layer can choose a status with errors.Is and show the
// message itself to the client: messages name what is wrong and never contain
// private material.
var (
	// ErrMalformed: the header (or a part of it) cannot be parsed: bad
	// base64, bad JSON, unknown scheme, wrong key length, bad hex, non-DER
	// signature, bad CBOR.
	ErrMalformed = errors.New("malformed stamp")
	// ErrUnverified: the stamp is well formed but does not prove what it
	// claims: the signature does not verify, or a WebAuthn check (type,
	// challenge, origin, rpId, flags) fails.
	ErrUnverified = errors.New("stamp does not verify")
)

type stampError struct {
	kind error
	msg  string
}

func (e *stampError) Error() string { return e.msg }
func (e *stampError) Unwrap() error { return e.kind }

func malformed(format string, args ...any) error {
	return &stampError{kind: ErrMalformed, msg: fmt.Sprintf(format, args...)}
}

func unverified(format string, args ...any) error {
	return &stampError{kind: ErrUnverified, msg: fmt.Sprintf(format, args...)}
}
