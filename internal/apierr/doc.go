// Package apierr is the one error type of the Latchkey API and the one place it is rendered.
//
// An *Error carries a gRPC status code (which fixes the HTTP status), a Turnkey error code the SDKs
// can match on, a message that is safe to show the caller, and an optional internal cause that is
// never rendered. Handlers return *Error values built with the constructors here; anything else
// reaching Render is treated as an internal error and its text is not shown.
//
// It must never put secret material (keys, codes, sealed data) into a message.
package apierr
