package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/stamp"
)

// TestMain lets a test run this binary's main as a child process (LATCHKEY_TEST_AS_MAIN=1), so
// signals and exit codes are real without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("LATCHKEY_TEST_AS_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func child(t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "LATCHKEY_TEST_AS_MAIN=1")
	return cmd
}

func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			fi, _ := d.Info()
			out = append(out, fmt.Sprintf("%s %d", p, fi.Size()))
		}
		return nil
	})
	slices.Sort(out)
	return out
}

func initDeployment(t *testing.T) (dir, mk string) {
	t.Helper()
	dir = t.TempDir()
	mk = filepath.Join(t.TempDir(), "master.key")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	_, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	if err := run(context.Background(), []string{"init", "--org-name", "Acme", "--user-name", "ops", "--api-public-key", pub,
		"--data-dir", dir, "--master-key-file", mk}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	return dir, mk
}

// A mistyped --data-dir made a new empty deployment and printed brand-new server keys with exit
// 0; every command but init and serve --dev now refuses a missing or empty data directory and
// writes nothing.
func TestCommandsRefuseAMissingDeployment(t *testing.T) {
	mk := filepath.Join(t.TempDir(), "master.key")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dir string }{
		{"missing directory", filepath.Join(t.TempDir(), "typo")},
		{"empty directory", t.TempDir()},
	} {
		for _, args := range [][]string{{"keys"}, {"keyring", "rotate"}, {"serve", "--api-addr", "127.0.0.1:0"},
			{"proxy", "show", "--org", "00000000-0000-4000-8000-000000000000"}, {"access", "grant", "--org", "00000000-0000-4000-8000-000000000000", "--feature", "wallet-balances"}} {
			t.Run(tc.name+"/"+args[0], func(t *testing.T) {
				before := listing(t, tc.dir)
				var out bytes.Buffer
				err := run(
					context.Background(),
					append(args, "--data-dir", tc.dir, "--master-key-file", mk),
					&out,
					io.Discard,
				)
				if err == nil || !strings.Contains(err.Error(), "no Latchkey deployment") {
					t.Fatalf("err = %v, printed %q", err, out.String())
				}
				if after := listing(t, tc.dir); !slices.Equal(before, after) {
					t.Fatalf("files written: %v → %v", before, after)
				}
			})
		}
	}
}

