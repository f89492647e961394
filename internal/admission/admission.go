package admission

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/latchkey/latchkey/internal/apierr"
)

// DefaultMaxInFlight is the default bound on request-body bytes held at once by one process:
// eight bodies at the API's 2 MiB limit, or some fifteen thousand signing requests.
const DefaultMaxInFlight = 16 << 20

// firstChunk is the first buffer a body is read into (a declared length smaller than it is read
// into a buffer of its size); the buffer grows fourfold as bytes arrive (so all the buffers a
// body was read into sum to a third more than it).
const firstChunk = 4 << 10

// Refusal reasons, as the metrics label them.
const (
	ReasonBodySize = "body_size" // the body is over the listener's limit
	ReasonLoad     = "load"      // the process holds its bound of body bytes
)

// Gate bounds the body bytes of the requests in process at once.
type Gate struct {
	max  int64
	held atomic.Int64
	// Refused is called for every request refused, with its listener and reason (for metrics).
	Refused func(listener, reason string)
}

// New returns a gate holding at most max body bytes at once (DefaultMaxInFlight when max <= 0).
func New(max int64) *Gate {
	if max <= 0 {
		max = DefaultMaxInFlight
	}
	return &Gate{max: max}
}

// Held is the body bytes the gate counts now.
func (g *Gate) Held() int64 { return g.held.Load() }

// Max is the gate's bound.
func (g *Gate) Max() int64 { return g.max }

// SmallBody is the largest body that may use the gate's whole bound: larger bodies may fill only
// all but an eighth of it, so that under a flood of large bodies the small requests real
// clients send (a signature, a whoami: about a kilobyte) are still admitted.
const SmallBody = 64 << 10

// room is the bound a body of size bytes may fill.
func (g *Gate) room(size int64) int64 {
	if size <= SmallBody {
		return g.max
	}
	return g.max - g.max/8
}

// take counts n more bytes for a body that then holds size bytes, or nothing and false when
// that would pass the body's room.
func (g *Gate) take(n, size int64) bool {
	if g.held.Add(n) > g.room(size) {
		g.held.Add(-n)
		return false
	}
	return true
}

func (g *Gate) give(n int64) { g.held.Add(-n) }

// Body is the request body the gate read for r (nil, false outside Wrap). It is found through
// r.Body, not r's context: a request a handler makes from its own context (the auth proxy's
// in-process call to the API, with the body it stamped) must not be served the body of the
// request that handler is answering.
func Body(r *http.Request) ([]byte, bool) {
	if rc, ok := r.Body.(*readCloser); ok {
		return rc.body, true
	}
	return nil, false
}

// ReadBody is r's body: the one Wrap read, or (outside Wrap, as in tests) read here, at most
// maxBody bytes; errors are the 400s Wrap answers.
func ReadBody(w http.ResponseWriter, r *http.Request, maxBody int64) ([]byte, error) {
	if b, ok := Body(r); ok {
		return b, nil
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(maxBody)
		}
		return nil, apierr.Invalid("body", "could not read the request body")
	}
	return raw, nil
}

var errOverloaded = errors.New("over the bound of body bytes in flight")

// Wrap reads each request's body (at most maxBody bytes) within the gate's bound before h runs,
// refusing what is over either; h reads the same body from r.Body or, without a copy, from Body.
func (g *Gate) Wrap(listener string, maxBody int64, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > maxBody {
			g.refuse(w, listener, ReasonBodySize, tooLarge(maxBody))
			return
		}
		if r.ContentLength > 0 && g.held.Load()+r.ContentLength > g.room(r.ContentLength) {
			g.refuse(w, listener, ReasonLoad, overloaded())
			return
		}
		var held int64
		defer func() { g.give(held) }()
		body, err := g.read(w, r, maxBody, &held)
		switch {
		case errors.Is(err, errOverloaded):
			g.refuse(w, listener, ReasonLoad, overloaded())
			return
		case err != nil:
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				g.refuse(w, listener, ReasonBodySize, tooLarge(maxBody))
				return
			}
			apierr.Render(w, apierr.Invalid("body", "could not read the request body"))
			return
		}
		r.Body = &readCloser{body: body}
		h.ServeHTTP(w, r)
	})
}

// read reads r's body, at most maxBody bytes (or its declared length), into a buffer that grows
// as bytes arrive: the buffer's every byte is counted (in *held) before it is allocated, so a
// client holds what it has sent (rounded up to firstChunk, then to the buffer's growth, four times at each step), not
// what it declared.
func (g *Gate) read(w http.ResponseWriter, r *http.Request, maxBody int64, held *int64) ([]byte, error) {
	limit := maxBody + 1 // room to see a body over the limit (MaxBytesReader reports it)
	if r.ContentLength > 0 {
		limit = r.ContentLength // net/http reads no further than the declared length
	}
	src := http.MaxBytesReader(w, r.Body, maxBody)
	var body []byte
	for {
		if len(body) == cap(body) {
			if int64(len(body)) == r.ContentLength {
				return body, nil
			}
			size := min(max(4*int64(cap(body)), firstChunk), limit)
			if !g.take(size-*held, size) {
				return nil, errOverloaded
			}
			*held = size
			grown := make([]byte, len(body), size)
			copy(grown, body)
			body = grown
		}
		n, err := src.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if err == io.EOF {
			return body, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (g *Gate) refuse(w http.ResponseWriter, listener, reason string, err *apierr.Error) {
	if g.Refused != nil {
		g.Refused(listener, reason)
	}
	if reason == ReasonLoad {
		w.Header().Set("Retry-After", "1")
	}
	// The body is not read: the connection cannot be reused for another request.
	w.Header().Set("Connection", "close")
	apierr.Render(w, err)
}

func tooLarge(maxBody int64) *apierr.Error {
	return apierr.Invalid("body", "request body is larger than the %d byte limit", maxBody)
}

func overloaded() *apierr.Error {
	return &apierr.Error{Code: apierr.Unavailable, TurnkeyCode: "UNAVAILABLE",
		Message: "the server is holding its limit of request bytes in flight; try again shortly"}
}

// readCloser serves a body already read.
type readCloser struct {
	body []byte
	off  int
}

func (b *readCloser) Close() error { return nil }

func (b *readCloser) Read(p []byte) (int, error) {
	if b.off >= len(b.body) {
		return 0, io.EOF
	}
	n := copy(p, b.body[b.off:])
	b.off += n
	return n, nil
}
