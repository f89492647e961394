package main

// The seal commands of a --seal shamir deployment: serve's sealed start, unseal (one share to
// a running server) and seal (a running server back to sealed).

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"golang.org/x/term"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/server"
)

// serveSealed runs a --seal shamir server: listening at once, sealed until share holders give
// their shares (latchkey unseal).
func serveSealed(ctx context.Context, cfg server.Config, drain time.Duration, debugAddr string, log *slog.Logger) error {
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
		fmt.Fprintf(stderr, "latchkey: the master key is split into %d shares, shown ONCE below; Latchkey keeps none of them.\n"+
			"latchkey: give each to a different person and keep them apart: any %d of them unseal this deployment.\n", s.Len(), s.Threshold())
		if to != nil {
			return s.WriteEncrypted(stdout, to)
		}
		_, err := s.WriteTo(stdout)
		return err
	}
}

// sealStatus is the answer of the seal endpoints.
type sealStatus struct {
	Sealed    bool `json:"sealed"`
	Threshold int  `json:"threshold"`
	Shares    int  `json:"shares"`
	Progress  int  `json:"progress"`
}

func (s sealStatus) String() string {
	if !s.Sealed {
		return "Latchkey is unsealed."
	}
	return fmt.Sprintf("Latchkey is sealed: %d of the %d shares needed given (%d exist).", s.Progress, s.Threshold, s.Shares)
}

// readShare reads one share: from the terminal without echo, or the first line of stdin when
// it is not a terminal. The caller wipes it.
func readShare(stderr io.Writer) ([]byte, error) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(stderr, "Unseal share (input is hidden): ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		return b, err
	}
	line, err := bufio.NewReaderSize(stdin, 512).ReadSlice('\n')
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("reading the share from stdin: %w", err)
	}
	return append([]byte(nil), line...), nil
}

func cmdUnseal(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("unseal", flag.ContinueOnError)
	fs.SetOutput(stderr)
	apiURL := fs.String("api-url", defaultAPIURL, "base URL of the sealed Latchkey's activity API")
	status := fs.Bool("status", false, "print the seal status only")
	reset := fs.Bool("reset", false, "forget the shares given so far")
	timeout := fs.Duration("timeout", 60*time.Second, "HTTP timeout")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	client := &http.Client{Timeout: *timeout}
	var body []byte
	switch {
	case *status:
	case *reset:
		body = []byte(`{"reset":true}`)
	default:
		share, err := readShare(stderr)
		defer clear(share)
		if err != nil {
			return err
		}
		body = append(body, `{"key":"`...)
		for _, c := range share {
			switch {
			case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F', c == '-', c == ' ':
				body = append(body, c)
			case c == '\r', c == '\n', c == '\t':
			default:
				clear(body)
				return usageError{"that is not an unseal share: a share is the 88 hexadecimal characters latchkey init printed"}
			}
		}
		body = append(body, `"}`...)
		defer clear(body)
	}
	method, path := http.MethodPut, server.UnsealPath
	if body == nil {
		method, path = http.MethodGet, server.SealStatusPath
	}
	target, err := joinURL(*apiURL, path)
	if err != nil {
		return err
	}
	out, err := send(ctx, client, method, *apiURL, target, body, map[string]string{"Content-Type": "application/json", "Accept": "application/json"})
	if err != nil {
		return err
	}
	var st sealStatus
	if err := json.Unmarshal(out, &st); err != nil {
		return fmt.Errorf("%s answered no seal status: %v", *apiURL, err)
	}
	fmt.Fprintln(stdout, st)
	return nil
}

func cmdSeal(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("seal", flag.ContinueOnError)
	fs.SetOutput(stderr)
	apiURL := fs.String("api-url", defaultAPIURL, "base URL of the Latchkey to seal")
	keyRef := fs.String("key", "", "name of the API key to stamp with (a root user's of a top-level organization), or a key file path (required)")
	keyDir := fs.String("key-dir", "", keyDirHelp)
	orgID := fs.String("organization-id", "", "the top-level organization of that user (required)")
	timeout := fs.Duration("timeout", 60*time.Second, "HTTP timeout (sealing waits for in-flight requests to finish)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *keyRef == "" || *orgID == "" {
		return usageError{"--key and --organization-id are required: sealing is stamped by a root user of a top-level organization"}
	}
	k, err := loadKeyRef(*keyDir, *keyRef)
	if err != nil {
		return err
	}
	st, err := k.stamper()
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]string{"organizationId": *orgID, "timestampMs": strconv.FormatInt(time.Now().UnixMilli(), 10)})
	name, value, err := st.Stamp(body)
	if err != nil {
		return fmt.Errorf("stamping: %w", err)
	}
	target, err := joinURL(*apiURL, server.SealPath)
	if err != nil {
		return err
	}
	out, err := send(ctx, &http.Client{Timeout: *timeout}, http.MethodPut, *apiURL, target, body, map[string]string{"Content-Type": "application/json", name: value})
	if err != nil {
		return err
	}
	var s sealStatus
	if err := json.Unmarshal(out, &s); err != nil {
		return fmt.Errorf("%s answered no seal status: %v", *apiURL, err)
	}
	fmt.Fprintln(stdout, s)
	return nil
}
