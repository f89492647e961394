package admission

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

type refusals struct {
	mu  sync.Mutex
	got []string
}

func (r *refusals) add(listener, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, listener+":"+reason)
}

func (r *refusals) list() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.got, ",")
}

func TestWrapReadsTheBodyOnce(t *testing.T) {
	g := New(1 << 20)
	h := g.Wrap("api", 64<<10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		viaCtx, ok := Body(r)
		viaBody, _ := io.ReadAll(r.Body)
		if !ok || !bytes.Equal(viaCtx, viaBody) {
			t.Errorf("Body = %q, %v; r.Body = %q", viaCtx, ok, viaBody)
		}
		_, _ = w.Write(viaBody)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, size := range []int{1, 1200, 4096, 5000, 64 << 10} {
		want := bytes.Repeat([]byte("x"), size)
		for _, chunked := range []bool{false, true} {
			var body io.Reader = bytes.NewReader(want)
			if chunked {
				body = io.MultiReader(body) // no length: sent chunked
			}
			resp, err := http.Post(srv.URL, "application/json", body)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Equal(got, want) {
				t.Errorf("%d bytes (chunked %v): %d, %d bytes back", size, chunked, resp.StatusCode, len(got))
			}
		}
	}
	if g.Held() != 0 {
		t.Errorf("held %d bytes after the requests", g.Held())
	}
}

// A handler that calls another handler in process with a request of its own, made from its own
// request's context (as the auth proxy sends the activity it stamped to the API), must have that
// request's body read, not its own: the API verifies the stamp over the body it reads.
func TestBodyIsTheRequestsOwn(t *testing.T) {
	g := New(1 << 20)
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := ReadBody(w, r, 1<<10)
		if err != nil {
			t.Error(err)
		}
		_, _ = w.Write(b)
	})
	outer := g.Wrap("proxy", 1<<10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := Body(r); !ok || string(b) != "from the client" {
			t.Errorf("Body = %q, %v", b, ok)
		}
		sub, err := http.NewRequestWithContext(
			r.Context(),
			http.MethodPost,
			"/api",
			strings.NewReader("stamped by the proxy"),
		)
		if err != nil {
			t.Fatal(err)
		}
		if b, ok := Body(sub); ok {
			t.Errorf("Body of a request the gate did not read = %q", b)
		}
		inner.ServeHTTP(w, sub)
	}))
	srv := httptest.NewServer(outer)
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader("from the client"))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != "stamped by the proxy" {
		t.Errorf("the inner handler read %q", got)
	}
}

func TestWrapRefusesBodiesOverTheLimit(t *testing.T) {
	g := New(1 << 20)
	var seen refusals
	g.Refused = seen.add
	reached := false
	srv := httptest.NewServer(g.Wrap("proxy", 1000, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		reached = true
	})))
	defer srv.Close()
	for _, chunked := range []bool{false, true} {
		var body io.Reader = bytes.NewReader(make([]byte, 1001))
		if chunked {
			body = io.MultiReader(body)
		}
		resp, err := http.Post(srv.URL, "application/json", body)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(msg), "1000 byte limit") {
			t.Errorf("chunked %v: %d %s", chunked, resp.StatusCode, msg)
		}
	}
	if reached {
		t.Error("the handler ran")
	}
	if got := seen.list(); got != "proxy:body_size,proxy:body_size" {
		t.Errorf("refusals recorded: %s", got)
	}
}

// Past the bound, a request with a body is refused at once with 503 and Retry-After; one without
// a body (a health check) is served; and the bytes are given back when the handlers return.
func TestWrapShedsLoadBeyondTheBound(t *testing.T) {
	g := New(10 << 10)
	var seen refusals
	g.Refused = seen.add
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	srv := httptest.NewServer(g.Wrap("api", 64<<10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			entered <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	})))
	defer srv.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(make([]byte, 8<<10)))
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	if g.Held() != 8<<10 {
		t.Errorf("held %d, want the first body's 8192", g.Held())
	}
	resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(make([]byte, 4<<10)))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(msg), `"code":14`) {
		t.Errorf("over the bound: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), msg)
	}
	resp, err = http.Get(srv.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a request without a body during the load: %v %v", resp, err)
	}
	resp.Body.Close()
	close(release)
	wg.Wait()
	if g.Held() != 0 {
		t.Errorf("held %d after the requests", g.Held())
	}
	if got := seen.list(); got != "api:load" {
		t.Errorf("refusals recorded: %s", got)
	}
}

// A client that declares a large body and sends a byte holds a small buffer, not what it
// declared: many such connections cannot take the bound from everyone else.
func TestSlowSendersHoldWhatTheySent(t *testing.T) {
	g := New(4 << 20)
	srv := httptest.NewServer(g.Wrap("api", 2<<20, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	defer srv.Close()
	var conns []net.Conn
	for i := 0; i < 8; i++ {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: "+strconv.Itoa(2<<20-1)+"\r\n\r\n{")
	}
	deadline := time.Now().Add(5 * time.Second)
	for g.Held() < 8*firstChunk && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := g.Held(); got != 8*firstChunk {
		t.Errorf("8 connections that sent a byte each hold %d bytes, want %d", got, 8*firstChunk)
	}
	for _, c := range conns {
		c.Close()
	}
	for g.Held() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g.Held() != 0 {
		t.Errorf("held %d after the connections closed", g.Held())
	}
}

// Under a flood of large bodies, the last eighth of the bound is kept for small ones.
func TestSmallBodiesKeepTheirShare(t *testing.T) {
	g := New(1 << 20)
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	srv := httptest.NewServer(g.Wrap("api", 2<<20, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 800<<10 {
			entered <- struct{}{}
			<-release
		}
	})))
	defer srv.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(make([]byte, 800<<10))); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	for _, tc := range []struct {
		size int
		want int
	}{{100 << 10, http.StatusServiceUnavailable}, {1 << 10, http.StatusOK}, {SmallBody, http.StatusOK}} {
		resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(make([]byte, tc.size)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%d bytes beside 800 KiB held of 1 MiB: %d, want %d", tc.size, resp.StatusCode, tc.want)
		}
	}
	close(release)
	<-done
}
