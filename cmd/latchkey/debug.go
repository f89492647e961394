package main

import (
	"log/slog"
	"net/http"
	"net/http/pprof"

	"github.com/latchkey/latchkey/internal/server"
)

// serveDebug serves Go's profiling endpoints on their own listener (never on the API's).
func serveDebug(addr string, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	log.Info("pprof listening", "addr", addr)
	// The listeners' timeouts and header limit, but no write timeout: a CPU profile or trace
	// answers after the seconds it was asked to run.
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: server.ReadHeaderTimeout,
		ReadTimeout: server.ReadTimeout, IdleTimeout: server.IdleTimeout, MaxHeaderBytes: server.DefaultMaxHeaderBytes}
	if err := srv.ListenAndServe(); err != nil {
		log.Error("pprof listener", "err", err)
	}
}
