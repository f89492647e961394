package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/ops/chaindata"
)

const accessUsage = `usage: latchkey access <grant|revoke> --org ORG_ID --feature FEATURE

Grants or revokes a beta feature for an organization (and its sub-organizations). Features:
  wallet-balances   get_wallet_address_balances

Changes apply to running servers at once.`

// cmdAccess grants operator-gated features (wallet balances are a beta that needs access).
func cmdAccess(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "grant" && args[0] != "revoke") {
		fmt.Fprintln(stderr, accessUsage)
		return usageError{"access: give grant or revoke"}
	}
	fs := flag.NewFlagSet("access "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	org := fs.String("org", "", "the organization's id (required)")
	feature := fs.String("feature", "", "the feature: "+strings.Join(chaindata.Features, ", ")+" (required)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *org == "" || *feature == "" {
		return usageError{"--org and --feature are required"}
	}
	s, err := sf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer s.Close()
	on := args[0] == "grant"
	if err := chaindata.SetGrant(ctx, s.Store, *org, *feature, on, time.Now().UTC()); err != nil {
		return err
	}
	action := "access granted"
	if !on {
		action = "access revoked"
	}
	audit(ctx, s.Store, stderr, action, *org, map[string]string{"feature": *feature})
	return writeJSON(stdout, map[string]any{"organizationId": *org, "feature": *feature, "granted": on})
}
