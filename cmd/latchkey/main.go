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
// (--data-dir is LATCHKEY_DATA_DIR), or LATCHKEY_<FLAG>_FILE naming a file holding it, and
// serve's flags in a YAML file (--config); a flag on the command line wins over the
// environment, which wins over the file. Secrets come only from the environment or files.
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

	"github.com/latchkey/latchkey/internal/client"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h printed the command's flags: asking for help is no error
		}
		if isUsageError(err) {
			fmt.Fprintln(os.Stderr, "latchkey:", err)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "latchkey:", err)
		os.Exit(1)
	}
}

// ExitInterrupted is serve's exit code when a second SIGTERM or Ctrl-C arrives while it drains
// in-flight requests: it exits at once, cutting them off (docs/operations.md).
const ExitInterrupted = 3

// drainOnSignal returns a context that ends at the first SIGTERM or Ctrl-C (serve then drains
// in-flight requests, up to --drain-timeout); a second signal exits at once.
func drainOnSignal(ctx context.Context, stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-done:
			return
		}
		select {
		case <-sigs:
			fmt.Fprintln(
				stderr,
				"latchkey: second signal while draining: exiting at once, in-flight requests are cut off",
			)
			os.Exit(ExitInterrupted)
		case <-done:
		}
	}()
	return ctx, func() { signal.Stop(sigs); close(done); cancel() }
}

type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

// isUsageError says whether err is a mistake in the command line (exit code 2), of a command
// here or of the client's.
func isUsageError(err error) bool {
	var ue usageError
	var ce client.UsageError
	return errors.As(err, &ue) || errors.As(err, &ce)
}

// clientCommands are the client commands (keygen, request, export), reading flags as every
// command here does.
func clientCommands(stdout, stderr io.Writer) client.Commands {
	return client.Commands{Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, ParseFlags: parseFlags}
}

