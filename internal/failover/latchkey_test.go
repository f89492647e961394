package failover

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/stamp"
)

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// latchkeyBinary is LATCHKEY_BIN, or the latchkey command built once for the test run.
func latchkeyBinary(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("LATCHKEY_BIN"); b != "" {
		return b
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "latchkey-failover-bin-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "latchkey")
		out, err := exec.Command("go", "build", "-o", built, "github.com/latchkey/latchkey/cmd/latchkey").
			CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
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

// deployment is one organization on the cluster and the Latchkey processes serving it.
type deployment struct {
	t         *testing.T
	bin, mk   string
	dbURL     string
	orgID     string
	userID    string
	root      stamp.Stamper
	servers   []*serveProcess
	addresses []string // one signing address for each load client
}

// serveProcess is one running `latchkey serve`.
type serveProcess struct {
	name string
	api  string    // http://127.0.0.1:port
	cmd  *exec.Cmd // nil for a process deploy/ha/ha.sh started
	logs *syncBuffer
	done chan struct{} // closed when the process has ended
}

func (s *serveProcess) alive() bool {
	if s.cmd == nil {
		return s.ready()
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// newDeployment initializes Latchkey's schema and one organization on the cluster, and starts
// n serve processes on its multi-host URL.
func newDeployment(t *testing.T, c *cluster, n int) *deployment {
	t.Helper()
	d := &deployment{t: t, bin: latchkeyBinary(t), dbURL: c.url()}
	d.mk = filepath.Join(t.TempDir(), "master.key")
	if _, err := custody.GenerateMasterKeyFile(d.mk); err != nil {
		t.Fatal(err)
	}
	priv, pub, err := stamp.GenerateKey(stamp.CurveP256)
	if err != nil {
		t.Fatal(err)
	}
	if d.root, err = stamp.NewP256Stamper(priv); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(d.bin, "init", "--database-url", d.dbURL, "--master-key-file", d.mk,
		"--data-dir", t.TempDir(), "--org-name", "Acme", "--user-name", "ops", "--api-public-key", pub).Output()
	if err != nil {
		t.Fatalf("latchkey init: %v %s", err, out)
	}
	var created struct {
		OrganizationID string `json:"organizationId"`
		UserID         string `json:"userId"`
	}
	if err := json.Unmarshal(out, &created); err != nil {
		t.Fatalf("latchkey init printed %s: %v", out, err)
	}
	d.orgID, d.userID = created.OrganizationID, created.UserID
	for i := 0; i < n; i++ {
		d.servers = append(d.servers, d.serve(fmt.Sprintf("latchkey-%c", 'A'+i)))
	}
	return d
}

func (d *deployment) serve(name string) *serveProcess {
	t := d.t
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &serveProcess{name: name, api: "http://" + addr, logs: &syncBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(d.bin, "serve", "--database-url", d.dbURL, "--master-key-file", d.mk,
		"--data-dir", t.TempDir(), "--api-addr", addr, "--proxy-addr", "", "--dashboard-addr", "",
		"--log-level", "warn")
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		if s.alive() {
			_ = s.cmd.Process.Signal(syscall.SIGKILL)
			<-s.done
		}
		if t.Failed() {
			t.Logf("%s's log (last 4 KiB):\n%s", s.name, tail(s.logs.String(), 4096))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for !s.ready() {
		if !s.alive() || time.Now().After(deadline) {
			t.Fatalf("%s did not become ready:\n%s", name, s.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// probe is the client of readiness checks; reader, of the requests that set up and check.
var (
	probe  = &http.Client{Timeout: 2 * time.Second}
	reader = &http.Client{Timeout: 15 * time.Second}
)

func (s *serveProcess) ready() bool {
	resp, err := probe.Get(s.api + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// envelope is a submit body for the organization, stamped now.
func (d *deployment) envelope(orgID, typ string, params any) []byte {
	p, err := json.Marshal(params)
	if err != nil {
		d.t.Fatal(err)
	}
	return []byte(fmt.Sprintf(`{"type":%q,"organizationId":%q,"timestampMs":"%d","parameters":%s}`,
		typ, orgID, time.Now().UnixMilli(), p))
}

// answer is what a server said to one request.
type answer struct {
	status int    // HTTP status; 0 when no answer came (transport error)
	err    string // the transport error, or the error's body
	raw    []byte
	// From a 200: the activity's id, status and result.
	activityID, activityStatus string
	result                     json.RawMessage
}

func (a answer) acknowledged() bool {
	return a.status == http.StatusOK && a.activityStatus == "ACTIVITY_STATUS_COMPLETED"
}

func (a answer) String() string {
	if a.status == 0 {
		return "no answer: " + a.err
	}
	return fmt.Sprintf("HTTP %d %s", a.status, tail(strings.TrimSpace(string(a.raw)), 300))
}

// stamped builds a stamped POST of body to a server's path (stamping is the client's work,
// done once per body: a resend carries the same bytes and the same stamp).
type stamped struct {
	path, header, value string
	body                []byte
}

func stampBody(st stamp.Stamper, path string, body []byte) (stamped, error) {
	name, value, err := st.Stamp(body)
	return stamped{path: path, header: name, value: value, body: body}, err
}

func send(client *http.Client, base string, r stamped) answer {
	req, err := http.NewRequest(http.MethodPost, base+r.path, bytes.NewReader(r.body))
	if err != nil {
		return answer{err: err.Error()}
	}
	req.Header.Set(r.header, r.value)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return answer{err: err.Error()}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{err: "reading the answer: " + err.Error()}
	}
	a := answer{status: resp.StatusCode, raw: raw}
	if resp.StatusCode != http.StatusOK {
		a.err = string(raw)
		return a
	}
	var out struct {
		Activity struct {
			ID     string          `json:"id"`
			Status string          `json:"status"`
			Result json.RawMessage `json:"result"`
		} `json:"activity"`
	}
	if json.Unmarshal(raw, &out) == nil {
		a.activityID, a.activityStatus, a.result = out.Activity.ID, out.Activity.Status, out.Activity.Result
	}
	return a
}

// submit sends one activity as the root user and fails the test unless it completes.
func (d *deployment) submit(s *serveProcess, st stamp.Stamper, op, typ string, params any) answer {
	d.t.Helper()
	r, err := stampBody(st, "/public/v1/submit/"+op, d.envelope(d.orgID, typ, params))
	if err != nil {
		d.t.Fatal(err)
	}
	a := send(reader, s.api, r)
	if !a.acknowledged() {
		d.t.Fatalf("%s at %s: %s", op, s.name, a)
	}
	return a
}

// query sends a query as st to a server.
func (d *deployment) query(s *serveProcess, st stamp.Stamper, op string, params map[string]any) answer {
	d.t.Helper()
	body, _ := json.Marshal(params)
	r, err := stampBody(st, "/public/v1/query/"+op, body)
	if err != nil {
		d.t.Fatal(err)
	}
	return send(reader, s.api, r)
}

// walletAccount is one Ethereum account, the shape every wallet of the load has.
var walletAccount = []map[string]string{{"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32",
	"path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}

// prepare creates one wallet for each load client to sign with.
func (d *deployment) prepare(clients int) {
	d.t.Helper()
	for i := 0; i < clients; i++ {
		a := d.submit(d.servers[i%len(d.servers)], d.root, "create_wallet", "ACTIVITY_TYPE_CREATE_WALLET",
			map[string]any{"walletName": fmt.Sprintf("client %d", i), "accounts": walletAccount})
		var r struct {
			CreateWalletResult struct {
				Addresses []string `json:"addresses"`
			} `json:"createWalletResult"`
		}
		if json.Unmarshal(a.result, &r) != nil || len(r.CreateWalletResult.Addresses) != 1 {
			d.t.Fatalf("create_wallet: %s", a.raw)
		}
		d.addresses = append(d.addresses, r.CreateWalletResult.Addresses[0])
	}
}