// serve --dev on a directory made by init wrote a stray master.key into it before failing; a
// 0-byte latchkey.db was treated as new and the dev credentials overwritten. Both are refused
// before anything is written.
func TestDevRefusesForeignOrEmptyDatabase(t *testing.T) {
	dir, _ := initDeployment(t)
	before := listing(t, dir)
	err := run(
		context.Background(),
		[]string{"serve", "--dev", "--data-dir", dir, "--api-addr", "127.0.0.1:0"},
		io.Discard,
		io.Discard,
	)
	if err == nil || !strings.Contains(err.Error(), "not made by --dev") {
		t.Fatalf("err = %v", err)
	}
	if after := listing(t, dir); !slices.Equal(before, after) {
		t.Fatalf("files written: %v → %v", before, after)
	}

	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, server.DatabaseFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(empty, "dev-credentials.json")
	if err := os.WriteFile(creds, []byte(`{"apiPrivateKey":"the one the user saved"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	before = listing(t, empty)
	for _, args := range [][]string{{"serve", "--dev"}, {"keys", "--dev"}, {"init", "--dev", "--org-name", "a", "--user-name", "b", "--api-public-key", "02aa"}} {
		err := run(
			context.Background(),
			append(args, "--data-dir", empty, "--api-addr", "127.0.0.1:0")[:len(args)+2],
			io.Discard,
			io.Discard,
		)
		if err == nil || !strings.Contains(err.Error(), "0 bytes") {
			t.Fatalf("%v on a 0-byte database: %v", args, err)
		}
	}
	if after := listing(t, empty); !slices.Equal(before, after) {
		t.Fatalf("files written: %v → %v", before, after)
	}
	if b, _ := os.ReadFile(creds); !strings.Contains(string(b), "the one the user saved") {
		t.Fatal("the dev credentials were overwritten")
	}
}

// A second serve on the same SQLite data directory is refused, naming the first's PID.
func TestSecondServeOnOneDataDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	first := child(
		t,
		"serve",
		"--dev",
		"--data-dir",
		dir,
		"--api-addr",
		"127.0.0.1:0",
		"--proxy-addr",
		"",
		"--dashboard-addr",
		"",
		"--frames-addr",
		"",
	)
	var logs syncBuffer
	first.Stderr = &logs
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Process.Kill(); _ = first.Wait() }()
	waitFor(
		t,
		func() bool { return strings.Contains(logs.String(), "latchkey api listening") },
		"the first serve to listen:\n"+logs.String(),
	)
	err := run(
		context.Background(),
		[]string{
			"serve",
			"--dev",
			"--data-dir",
			dir,
			"--api-addr",
			"127.0.0.1:0",
			"--proxy-addr",
			"",
			"--dashboard-addr",
			"",
			"--frames-addr",
			"",
		},
		io.Discard,
		io.Discard,
	)
	if err == nil ||
		!strings.Contains(err.Error(), "in use by another latchkey serve (pid "+strconv.Itoa(first.Process.Pid)+")") {
		t.Fatalf("second serve: %v", err)
	}
	// Operator commands run beside a serving process (they are how it is configured live).
	if err := run(context.Background(), []string{"keys", "--dev", "--data-dir", dir}, io.Discard, io.Discard); err != nil {
		t.Fatalf("keys beside a running serve: %v", err)
	}
}

// A second SIGTERM while serve drains exits at once with ExitInterrupted.
func TestSecondSignalDuringDrainExitsAtOnce(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := child(
		t,
		"serve",
		"--dev",
		"--data-dir",
		dir,
		"--api-addr",
		addr,
		"--proxy-addr",
		"",
		"--dashboard-addr",
		"",
		"--frames-addr",
		"",
		"--drain-timeout",
		"60s",
	)
	var logs syncBuffer
	srv.Stderr = &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill() }()
	waitFor(t, func() bool { return strings.Contains(logs.String(), "latchkey api listening") }, "serve to listen")
	// An in-flight request: headers and half of a body, so its handler waits in the read.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(
		conn,
		"POST /public/v1/query/whoami HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"organ",
	)
	time.Sleep(200 * time.Millisecond)
	_ = srv.Process.Signal(syscall.SIGTERM)
	waitFor(t, func() bool { return strings.Contains(logs.String(), "draining") }, "the drain to start")
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	select {
	case err := <-exited:
		t.Fatalf("serve did not wait for the in-flight request: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	start := time.Now()
	_ = srv.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupted {
			t.Fatalf("exit %v, want code %d", err, ExitInterrupted)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("took %v", time.Since(start))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second SIGTERM did not end the drain")
	}
	if !strings.Contains(logs.String(), "second signal") {
		t.Fatalf("no word of the forced exit:\n%s", logs.String())
	}
}

// syncBuffer is a buffer a child process writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(t *testing.T, ok func() bool, what string) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if ok() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// -h exits 0; a mistyped command or flag is answered with the closest one; completion scripts
// for bash, zsh and fish list the commands (bash's parses with bash -n).
func TestHelpSuggestionsAndCompletion(t *testing.T) {
	if err := child(t, "keygen", "-h").Run(); err != nil {
		t.Fatalf("keygen -h: %v (want exit 0)", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serv"}, `did you mean "serve"?`},
		{[]string{"kyes"}, `did you mean "keys"?`},
		{[]string{"keys", "--data-dri", "x"}, "did you mean --data-dir?"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
	} {
		err := run(context.Background(), c.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	if err := run(context.Background(), []string{"frobnicate"}, io.Discard, io.Discard); strings.Contains(
		err.Error(),
		"did you mean",
	) {
		t.Errorf("a suggestion for a word like no command: %v", err)
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		var out bytes.Buffer
		if err := run(context.Background(), []string{"completion", sh}, &out, io.Discard); err != nil ||
			!strings.Contains(out.String(), "serve") {
			t.Fatalf("completion %s: %v %q", sh, err, out.String())
		}
		if sh == "bash" {
			if bash, err := exec.LookPath("bash"); err == nil {
				cmd := exec.Command(bash, "-n")
				cmd.Stdin = &out
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("bash -n: %v %s", err, b)
				}
			}
		}
	}
	if err := run(context.Background(), []string{"completion", "tcsh"}, io.Discard, io.Discard); err == nil {
		t.Fatal("an unknown shell was accepted")
	}
}
