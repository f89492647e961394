// Command latchkey is the Latchkey server and its operator tools in one binary:
//
//	latchkey serve    run the activity API and the auth proxy (and, as it arrives, the dashboard)
//	latchkey init     create a top-level organization with a root user and API key
//	latchkey keys     print the server's public keys
//	latchkey proxy    configure an organization's auth proxy (enable, update, disable, show)
//	latchkey bench    load-test a running server with freshly stamped requests
//	latchkey keygen   create an API key pair in the key directory (the client's keys)
//	latchkey request  send a stamped request to the activity API (or a request to an auth proxy)
//	latchkey export   decrypt an export bundle (export decrypt)
//	latchkey version  print the version
//
// Every flag may also be given as an environment variable LATCHKEY_<FLAG IN UPPER SNAKE CASE>
// (--data-dir is LATCHKEY_DATA_DIR); a flag on the command line wins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(os.Stderr, "latchkey:", err)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "latchkey:", err)
		os.Exit(1)
	}
}

type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

const usage = `usage: latchkey <command> [flags]

commands:
  serve     run Latchkey
  init      create a top-level organization
  keys      print the server's public keys as JSON
  proxy     configure an organization's auth proxy (proxy enable|update|disable|show --org ID)
  operator  create a dashboard operator account (operator create --email E --password-file F)
  access    grant or revoke a beta feature for an organization (access grant|revoke --org ID --feature F)
  keyring   rotate the data key that seals secrets (keyring rotate)
  bench     load-test a running Latchkey
  version   print the version

client commands:
  keygen    create an API key pair in the key directory and print its public key
  request   stamp a request with a key and send it (--proxy: to an auth proxy)
  export    decrypt an export bundle to the mnemonic or key (export decrypt)

Run "latchkey <command> -h" for a command's flags. Every flag can also be set with an
environment variable LATCHKEY_<FLAG_NAME> (e.g. LATCHKEY_DATA_DIR).`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return usageError{"no command given"}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
		defer stop()
		return cmdServe(ctx, rest, stdout, stderr)
	case "init":
		return cmdInit(ctx, rest, stdout, stderr)
	case "keys":
		return cmdKeys(ctx, rest, stdout, stderr)
	case "operator":
		return cmdOperator(ctx, rest, stdout, stderr)
	case "access":
		return cmdAccess(ctx, rest, stdout, stderr)
	case "proxy":
		return cmdProxy(ctx, rest, stdout, stderr)
	case "bench":
		ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
		defer stop()
		return cmdBench(ctx, rest, stdout, stderr)
	case "keyring":
		return cmdKeyring(ctx, rest, stdout, stderr)
	case "keygen":
		return cmdKeygen(ctx, rest, stdout, stderr)
	case "request":
		return cmdRequest(ctx, rest, stdout, stderr)
	case "export":
		return cmdExport(ctx, rest, stdout, stderr)
	case "version", "--version", "-version":
		return cmdVersion(stdout)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	fmt.Fprintln(stderr, usage)
	return usageError{fmt.Sprintf("unknown command %q", cmd)}
}

// parseFlags parses args into fs, then fills every flag not given on the command line from its
// environment variable LATCHKEY_<NAME>.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		if v, ok := os.LookupEnv(EnvName(f.Name)); ok {
			if e := f.Value.Set(v); e != nil {
				err = usageError{fmt.Sprintf("%s=%q: %v", EnvName(f.Name), v, e)}
			}
		}
	})
	return err
}

// EnvName is the environment variable of a flag: LATCHKEY_ + upper snake case.
func EnvName(flagName string) string {
	return "LATCHKEY_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Sprintf("--log-level: %v", err)}
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// appendFlag is a repeatable, comma-separated list flag: every use adds to the list.
type appendFlag []string

func (l *appendFlag) String() string { return strings.Join(*l, ",") }
func (l *appendFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// listFlag is a comma-separated list flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	*l = nil
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}
