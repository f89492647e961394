package client

// The seal commands of a --seal shamir server: unseal (one share to a sealed server) and seal (a
// running server back to sealed, stamped by a root user's API key).

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"golang.org/x/term"
)

// The server's seal endpoints (internal/server's UnsealPath, SealStatusPath and SealPath).
const (
	unsealPath     = "/v1/sys/unseal"
	sealStatusPath = "/v1/sys/seal-status"
	sealPath       = "/v1/sys/seal"
)

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
	return fmt.Sprintf(
		"Latchkey is sealed: %d of the %d shares needed given (%d exist).",
		s.Progress,
		s.Threshold,
		s.Shares,
	)
}

// ShareReader reads unseal shares one at a time from in: from the terminal without echo (the
// prompt, naming the progress, on prompt), or line by line when in is not a terminal. The
// caller wipes each share.
func ShareReader(in io.Reader, prompt io.Writer) func(given, needed int) ([]byte, error) {
	var lines *bufio.Reader
	return func(given, needed int) ([]byte, error) {
		if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			fmt.Fprintf(prompt, "Unseal share (%d of %d needed given; input is hidden): ", given, needed)
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(prompt)
			return b, err
		}
		if lines == nil {
			lines = bufio.NewReaderSize(in, 512)
		}
		line, err := lines.ReadSlice('\n')
		if len(line) == 0 && err == io.EOF {
			return nil, fmt.Errorf("no share on stdin (%d of the %d needed given)", given, needed)
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("reading a share from stdin: %w", err)
		}
		return append([]byte(nil), line...), nil
	}
}

// Unseal gives a sealed server one share (or, with --status, prints the seal status; with
// --reset, forgets the shares given so far).
func (c Commands) Unseal(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("unseal", flag.ContinueOnError)
	apiURL := fs.String("api-url", defaultAPIURL, "base URL of the sealed Latchkey's activity API")
	status := fs.Bool("status", false, "print the seal status only")
	reset := fs.Bool("reset", false, "forget the shares given so far")
	timeout := fs.Duration("timeout", 60*time.Second, "HTTP timeout")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	hc := &http.Client{Timeout: *timeout}
	st, err := sealCall(ctx, hc, http.MethodGet, *apiURL, sealStatusPath, nil, nil)
	switch {
	case err != nil || *status || !st.Sealed && !*reset:
	case *reset:
		st, err = sealCall(
			ctx,
			hc,
			http.MethodPut,
			*apiURL,
			unsealPath,
			[]byte(`{"reset":true}`),
			map[string]string{"Content-Type": "application/json"},
		)
	default:
		var share []byte
		share, err = ShareReader(c.Stdin, c.Stderr)(st.Progress, st.Threshold)
		defer clear(share)
		if err != nil {
			return err
		}
		body := append(make([]byte, 0, len(share)+12), `{"key":"`...)
		defer func() { clear(body) }()
		for _, ch := range share {
			switch {
			case ch >= '0' && ch <= '9', ch >= 'a' && ch <= 'f', ch >= 'A' && ch <= 'F', ch == '-', ch == ' ':
				body = append(body, ch)
			case ch == '\r', ch == '\n', ch == '\t':
			default:
				return UsageError{
					"that is not an unseal share: a share is the 88 hexadecimal characters latchkey init printed",
				}
			}
		}
		body = append(body, `"}`...)
		st, err = sealCall(
			ctx,
			hc,
			http.MethodPut,
			*apiURL,
			unsealPath,
			body,
			map[string]string{"Content-Type": "application/json"},
		)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(c.Stdout, st)
	return nil
}

// Seal seals a running --seal shamir server, stamped by an API key of a root user of a
// top-level organization.
func (c Commands) Seal(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("seal", flag.ContinueOnError)
	apiURL := fs.String("api-url", defaultAPIURL, "base URL of the Latchkey to seal")
	keyRef := fs.String(
		"key",
		"",
		"name of the API key to stamp with (a root user's of a top-level organization), or a key file path (required)",
	)
	keyDir := fs.String("key-dir", "", keyDirHelp)
	orgID := fs.String("organization-id", "", "the top-level organization of that user (required)")
	timeout := fs.Duration("timeout", 60*time.Second, "HTTP timeout (sealing waits for in-flight requests to finish)")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if *keyRef == "" || *orgID == "" {
		return UsageError{
			"--key and --organization-id are required: sealing is stamped by a root user of a top-level organization",
		}
	}
	k, err := loadKeyRef(*keyDir, *keyRef)
	if err != nil {
		return err
	}
	stamper, err := k.stamper()
	if err != nil {
		return err
	}
	body, _ := json.Marshal(
		map[string]string{"organizationId": *orgID, "timestampMs": strconv.FormatInt(time.Now().UnixMilli(), 10)},
	)
	name, value, err := stamper.Stamp(body)
	if err != nil {
		return fmt.Errorf("stamping: %w", err)
	}
	st, err := sealCall(
		ctx,
		&http.Client{Timeout: *timeout},
		http.MethodPut,
		*apiURL,
		sealPath,
		body,
		map[string]string{"Content-Type": "application/json", name: value},
	)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.Stdout, st)
	return nil
}

// sealCall sends a request to a seal endpoint and reads the seal status it answers.
func sealCall(
	ctx context.Context,
	hc *http.Client,
	method, base, path string,
	body []byte,
	headers map[string]string,
) (sealStatus, error) {
	var st sealStatus
	target, err := joinURL(base, path)
	if err != nil {
		return st, err
	}
	h := map[string]string{"Accept": "application/json"}
	for k, v := range headers {
		h[k] = v
	}
	out, err := send(ctx, hc, method, base, target, body, h)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return st, fmt.Errorf("%s answered no seal status: %v", base, err)
	}
	return st, nil
}
