package storetest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// PostgresBinDirEnv names the directory of PostgreSQL's server binaries (initdb, pg_ctl) for
// PrivateCluster; by default the newest of /usr/lib/postgresql/*/bin.
const PostgresBinDirEnv = "LATCHKEY_TEST_PG_BIN"

// PrivateCluster starts a PostgreSQL server of the test's own (initdb in a temporary directory,
// on a free port of 127.0.0.1, trust authentication, fsync off), with settings as extra `-c`
// options, and returns its URL (database postgres); it is stopped and removed when the test
// ends. For what cannot be tried on a shared server: its replication settings, its restarts.
// It runs when LATCHKEY_TEST_DATABASE_URL is set (PostgreSQL tests are wanted) and skips the
// test when the binaries cannot be found. As root, the server runs as the postgres user.
func PrivateCluster(t testing.TB, settings ...string) (url string) {
	t.Helper()
	if os.Getenv("LATCHKEY_TEST_DATABASE_URL") == "" {
		t.Skip("LATCHKEY_TEST_DATABASE_URL not set: this test needs PostgreSQL")
	}
	bin := os.Getenv(PostgresBinDirEnv)
	if bin == "" {
		dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
		if len(dirs) == 0 {
			t.Skip("PostgreSQL server binaries not found: set " + PostgresBinDirEnv)
		}
		bin = dirs[len(dirs)-1]
	}
	dir, err := os.MkdirTemp("", "latchkey-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	var as []string
	if os.Geteuid() == 0 {
		pg, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("running as root without a postgres user to run the server as")
		}
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		as = []string{"runuser", "-u", "postgres", "--"}
	}
	run := func(name string, args ...string) {
		t.Helper()
		argv := append(append(as[:len(as):len(as)], filepath.Join(bin, name)), args...)
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	data := filepath.Join(dir, "data")
	run("initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	opts := []string{"-p", strconv.Itoa(port), "-k", dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"}
	for _, s := range settings {
		opts = append(opts, "-c", s)
	}
	run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-o", strings.Join(opts, " "), "start")
	t.Cleanup(func() {
		argv := append(as[:len(as):len(as)], filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "stop")
		_ = exec.Command(argv[0], argv[1:]...).Run()
	})
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
}
