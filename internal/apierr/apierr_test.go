package apierr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/store"
)

func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   int
		msg    string
		tk     string
	}{
		{"invalid", Invalid("parameters.userName", "too long"), 400, 3, "parameters.userName: too long", "INVALID_REQUEST"},
		{"required", Required("parameters.userIds"), 400, 3, "parameters.userIds is required", "INVALID_REQUEST"},
		{"not found", NotFoundf("user not found: %s", "u1"), 404, 5, "user not found: u1", "NOT_FOUND"},
		{"denied", Denied("no"), 403, 7, "no", "REQUEST_NOT_AUTHORIZED"},
		{"unauthenticated", Unauth("API_KEY_EXPIRED", "expired"), 401, 16, "expired", "API_KEY_EXPIRED"},
		{"unsupported", Unsupported("/public/v1/submit/x"), 501, 12, "/public/v1/submit/x is not supported by Latchkey", "NOT_SUPPORTED"},
		{"exhausted", New(ResourceExhausted, "RESOURCE_EXHAUSTED", "too many"), 429, 8, "too many", "RESOURCE_EXHAUSTED"},
		{"foreign error hides its text", errors.New("secret detail"), 500, 13, "internal error", "INTERNAL"},
		{"internal hides its cause", Internalf(errors.New("secret detail"), "reading user"), 500, 13, "reading user", "INTERNAL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			Render(w, tc.err)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d", w.Code, tc.status)
			}
			var s Status
			if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
				t.Fatal(err)
			}
			if s.Code != tc.code || s.Message != tc.msg || len(s.Details) != 1 ||
				s.Details[0].TurnkeyErrorCode != tc.tk ||
				s.Details[0].Type != DetailType {
				t.Fatalf("rendered %s", w.Body.String())
			}
			if w.Header().Get("Content-Type") != "application/json" {
				t.Fatal("content type")
			}
		})
	}
}

func TestFromUnwraps(t *testing.T) {
	e := Denied("x")
	wrapped := errors.Join(errors.New("ctx"), e)
	if From(wrapped) != e {
		t.Fatal("From did not find the wrapped *Error")
	}
}

// TestStoreFailuresAreUnavailable: a failure of the store itself is a 503 (code 14) wherever it
// comes from, bare, wrapped or as the cause of an internal error; an unknown commit outcome says
// so and that sending the same bytes again is safe.
func TestStoreFailuresAreUnavailable(t *testing.T) {
	lost := fmt.Errorf("postgres: get record: %w", store.Unavailable(io.ErrUnexpectedEOF))
	for name, err := range map[string]error{
		"bare":     lost,
		"internal": Internalf(lost, "reading organization"),
		"literal":  &Error{Code: Internal, TurnkeyCode: "INTERNAL", Message: "x", Cause: lost},
		"closed":   fmt.Errorf("x: %w", store.ErrClosed),
		"unknown":  store.OutcomeUnknown(io.ErrUnexpectedEOF),
	} {
		e := From(err)
		if e.Code != Unavailable || e.Code.HTTPStatus() != http.StatusServiceUnavailable ||
			e.TurnkeyCode != "UNAVAILABLE" {
			t.Errorf("%s: %d %s %q", name, e.Code, e.TurnkeyCode, e.Message)
		}
		if want := name == "unknown"; strings.Contains(e.Message, "same request") != want {
			t.Errorf("%s: message %q", name, e.Message)
		}
	}
	if e := Internalf(errors.New("json: cannot unmarshal"), "decoding"); e.Code != Internal {
		t.Errorf("a decoding failure is internal, got %d", e.Code)
	}
}

// TestMissingOr: a read that failed because the store is lost answers 503, never a 404 saying the
// record does not exist; any other failure (not found, or found in another organization) is the
// 404 the caller wrote.
func TestMissingOr(t *testing.T) {
	lost := fmt.Errorf("postgres: get record: %w", store.Unavailable(io.ErrUnexpectedEOF))
	for _, tc := range []struct {
		name  string
		cause error
		want  Code
	}{
		{"not found", store.ErrNotFound, NotFound},
		{"a 404 already", NotFoundf("user not found"), NotFound},
		{"store lost", lost, Unavailable},
		{"store lost under an internal error", Internalf(lost, "reading user"), Unavailable},
		{"store closed", store.ErrClosed, Unavailable},
	} {
		e := MissingOr(tc.cause, "parameters.userId: user not found: %s", "u1")
		if e.Code != tc.want {
			t.Errorf("%s: code %d (%q), want %d", tc.name, e.Code, e.Message, tc.want)
		}
		if tc.want == NotFound && e.Message != "parameters.userId: user not found: u1" {
			t.Errorf("%s: message %q", tc.name, e.Message)
		}
	}
}
