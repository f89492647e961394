package bench

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestConnSend(t *testing.T) {
	var conns atomic.Int32
	big := bytes.Repeat([]byte("x"), 10000)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("X-Stamp") != "st" ||
			r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case "/base/small":
			_, _ = w.Write(b)
		case "/base/big": // chunked
			_, _ = w.Write(big)
		case "/base/trailer": // chunked, with a trailer
			w.Header().Set("Trailer", "X-Done")
			_, _ = w.Write(b)
			w.(http.Flusher).Flush()
			_, _ = w.Write(b)
			w.Header().Set("X-Done", "yes")
		case "/base/close":
			w.Header().Set("Connection", "close")
			_, _ = w.Write(b)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte("no such path"))
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := newConn(context.Background(), srv.URL+"/base")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send := func(path string) error {
		return c.send(stamped{path: path, header: "X-Stamp", value: "st", body: []byte(`{"a":1}`)})
	}
	for range 3 {
		if err := send("/small"); err != nil || string(c.body) != `{"a":1}` {
			t.Fatalf("small: %v %q", err, c.body)
		}
		if err := send("/big"); err != nil || !bytes.Equal(c.body, big) {
			t.Fatalf("big: %v, %d bytes", err, len(c.body))
		}
		if err := send("/trailer"); err != nil || string(c.body) != `{"a":1}{"a":1}` {
			t.Fatalf("trailer: %v %q", err, c.body)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1 (keep-alive)", n)
	}
	if err := send("/missing"); err == nil || !strings.Contains(err.Error(), "HTTP 404: no such path") {
		t.Fatalf("missing: %v", err)
	}
	if err := send("/close"); err != nil || c.c != nil {
		t.Fatalf("close: %v, open %v", err, c.c != nil)
	}
	if err := send("/small"); err != nil || string(c.body) != `{"a":1}` {
		t.Fatalf("after close: %v %q", err, c.body)
	}
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
}

func TestConnEndsWithContext(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-block }))
	defer srv.Close()
	defer close(block)
	ctx, cancel := context.WithCancel(context.Background())
	c, err := newConn(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- c.send(stamped{path: "/", header: "X-Stamp", value: "v", body: []byte("{}")}) }()
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a request cut off by its context succeeded")
	}
}

// TestConnBodyToEOF reads an answer whose body ends with the connection.
func TestConnBodyToEOF(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = http.ReadRequest(bufio.NewReader(nc))
			_, _ = io.WriteString(nc, "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"to\":\"eof\"}")
			nc.Close()
		}
	}()
	c, err := newConn(context.Background(), "http://"+ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 2 {
		if err := c.send(stamped{path: "/", header: "X-Stamp", value: "v", body: []byte("{}")}); err != nil ||
			string(c.body) != `{"to":"eof"}` || c.c != nil {
			t.Fatalf("%v %q, open %v", err, c.body, c.c != nil)
		}
	}
}
