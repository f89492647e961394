package failover

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/stamp"
)

const (
	// clients is how many load clients sign and create at once.
	clients = 12
	// warmup is how long the load runs before the switch (the latency baseline).
	warmup = 3 * time.Second
	// settle is how long the load runs after the store is back (each process has acknowledged
	// a request sent after the promote).
	settle = 4 * time.Second
	// managerDelay is how long a failover manager takes to decide, in the delayed scenario.
	managerDelay = 5 * time.Second
)

func requireCluster(t *testing.T) {
	t.Helper()
	if os.Getenv("LATCHKEY_FAILOVER") != "1" {
		t.Skip("LATCHKEY_FAILOVER=1 runs the failover test (PostgreSQL primary and standby, two serve processes)")
	}
	if runtime.GOOS != "linux" {
		t.Skip("signals every process of a PostgreSQL server, found through /proc")
	}
	if _, err := os.Stat(filepath.Join(pgBin(), "initdb")); err != nil {
		t.Skipf("no PostgreSQL binaries in %s (set LATCHKEY_PG_BIN): %v", pgBin(), err)
	}
}

// Killing the primary's every process with kill -9 and promoting its synchronous standby at once
// costs clients latency, never an error or an acknowledged activity; then killing one of two
// Latchkey processes costs the requests it held a resend to the other, and nothing else.
func TestKillPrimaryPromoteAtOnceThenKillOneLatchkey(t *testing.T) {
	requireCluster(t)
	c, d := setUp(t, true)
	spare := d.spareKey()
	l := startLoad(t, d, "a", clients)
	time.Sleep(warmup)
	killed := time.Now()
	n := c.signal(c.primary, syscall.SIGKILL)
	c.promote()
	promoted := time.Now()
	_, back := l.awaitBack(promoted)
	ledger := l.finish()
	t.Logf("killed the primary's %d processes; promoted the standby in %v",
		n, promoted.Sub(killed).Round(time.Millisecond))
	d.requireClean(t, c.standby.port, ledger, killed, promoted, back)
	d.keyDeletedIsRefused(spare)

	// d) One Latchkey process killed under load: the requests it held go to the other.
	l = startLoad(t, d, "d", clients)
	time.Sleep(warmup)
	victim := d.servers[0]
	l.killed.Store(victim)
	killed = time.Now()
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(settle)
	ledger = l.finish()
	v := check(t, c.standby.port, d, d.servers[1], ledger)
	t.Logf("kill -9 %s: %v", victim.name, v)
	t.Logf("kill -9 %s: %s", victim.name, switchLatency(ledger, killed, killed))
	d.requireNoLossNoError(t, v)
	if !d.servers[1].alive() || !d.servers[1].ready() {
		t.Errorf("%s is not serving after %s was killed", d.servers[1].name, victim.name)
	}
}

// The primary killed, and its standby promoted only after the few seconds a failover manager
// takes to decide: the requests wait, then complete.
func TestKillPrimaryPromoteAfterDelay(t *testing.T) {
	requireCluster(t)
	c, d := setUp(t, true)
	spare := d.spareKey()
	l := startLoad(t, d, "b", clients)
	time.Sleep(warmup)
	killed := time.Now()
	c.signal(c.primary, syscall.SIGKILL)
	time.Sleep(managerDelay)
	c.promote()
	promoted := time.Now()
	_, back := l.awaitBack(promoted)
	ledger := l.finish()
	t.Logf("promoted the standby %v after the kill", promoted.Sub(killed).Round(time.Millisecond))
	d.requireClean(t, c.standby.port, ledger, killed, promoted, back)
	d.keyDeletedIsRefused(spare)
}

// The primary blackholed (every process stopped with SIGSTOP: its connections stay open, no
// reset ever comes) and its standby promoted: the requests waiting on it complete on the new
// primary.
func TestBlackholedPrimary(t *testing.T) {
	requireCluster(t)
	c, d := setUp(t, true)
	spare := d.spareKey()
	l := startLoad(t, d, "c", clients)
	time.Sleep(warmup)
	stopped := time.Now()
	c.signal(c.primary, syscall.SIGSTOP)
	time.Sleep(3 * time.Second)
	c.promote()
	promoted := time.Now()
	_, back := l.awaitBack(promoted)
	ledger := l.finish()
	t.Logf("promoted the standby %v after stopping the primary", promoted.Sub(stopped).Round(time.Millisecond))
	d.requireClean(t, c.standby.port, ledger, stopped, promoted, back)
	d.keyDeletedIsRefused(spare)
}

// The negative control: with asynchronous replication and the standby cut off from the primary
// for a few seconds before the primary is killed, the checker finds acknowledged activities
// missing on the promoted standby. Were it blind to a loss, the tests above would prove nothing.
func TestCheckerSeesALossOnAnAsynchronousStandby(t *testing.T) {
	requireCluster(t)
	c, d := setUp(t, false)
	l := startLoad(t, d, "e", clients)
	time.Sleep(warmup)
	c.detachStandby()
	time.Sleep(2 * time.Second)
	killed := time.Now()
	c.signal(c.primary, syscall.SIGKILL)
	c.promote()
	time.Sleep(2 * time.Second)
	ledger := l.finish()
	v := check(t, c.standby.port, d, d.servers[1], ledger)
	t.Logf("asynchronous standby held behind: %v", v)
	t.Logf("%s", switchLatency(ledger, killed, killed))
	if len(v.lost) == 0 {
		t.Errorf("the checker found no acknowledged activity lost on a standby held behind: it cannot see a loss")
	}
}

