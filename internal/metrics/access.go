package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// Observe wraps one listener's handler: it records each request's metrics under the listener's
// name and writes the access-log line at info level. operation names the request's operation
// from its path (a bounded set; "unknown" for anything else).
func Observe(
	m *Metrics,
	log *slog.Logger,
	listener string,
	operation func(path string) string,
	h http.Handler,
) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{}
		rw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), infoKey{}, info)))
		d := time.Since(start)
		op := operation(r.URL.Path)
		m.Request(listener, op, rw.code, d)
		log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("listener", listener),
			slog.String("request_id", rw.Header().Get("X-Request-Id")),
			slog.String("operation", op),
			slog.String("organization_id", info.orgID),
			slog.Int("status", rw.code),
			slog.Float64("duration_ms", float64(d.Microseconds())/1000))
	})
}

type infoKey struct{}

type requestInfo struct{ orgID string }

// SetOrganization names the organization a request is about, for its access-log line. Handlers
// call it once they have read the request's organizationId; it does nothing outside Observe.
func SetOrganization(ctx context.Context, orgID string) {
	if info, ok := ctx.Value(infoKey{}).(*requestInfo); ok {
		info.orgID = orgID
	}
}

// Organization is the organization SetOrganization named for the request of ctx ("" when none
// was, or outside Observe).
func Organization(ctx context.Context) string {
	if info, ok := ctx.Value(infoKey{}).(*requestInfo); ok {
		return info.orgID
	}
	return ""
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wroteHeader {
		s.code, s.wroteHeader = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wroteHeader = true
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer (flushes, deadlines).
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
