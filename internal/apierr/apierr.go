package apierr

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/latchkey/latchkey/internal/store"
)

// Code is a gRPC status code, as Turnkey's gRPC-gateway renders it in `code`.
type Code int

// The gRPC codes Latchkey uses.
const (
	Canceled           Code = 1
	Unknown            Code = 2
	InvalidArgument    Code = 3
	DeadlineExceeded   Code = 4
	NotFound           Code = 5
	AlreadyExists      Code = 6
	PermissionDenied   Code = 7
	ResourceExhausted  Code = 8
	FailedPrecondition Code = 9
	Aborted            Code = 10
	Unimplemented      Code = 12
	Internal           Code = 13
	Unavailable        Code = 14
	Unauthenticated    Code = 16
)

// HTTPStatus is the status grpc-gateway gives the code.
func (c Code) HTTPStatus() int {
	switch c {
	case Canceled:
		return 499
	case InvalidArgument, FailedPrecondition:
		return http.StatusBadRequest
	case DeadlineExceeded:
		return http.StatusGatewayTimeout
	case NotFound:
		return http.StatusNotFound
	case AlreadyExists, Aborted:
		return http.StatusConflict
	case PermissionDenied:
		return http.StatusForbidden
	case ResourceExhausted:
		return http.StatusTooManyRequests
	case Unimplemented:
		return http.StatusNotImplemented
	case Unavailable:
		return http.StatusServiceUnavailable
	case Unauthenticated:
		return http.StatusUnauthorized
	default:
		return http.StatusInternalServerError
	}
}

// Error is the API error.
type Error struct {
	Code        Code
	TurnkeyCode string // e.g. "REQUEST_NOT_AUTHORIZED"; "" renders no details entry
	Message     string // safe for the caller
	Cause       error  // internal; never rendered
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %v", e.Message, e.Cause)
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

// New builds an error with a formatted message.
func New(code Code, turnkeyCode, format string, args ...any) *Error {
	return &Error{Code: code, TurnkeyCode: turnkeyCode, Message: fmt.Sprintf(format, args...)}
}

// Invalid is a 400 naming the offending field.
func Invalid(field, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	return &Error{Code: InvalidArgument, TurnkeyCode: "INVALID_REQUEST", Message: msg}
}

// Required is a 400 for a missing field.
func Required(field string) *Error {
	return &Error{Code: InvalidArgument, TurnkeyCode: "INVALID_REQUEST", Message: field + " is required"}
}

// NotFoundf is a 404.
func NotFoundf(format string, args ...any) *Error {
	return &Error{Code: NotFound, TurnkeyCode: "NOT_FOUND", Message: fmt.Sprintf(format, args...)}
}

// MissingOr answers a read that failed: a failure of the store itself (store.IsUnavailable) is
// StoreUnavailable, never a 404 saying the record does not exist; anything else is NotFoundf.
func MissingOr(cause error, format string, args ...any) *Error {
	if store.IsUnavailable(cause) {
		return StoreUnavailable(cause)
	}
	return NotFoundf(format, args...)
}

// Denied is a 403.
func Denied(format string, args ...any) *Error {
	return &Error{Code: PermissionDenied, TurnkeyCode: "REQUEST_NOT_AUTHORIZED", Message: fmt.Sprintf(format, args...)}
}

// Unauth is a 401.
func Unauth(turnkeyCode, format string, args ...any) *Error {
	return &Error{Code: Unauthenticated, TurnkeyCode: turnkeyCode, Message: fmt.Sprintf(format, args...)}
}

// Unsupported is the clear "not supported by Latchkey" answer (gRPC 12, HTTP 501).
func Unsupported(what string) *Error {
	return &Error{Code: Unimplemented, TurnkeyCode: "NOT_SUPPORTED", Message: what + " is not supported by Latchkey"}
}

// Internalf wraps an unexpected failure; the cause is logged, never shown. A cause that is a
// failure of the store itself (store.IsUnavailable) is not unexpected: it is StoreUnavailable.
func Internalf(cause error, format string, args ...any) *Error {
	if store.IsUnavailable(cause) {
		return StoreUnavailable(cause)
	}
	return &Error{Code: Internal, TurnkeyCode: "INTERNAL", Message: fmt.Sprintf(format, args...), Cause: cause}
}

// StoreUnavailable is the answer to a failure of the store itself (a 503, code 14, never a 500):
// the request was not carried out and may be sent again; or, for store.ErrOutcomeUnknown, the
// store was lost while committing it and it is unknown whether it took effect, and sending the
// same bytes again is safe (an activity is de-duplicated by its fingerprint).
func StoreUnavailable(cause error) *Error {
	msg := "the store is unavailable; try again"
	if errors.Is(cause, store.ErrOutcomeUnknown) {
		msg = "the store was lost while committing this request and did not come back in time: " +
			"whether it took effect is unknown; sending the same request (the same bytes) again is safe"
	}
	return &Error{Code: Unavailable, TurnkeyCode: "UNAVAILABLE", Message: msg, Cause: cause}
}

// From returns err as an *Error, turning anything else into an internal error. A failure of the
// store (store.IsUnavailable), bare or as the cause of an internal error, is StoreUnavailable.
func From(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		if e.Code == Internal && store.IsUnavailable(e.Cause) {
			return StoreUnavailable(e.Cause)
		}
		return e
	}
	if store.IsUnavailable(err) {
		return StoreUnavailable(err)
	}
	return &Error{Code: Internal, TurnkeyCode: "INTERNAL", Message: "internal error", Cause: err}
}

// Status is the rendered body: the gRPC-gateway rpcStatus shape.
type Status struct {
	Code    int      `json:"code"`
	Message string   `json:"message"`
	Details []Detail `json:"details"`
}

// Detail is one details entry.
type Detail struct {
	Type             string `json:"@type"`
	TurnkeyErrorCode string `json:"turnkeyErrorCode,omitempty"`
}

// DetailType is the @type of Turnkey's error detail.
const DetailType = "type.googleapis.com/errors.v1.TurnkeyErrorDetail"

// ToStatus is the wire form of err (also stored as an activity's `failure`).
func ToStatus(err error) Status {
	e := From(err)
	s := Status{Code: int(e.Code), Message: e.Message, Details: []Detail{}}
	if e.TurnkeyCode != "" {
		s.Details = append(s.Details, Detail{Type: DetailType, TurnkeyErrorCode: e.TurnkeyCode})
	}
	return s
}

// Render writes err as the HTTP response. It is the only place errors leave the API.
func Render(w http.ResponseWriter, err error) {
	e := From(err)
	body, _ := json.Marshal(ToStatus(e))
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.Code.HTTPStatus())
	_, _ = w.Write(body)
}