// setUp starts a cluster, Latchkey on it behind two processes, and the load's wallets.
func setUp(t *testing.T, synchronous bool) (*cluster, *deployment) {
	t.Helper()
	began := time.Now()
	c := newCluster(t, synchronous)
	d := newDeployment(t, c, 2)
	d.prepare(clients)
	t.Logf("primary, standby and two serve processes up in %v", time.Since(began).Round(time.Millisecond))
	return c, d
}

// requireClean checks a failover's ledger: nothing acknowledged lost or changed, no body made
// two activities, no error answered, both processes alive and ready without a restart. The
// switch began at from; the standby was promoted at promoted; both processes were back at back.
func (d *deployment) requireClean(t *testing.T, primaryPort int, ledger []*entry, from, promoted, back time.Time) {
	t.Helper()
	v := check(t, primaryPort, d, d.servers[1], ledger)
	t.Logf("%v", v)
	t.Logf("%s", switchLatency(ledger, from, back))
	t.Logf("after the promote: %s", backAfter(ledger, promoted))
	d.requireNoLossNoError(t, v)
	if v.errorCount() > 0 {
		for _, s := range d.servers {
			if why := logErrors(s.logs.String()); why != "" {
				t.Logf("%s logged these errors:\n%s", s.name, why)
			}
		}
	}
	for _, s := range d.servers {
		if !s.alive() {
			t.Errorf("%s ended during the failover:\n%s", s.name, tail(s.logs.String(), 2048))
		} else if !s.ready() {
			t.Errorf("%s is not ready after the failover", s.name)
		}
	}
}

func (d *deployment) requireNoLossNoError(t *testing.T, v verdict) {
	t.Helper()
	if v.acknowledged == 0 {
		t.Errorf("no request was acknowledged: the load did not run")
	}
	if len(v.lost) > 0 {
		t.Errorf("%d acknowledged activities are not on the new primary: %v", len(v.lost), v.lost[:min(5, len(v.lost))])
	}
	if len(v.changed) > 0 {
		t.Errorf("%d acknowledged activities have another result on the new primary: %v",
			len(v.changed), v.changed[:min(5, len(v.changed))])
	}
	if len(v.unreadable) > 0 {
		t.Errorf("%d acknowledged activities could not be read back: %v", len(v.unreadable),
			v.unreadable[:min(5, len(v.unreadable))])
	}
	if len(v.duplicated) > 0 {
		t.Errorf("%d request bodies made more than one activity: %v", len(v.duplicated),
			v.duplicated[:min(5, len(v.duplicated))])
	}
	if n := v.errorCount(); n > 0 {
		t.Errorf("%d requests were answered an error (they should have completed, slower)", n)
	}
}

// spareKey is a second API key of the root user, used through both processes before the
// failover so that both hold it in memory.
type spareKey struct {
	id string
	st stamp.Stamper
}

func (d *deployment) spareKey() spareKey {
	d.t.Helper()
	priv, pub, err := stamp.GenerateKey(stamp.CurveP256)
	if err != nil {
		d.t.Fatal(err)
	}
	st, err := stamp.NewP256Stamper(priv)
	if err != nil {
		d.t.Fatal(err)
	}
	a := d.submit(d.servers[0], d.root, "create_api_keys", "ACTIVITY_TYPE_CREATE_API_KEYS_V2",
		map[string]any{"userId": d.userID, "apiKeys": []any{map[string]any{"apiKeyName": "spare",
			"publicKey": pub, "curveType": "API_KEY_CURVE_P256"}}})
	var r struct {
		CreateAPIKeysResult struct {
			APIKeyIDs []string `json:"apiKeyIds"`
		} `json:"createApiKeysResult"`
	}
	if err := json.Unmarshal(a.result, &r); err != nil || len(r.CreateAPIKeysResult.APIKeyIDs) != 1 {
		d.t.Fatalf("create_api_keys: %s", a.raw)
	}
	for _, s := range d.servers {
		if got := d.query(s, st, "whoami", map[string]any{"organizationId": d.orgID}); got.status != http.StatusOK {
			d.t.Fatalf("the spare key at %s: %s", s.name, got)
		}
	}
	return spareKey{id: r.CreateAPIKeysResult.APIKeyIDs[0], st: st}
}

// keyDeletedIsRefused deletes the spare key after the failover, through one process, and
// requires both to refuse it at once.
func (d *deployment) keyDeletedIsRefused(k spareKey) {
	d.t.Helper()
	d.submit(d.servers[0], d.root, "delete_api_keys", "ACTIVITY_TYPE_DELETE_API_KEYS",
		map[string]any{"userId": d.userID, "apiKeyIds": []string{k.id}})
	for _, s := range d.servers {
		if got := d.query(s, k.st, "whoami", map[string]any{"organizationId": d.orgID}); got.status !=
			http.StatusUnauthorized {
			d.t.Errorf("%s accepts an API key deleted after the failover: %s", s.name, got)
		}
	}
}

// logErrors groups the "err" fields of a serve process's JSON log, ids and ports left out.
func logErrors(log string) string {
	counts := map[string]int{}
	for _, line := range strings.Split(log, "\n") {
		var rec struct {
			Msg string `json:"msg"`
			Err string `json:"err"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Err == "" {
			continue
		}
		err := uuidPattern.ReplaceAllString(rec.Err, "…")
		err = portPattern.ReplaceAllString(err, "127.0.0.1:…")
		counts[rec.Msg+": "+err]++
	}
	var out []string
	for k, n := range counts {
		out = append(out, fmt.Sprintf("    %d × %s", n, strings.ReplaceAll(k, "\n", " ")))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

var portPattern = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)
