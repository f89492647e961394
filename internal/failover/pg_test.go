package failover

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgBin is where the PostgreSQL binaries are (Debian's postgresql-15).
func pgBin() string {
	if d := os.Getenv("LATCHKEY_PG_BIN"); d != "" {
		return d
	}
	return "/usr/lib/postgresql/15/bin"
}

// cluster is a primary and its standby, each a data directory under one temporary directory.
type cluster struct {
	t        *testing.T
	base     string
	uid, gid int // the owner of the data directories; -1 when the test runs as a non-root user
	primary  *node
	standby  *node
}

// node is one PostgreSQL server on 127.0.0.1.
type node struct {
	name string
	dir  string
	port int
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// newCluster initdbs a primary and streams a base backup of it into a standby, both running.
// synchronous: the primary waits for the standby's flush before a commit returns (RPO 0);
// otherwise replication is asynchronous (the negative control).
func newCluster(t *testing.T, synchronous bool) *cluster {
	t.Helper()
	base, err := os.MkdirTemp("", "latchkey-failover-")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, base: base, uid: -1, gid: -1}
	t.Cleanup(c.destroy)
	if os.Geteuid() == 0 {
		// initdb refuses root: the servers run as the postgres user, in directories it owns.
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skipf("running as root and there is no postgres user to run PostgreSQL as: %v", err)
		}
		c.uid, _ = strconv.Atoi(u.Uid)
		c.gid, _ = strconv.Atoi(u.Gid)
		if err := os.Chmod(base, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(base, c.uid, c.gid); err != nil {
			t.Fatal(err)
		}
	}
	c.primary = &node{name: "primary", dir: filepath.Join(base, "primary"), port: freePort(t)}
	c.standby = &node{name: "standby", dir: filepath.Join(base, "standby"), port: freePort(t)}

	c.pg("initdb", "-D", c.primary.dir, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8")
	// fsync off: the test kills processes, never the machine, so what a server wrote is in the
	// page cache whatever happens to it; the commit's wait for the standby is what is under test.
	c.appendConf(c.primary, filepath.Join(c.primary.dir, "postgresql.conf"), fmt.Sprintf(`
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
wal_level = replica
max_wal_senders = 4
wal_keep_size = '512MB'
synchronous_commit = on
fsync = off
shared_buffers = '32MB'
max_connections = 100
`, c.primary.port, base))
	c.start(c.primary)
	c.exec(c.primary, "postgres", "CREATE DATABASE latchkey")

	c.pg("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(c.primary.port), "-U", "postgres",
		"-D", c.standby.dir, "-X", "stream", "-R", "--no-sync", "--checkpoint=fast")
	// The standby names itself to the primary, and once promoted waits for no standby of its own
	// (there is none: a failover leaves one copy until a new standby is built). It retries its
	// lost primary every 100 ms rather than 5 s, the time a promote may otherwise wait for.
	c.appendConf(c.standby, filepath.Join(c.standby.dir, "postgresql.auto.conf"), fmt.Sprintf(`
port = %d
primary_conninfo = 'host=127.0.0.1 port=%d user=postgres application_name=standby'
synchronous_standby_names = ''
wal_retrieve_retry_interval = '100ms'
`, c.standby.port, c.primary.port))
	c.start(c.standby)
	c.waitForStandby("async")
	if synchronous {
		// Only now: with no standby to wait for, CREATE DATABASE above would never return.
		c.exec(c.primary, "postgres", "ALTER SYSTEM SET synchronous_standby_names = 'standby'")
		c.exec(c.primary, "postgres", "SELECT pg_reload_conf()")
		c.waitForStandby("sync")
	}
	return c
}

func (c *cluster) waitForStandby(state string) {
	c.t.Helper()
	c.waitFor(func() bool {
		var got string
		return c.queryRow(c.primary, "postgres",
			"SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'", &got) == nil &&
			got == state
	}, "the standby to stream from the primary ("+state+")")
}

// pg runs a PostgreSQL program as the owner of the data directories.
func (c *cluster) pg(prog string, args ...string) string {
	c.t.Helper()
	path := filepath.Join(pgBin(), prog)
	var cmd *exec.Cmd
	if c.uid >= 0 {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = c.base
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("%s %s: %v\n%s", prog, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (c *cluster) appendConf(n *node, path, text string) {
	c.t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) start(n *node) {
	c.t.Helper()
	c.pg("pg_ctl", "-D", n.dir, "-l", filepath.Join(c.base, n.name+".log"), "-w", "-t", "60", "start")
}

// promote makes the standby a primary and waits until it accepts writes.
func (c *cluster) promote() {
	c.t.Helper()
	c.pg("pg_ctl", "-D", c.standby.dir, "-w", "-t", "60", "promote")
}

func (c *cluster) conn(n *node, db string) (*pgx.Conn, error) { return connect(n.port, db) }

// connect opens a connection to a server on 127.0.0.1 as the postgres user.
func connect(port int, db string) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, db))
}

func (c *cluster) exec(n *node, db, sql string, args ...any) {
	c.t.Helper()
	conn, err := c.conn(n, db)
	if err != nil {
		c.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		c.t.Fatalf("%s on the %s: %v", sql, n.name, err)
	}
}

func (c *cluster) queryRow(n *node, db, sql string, dest ...any) error {
	conn, err := c.conn(n, db)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(context.Background(), sql).Scan(dest...)
}

func (c *cluster) waitFor(ok func() bool, what string) {
	c.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		if ok() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("timed out waiting for %s", what)
}

// url is the database URL both Latchkey processes use: both servers, the writable one chosen.
func (c *cluster) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/latchkey?sslmode=disable"+
		"&target_session_attrs=read-write&connect_timeout=3", c.primary.port, c.standby.port)
}

