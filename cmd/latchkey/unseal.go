package main

// The server side of a --seal shamir deployment's commands: serve's sealed start, init's
// shares, the shares an operator command asks for (the unseal and seal commands are the
// client's, internal/client).

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/server"
)

// shareInput is where an operator command reads shares (tests replace it).
var shareInput io.Reader = os.Stdin

// serveSealed runs a --seal shamir server: listening at once, sealed until share holders give
// their shares (latchkey unseal).
func serveSealed(
	ctx context.Context,
	cfg server.Config,
	drain time.Duration,
	debugAddr string,
	log *slog.Logger,
) error {
	z, err := server.OpenSealed(ctx, cfg)
	if err != nil {
		return err
	}
	if debugAddr != "" {
		go serveDebug(debugAddr, log)
	}
	return z.Run(ctx, drain, func(string) {
		if err := custody.MemoryProtection(); err != nil {
			log.Warn("the master key's memory is not fully protected", "err", err)
		}
	})
}

// printShares is init's Config.NewShares: the shares on stdout, once, each labelled (each
// encrypted to its recipient when to is given).
func printShares(stdout, stderr io.Writer, to custody.ShareRecipients) func(*custody.Shares) error {
	return func(s *custody.Shares) error {
		fmt.Fprintf(
			stderr,
			"latchkey: the master key is split into %d shares, shown ONCE below; Latchkey keeps none of them.\n"+
				"latchkey: give each to a different person and keep them apart: any %d of them unseal this deployment.\n",
			s.Len(),
			s.Threshold(),
		)
		if to != nil {
			return s.WriteEncrypted(stdout, to)
		}
		_, err := s.WriteTo(stdout)
		return err
	}
}

// shareReader asks for shares on stdin (hidden on a terminal) for OpenWithShares.
func shareReader(stderr io.Writer) func(server.SealStatus) ([]byte, error) {
	read := client.ShareReader(shareInput, stderr)
	return func(st server.SealStatus) ([]byte, error) { return read(st.Progress, st.Threshold) }
}
