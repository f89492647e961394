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
type sealStatus server.SealStatus

func (s sealStatus) String() string {
	if !s.Sealed {
		return "Latchkey is unsealed."
	}
	return fmt.Sprintf("Latchkey is sealed: %d of the %d shares needed given (%d exist).", s.Progress, s.Threshold, s.Shares)
}

// shareReader reads shares one at a time: from the terminal without echo, or line by line from
// stdin when it is not a terminal. The caller wipes each.
func shareReader(stderr io.Writer) func(server.SealStatus) ([]byte, error) {
	var lines *bufio.Reader
	return func(st server.SealStatus) ([]byte, error) {
		if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			fmt.Fprintf(stderr, "Unseal share (%d of %d needed given; input is hidden): ", st.Progress, st.Threshold)
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(stderr)
			return b, err
		}
		if lines == nil {
			lines = bufio.NewReaderSize(stdin, 512)
		}
		line, err := lines.ReadSlice('\n')
		if len(line) == 0 && err == io.EOF {
			return nil, fmt.Errorf("no share on stdin (%d of the %d needed given)", st.Progress, st.Threshold)
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("reading a share from stdin: %w", err)
		}
		return append([]byte(nil), line...), nil
	}
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
		st, err := fetchSealStatus(ctx, client, *apiURL)
		if err != nil {
			return err
		}
		if !st.Sealed {
			fmt.Fprintln(stdout, st)
			return nil
		}
		share, err := shareReader(stderr)(server.SealStatus(st))
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
	var st sealStatus
	var err error
	if body == nil {
		st, err = fetchSealStatus(ctx, client, *apiURL)
	} else {
		st, err = sealCall(ctx, client, http.MethodPut, *apiURL, server.UnsealPath, body, map[string]string{"Content-Type": "application/json"})
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, st)
	return nil
}

func fetchSealStatus(ctx context.Context, client *http.Client, base string) (sealStatus, error) {
	return sealCall(ctx, client, http.MethodGet, base, server.SealStatusPath, nil, nil)
}

// sealCall sends a request to a seal endpoint and reads the seal status it answers.
func sealCall(ctx context.Context, client *http.Client, method, base, path string, body []byte, headers map[string]string) (sealStatus, error) {
	var st sealStatus
	target, err := joinURL(base, path)
	if err != nil {
		return st, err
	}
	h := map[string]string{"Accept": "application/json"}
	for k, v := range headers {
		h[k] = v
	}
	out, err := send(ctx, client, method, base, target, body, h)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return st, fmt.Errorf("%s answered no seal status: %v", base, err)
	}
	return st, nil
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
	s, err := sealCall(ctx, &http.Client{Timeout: *timeout}, http.MethodPut, *apiURL, server.SealPath, body, map[string]string{"Content-Type": "application/json", name: value})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, s)
	return nil
}