// processes lists a server's postmaster and every child of it.
func (c *cluster) processes(n *node) []int {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(n.dir, "postmaster.pid"))
	if err != nil {
		c.t.Fatalf("the %s's postmaster.pid: %v", n.name, err)
	}
	pm, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		c.t.Fatalf("the %s's postmaster.pid: %v", n.name, err)
	}
	pids := []int{pm}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pm) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// signal sends sig to every process of a server, the postmaster first so that it starts no
// new one and does not react to its children's end.
func (c *cluster) signal(n *node, sig syscall.Signal) int {
	c.t.Helper()
	pids := c.processes(n)
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil {
			c.t.Fatalf("kill -%d %d (the %s): %v", sig, pid, n.name, err)
		}
	}
	return len(pids)
}

// detachStandby points the standby's WAL receiver at a port nothing listens on, so that it
// falls behind the primary from now on (the negative control's asynchronous standby).
func (c *cluster) detachStandby() {
	c.t.Helper()
	c.exec(c.standby, "postgres", "ALTER SYSTEM SET primary_conninfo = 'host=127.0.0.1 port=1 user=postgres'")
	c.exec(c.standby, "postgres", "SELECT pg_reload_conf()")
	c.waitFor(func() bool {
		var n int
		return c.queryRow(c.primary, "postgres", "SELECT count(*) FROM pg_stat_replication", &n) == nil && n == 0
	}, "the standby to stop streaming")
}

// destroy kills whatever is left of both servers (SIGKILL ends a stopped process too) and
// removes their directories.
func (c *cluster) destroy() {
	for _, n := range []*node{c.primary, c.standby} {
		if n == nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(n.dir, "postmaster.pid")); err == nil {
			if pm, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0]); err == nil {
				for _, pid := range c.processes(n) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				for i := 0; i < 100 && syscall.Kill(pm, 0) == nil; i++ {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}
	}
	if os.Getenv("LATCHKEY_FAILOVER_KEEP") == "" {
		_ = os.RemoveAll(c.base)
	} else {
		c.t.Logf("kept %s", c.base)
	}
}
