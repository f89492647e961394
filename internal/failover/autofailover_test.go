package failover

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/stamp"
)

// The deployment of deploy/ha/ha.sh, as written: pg_auto_failover's monitor decides the
// failover when the primary node (its keeper and its PostgreSQL) is killed under load. The same
// checks as the other scenarios; the time from the kill until both Latchkey processes
// acknowledge again is the failover as clients see it, with the script's tuned settings.
func TestPgAutoFailoverDecides(t *testing.T) {
	requireCluster(t)
	if _, err := exec.LookPath("pg_autoctl"); err != nil {
		if os.Getenv("LATCHKEY_REQUIRE_PG_AUTOCTL") == "1" { // CI: installed, so this must run
			t.Fatal("LATCHKEY_REQUIRE_PG_AUTOCTL=1 and pg_autoctl is not on PATH")
		}
		t.Skip("pg_autoctl is not installed (Debian's pg-auto-failover-cli and postgresql-15-auto-failover)")
	}
	script, err := filepath.Abs("../../deploy/ha/ha.sh")
	if err != nil {
		t.Fatal(err)
	}
	base, err := os.MkdirTemp("", "latchkey-ha-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil { // for the postgres user, when the test runs as root
		t.Fatal(err)
	}
	env := append(os.Environ(), "HA_DIR="+filepath.Join(base, "ha"), "LATCHKEY="+latchkeyBinary(t),
		"PG_BIN="+pgBin(), fmt.Sprintf("HA_PORT=%d", freePorts(t, 3)), fmt.Sprintf("HA_API_PORT=%d", freePorts(t, 2)))
	ha := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(script, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ha.sh %s: %v\n%s", strings.Join(args, " "), err, tail(string(out), 8192))
		}
		return string(out)
	}
	began := time.Now()
	t.Cleanup(func() { ha("down") }) // also after a failed up: it stops whatever did start
	up := ha("up")
	t.Logf("ha.sh up in %v", time.Since(began).Round(time.Millisecond))

	d := haDeployment(t, filepath.Join(base, "ha"), up)
	d.prepare(clients)
	spare := d.spareKey()
	l := startLoad(t, d, "pgaf", clients)
	time.Sleep(warmup)
	var node string
	var ms int64
	if _, err := fmt.Sscan(ha("kill-primary"), &node, &ms); err != nil {
		t.Fatal(err)
	}
	killed := time.UnixMilli(ms)
	back, last := l.awaitBack(killed)
	ledger := l.finish()
	t.Logf("killed %s; both processes acknowledged again after %v", node, back)
	t.Logf("monitor:\n%s", ha("state"))
	fields := strings.Fields(ha("primary"))
	if len(fields) != 2 || fields[0] == node {
		t.Fatalf("the primary after the failover: %q (killed %s)", fields, node)
	}
	port, _ := strconv.Atoi(fields[1])
	d.requireClean(t, port, ledger, killed, killed, last)
	d.keyDeletedIsRefused(spare)
}

// freePorts finds n consecutive free ports on 127.0.0.1 and returns the first.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 100; try++ {
		first := freePort(t)
		ok := true
		for p := first + 1; p < first+n && ok; p++ {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				continue
			}
			ln.Close()
		}
		if ok {
			return first
		}
	}
	t.Fatalf("no %d consecutive free ports", n)
	return 0
}

// haDeployment reads what ha.sh up made: the organization, the operator's key and the two
// processes' URLs.
func haDeployment(t *testing.T, dir, up string) *deployment {
	t.Helper()
	d := &deployment{t: t}
	var created struct {
		OrganizationID string `json:"organizationId"`
		UserID         string `json:"userId"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "organization.json")); err != nil ||
		json.Unmarshal(b, &created) != nil {
		t.Fatalf("organization.json: %v %s", err, b)
	}
	d.orgID, d.userID = created.OrganizationID, created.UserID
	var key struct {
		Curve      string `json:"curve"`
		PrivateKey string `json:"privateKey"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "keys", "ops.json")); err != nil || json.Unmarshal(b, &key) != nil {
		t.Fatalf("the ops key: %v", err)
	}
	var err error
	if d.root, err = stamp.NewP256Stamper(key.PrivateKey); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(up, "\n") {
		if rest, ok := strings.CutPrefix(line, "Latchkey A, B:"); ok {
			for i, u := range strings.Fields(rest) {
				d.servers = append(d.servers, &serveProcess{name: fmt.Sprintf("latchkey-%c", 'A'+i), api: u,
					logs: &syncBuffer{}})
			}
		}
	}
	if len(d.servers) != 2 {
		t.Fatalf("ha.sh up named no two Latchkey URLs:\n%s", up)
	}
	return d
}
