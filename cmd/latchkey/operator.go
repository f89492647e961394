package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/dashboard"
)

// cmdOperator manages the dashboard's operator accounts.
func cmdOperator(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprintln(stderr, "usage: latchkey operator create --email E --password-file F [store flags]")
		return usageError{"operator: give create"}
	}
	fs := flag.NewFlagSet("operator create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	email := fs.String("email", "", "the operator's e-mail address (required)")
	pwFile := fs.String("password-file", "", "file holding the password (at least 12 characters; required)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *email == "" || *pwFile == "" {
		return usageError{"--email and --password-file are required"}
	}
	b, err := os.ReadFile(*pwFile)
	if err != nil {
		return usageError{fmt.Sprintf("--password-file: %v", err)}
	}
	s, err := sf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer s.Close()
	o, err := dashboard.CreateOperator(ctx, s.Store, *email, strings.TrimRight(string(b), "\r\n"), time.Now().UTC())
	if err != nil {
		return err
	}
	return writeJSON(stdout, map[string]string{"operatorId": o.ID, "email": o.Email})
}
