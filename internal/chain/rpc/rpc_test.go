package rpc

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCall(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case strings.Contains(string(b), `"flaky"`) && n.Add(1) < 3:
			w.WriteHeader(http.StatusServiceUnavailable)
		case strings.Contains(string(b), `"bad"`):
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"nonce too low"}}`))
		default:
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x10"}`))
		}
	}))
	defer srv.Close()
	c := &Client{Network: "eip155:1", URL: srv.URL + "/?key=SECRET", Backoff: time.Millisecond}
	var out string
	if err := c.Call(context.Background(), "flaky", nil, &out); err != nil || out != "0x10" || c.Calls.Load() != 3 {
		t.Fatalf("flaky: %q %v after %d calls", out, err, c.Calls.Load())
	}
	var re *Error
	if err := c.Call(context.Background(), "bad", nil, &out); !errors.As(err, &re) || re.Code != -32000 ||
		!strings.Contains(err.Error(), "eip155:1") {
		t.Fatalf("rpc error: %v", err)
	}
	srv.Close()
	err := c.Call(context.Background(), "eth_chainId", nil, &out)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "eip155:1") ||
		strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("down: %v", err)
	}
}
