package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
)

// cmdGasStation is `latchkey gas-station show`: the sponsor keys' addresses, which the operator
// funds (docs/gas-station.md, "Operator configuration"). The keys are made on the first start of
// the deployment; show makes them if no server has started yet.
func cmdGasStation(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "show" {
		return usageError{"latchkey gas-station show [store flags]: print the sponsor keys' addresses as JSON"}
	}
	fs := flag.NewFlagSet("gas-station show", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	s, err := sf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer s.Close()
	b, _ := json.MarshalIndent(s.SponsorAddresses(), "", "  ")
	fmt.Fprintln(stdout, string(b))
	return nil
}