const usage = `usage: latchkey <command> [flags]

commands:
  serve     run Latchkey
  init      create a top-level organization
  keys      print the server's public keys as JSON
  proxy     configure an organization's auth proxy (proxy enable|update|disable|show --org ID)
  operator  create a dashboard operator account (operator create --email E --password-file F)
  access    grant or revoke a beta feature for an organization (access grant|revoke --org ID --feature F)
  history   index a wallet account's past EVM transactions (history backfill --caip2 C --address A --from-block N …)
  keyring   the keys that seal secrets: rotate (a new data key), rewrap (a new master key), status
  gas-station show: the gas sponsor keys' addresses to fund (EVM paymaster, Solana fee payer)
  unseal    give a sealed Latchkey (--seal shamir) one share: latchkey unseal --api-url URL
  seal      seal a running --seal shamir Latchkey (stamped by a root user's API key)
  completion print a shell completion script: latchkey completion bash|zsh|fish
  backup    write a consistent snapshot of an embedded deployment while it serves (--to FILE)
  restore   put a snapshot in place as a new data directory's database (--from FILE)
  migrate-store copy an embedded deployment into an empty PostgreSQL (--from DATA_DIR --to postgres://…)
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
		ctx, stop := drainOnSignal(ctx, stderr)
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
	case "history":
		return cmdHistory(ctx, rest, stdout, stderr)
	case "proxy":
		return cmdProxy(ctx, rest, stdout, stderr)
	case "bench":
		ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
		defer stop()
		return cmdBench(ctx, rest, stdout, stderr)
	case "keyring":
		return cmdKeyring(ctx, rest, stdout, stderr)
	case "gas-station":
		return cmdGasStation(ctx, rest, stdout, stderr)
	case "backup":
		return cmdBackup(ctx, rest, stdout, stderr)
	case "restore":
		return cmdRestore(ctx, rest, stdout, stderr)
	case "migrate-store":
		return cmdMigrateStore(ctx, rest, stdout, stderr)
	case "keygen":
		return clientCommands(stdout, stderr).Keygen(ctx, rest)
	case "unseal":
		return clientCommands(stdout, stderr).Unseal(ctx, rest)
	case "seal":
		return clientCommands(stdout, stderr).Seal(ctx, rest)
	case "completion":
		return cmdCompletion(rest, stdout)
	case "request":
		return clientCommands(stdout, stderr).Request(ctx, rest)
	case "export":
		return clientCommands(stdout, stderr).Export(ctx, rest)
	case "version", "--version", "-version":
		return cmdVersion(stdout)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	fmt.Fprintln(stderr, usage)
	return usageError{fmt.Sprintf("unknown command %q%s", cmd, didYouMean(cmd, commands, false))}
}

// parseFlags parses args into fs, then fills every flag not given on the command line from its
// environment variable LATCHKEY_<NAME> (or the file LATCHKEY_<NAME>_FILE names), then, when fs
// has a --config flag naming a file, every flag still unset from that file: flag > environment >
// file. Secret flags are refused on the command line.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
			var names []string
			fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
			msg += didYouMean(strings.TrimPrefix(name, "-"), names, true)
		}
		return usageError{msg}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name := range given {
		if secretFlags[name] {
			return usageError{
				fmt.Sprintf(
					"--%s is a secret: give it in %s or in a file named by %s_FILE (a command line is visible to every user of the machine)",
					name,
					EnvName(name),
					EnvName(name),
				),
			}
		}
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		if v, ok := os.LookupEnv(EnvName(f.Name)); ok {
			given[f.Name] = true
			if e := f.Value.Set(v); e != nil {
				if secretFlags[f.Name] {
					v = "…" // never echo a secret
				}
				err = usageError{fmt.Sprintf("%s=%q: %v", EnvName(f.Name), v, e)}
			}
			return
		}
		// LATCHKEY_<FLAG>_FILE names a file holding the value (a container or systemd secret):
		// its content, less trailing newlines. Its value is never echoed in an error.
		if path, ok := os.LookupEnv(EnvName(f.Name) + "_FILE"); ok {
			b, e := os.ReadFile(path)
			if e != nil {
				err = usageError{fmt.Sprintf("%s_FILE: %v", EnvName(f.Name), e)}
				return
			}
			given[f.Name] = true
			if e := f.Value.Set(strings.TrimRight(string(b), "\r\n")); e != nil {
				err = usageError{
					fmt.Sprintf("%s_FILE=%q: the file's value is not valid for --%s", EnvName(f.Name), path, f.Name),
				}
			}
		}
	})
	if err != nil {
		return err
	}
	if cf := fs.Lookup(configFlag); cf != nil && cf.Value.String() != "" {
		return applyConfigFile(fs, cf.Value.String(), given)
	}
	return nil
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

// listFlag is the one list flag: comma-separated, and repeatable, every use adding to the list
// (--chain-rpc a --chain-rpc b is --chain-rpc a,b; a configuration file gives it as a YAML list).
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// commands are the command names (for suggestions and completion).
var commands = []string{"serve", "init", "keys", "operator", "access", "history", "proxy", "bench", "keyring", "backup",
	"restore", "migrate-store", "keygen", "request", "export", "version", "completion", "help", "unseal", "seal",
	"gas-station"}

// didYouMean suggests the closest of names to a mistyped one (edit distance at most 2, or a
// prefix), as "; did you mean X?" (flags spelled --X).
func didYouMean(typed string, names []string, flags bool) string {
	best, bestD := "", 3
	for _, n := range names {
		d := bestD
		if strings.HasPrefix(n, typed) && len(typed) >= 3 {
			d = 1
		} else if abs(len(n)-len(typed)) < bestD {
			// Two strings are at least their difference in length apart: only names near the
			// typed one's length are measured, so a long typed name costs nothing more.
			d = editDistance(typed, n)
		}
		if d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	if flags {
		return fmt.Sprintf("; did you mean --%s?", best)
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

func abs(x int) int { return max(x, -x) }

func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
