package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/latchkey/latchkey/internal/bench"
)

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	apiURL := fs.String("api-url", "http://127.0.0.1:8080", "base URL of the activity API")
	credsFile := fs.String("credentials", "./latchkey-data/dev-credentials.json", "API key file (organizationId, apiPrivateKey, curve), as serve --dev writes it")
	op := fs.String("op", "whoami", "operation: whoami, create_user_tag or sign_raw_payload")
	conc := fs.Int("concurrency", 1, "concurrent clients")
	dur := fs.Duration("duration", 10*time.Second, "how long to send load")
	signWith := fs.String("sign-with", "", "sign_raw_payload: the wallet account address or private key id to sign with (empty: create a wallet first)")
	curve := fs.String("curve", "secp256k1", "sign_raw_payload without --sign-with: secp256k1 (Ethereum account) or ed25519 (Solana account)")
	nPolicies := fs.Int("policies", 0, "sign_raw_payload: sign as a new non-root user allowed by the last of this many policies (0: as the root user, which policies never restrict)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	creds, err := bench.LoadCredentials(*credsFile)
	if err != nil {
		return err
	}
	r, err := bench.Run(ctx, bench.Config{APIURL: *apiURL, Creds: creds, Op: *op, Concurrency: *conc, Duration: *dur, SignWith: *signWith, Curve: *curve, Policies: *nPolicies})
	if err != nil {
		return err
	}
	if *asJSON {
		b, _ := json.Marshal(r)
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprintln(stdout, r.String())
	}
	if r.Errors > 0 {
		fmt.Fprintf(stderr, "first error: %s\n", r.FirstError)
	}
	return nil
}
