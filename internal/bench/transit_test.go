package bench

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestTransitSign runs the transit_sign op against a stand-in that checks what OpenBao's transit
// engine is sent: the key in the path, sha2-256, the token header, a prehashed 32-byte input.
func TestTransitSign(t *testing.T) {
	var ok, bad atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Input     string `json:"input"`
			Prehashed bool   `json:"prehashed"`
		}
		err := json.NewDecoder(r.Body).Decode(&in)
		d, derr := base64.StdEncoding.DecodeString(in.Input)
		if r.URL.EscapedPath() != "/v1/transit/sign/bench%2Fkey/sha2-256" ||
			r.Header.Get("X-Vault-Token") != "s.token" || err != nil || derr != nil || len(d) != 32 || !in.Prehashed {
			bad.Add(1)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		ok.Add(1)
		_, _ = w.Write([]byte(`{"data":{"signature":"vault:v1:MEUCIQ"}}`))
	}))
	defer srv.Close()
	r, err := Run(context.Background(), Config{APIURL: srv.URL, Op: "transit_sign", Concurrency: 2,
		Duration: 300 * time.Millisecond, FloorDuration: -1, Presign: 200, TransitKey: "bench/key", TransitToken: "s.token"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors != 0 || r.Requests == 0 || bad.Load() != 0 || ok.Load() < int64(r.Requests) {
		t.Fatalf("%+v, %d refused by the stand-in", r, bad.Load())
	}
	if _, err := Run(context.Background(), Config{APIURL: srv.URL, Op: "transit_sign", Concurrency: 1,
		Duration: time.Millisecond, FloorDuration: -1}); err == nil {
		t.Fatal("transit_sign without a key and token ran")
	}
}
