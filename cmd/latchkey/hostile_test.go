package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/authproxy"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/stamp"
)

// HostileMemoryBound is the peak resident memory (VmHWM) a serve process may reach while
// dozens of hostile requests at the body limit arrive at once on every listener, with and
// without credentials (docs/performance.md, "Hostile load"): the default bound on body bytes in
// flight (32 MiB), what the parsers may build from them, and the process's own ~90 MB.
const HostileMemoryBound = 400 << 20

// hostileClients is how many hostile requests are in flight at once.
const hostileClients = 48

// Dozens of concurrent hostile requests, each at a listener's body limit, leave a real serve
// process answering its health checks and a well-formed whoami throughout, every hostile
// request answered with a 4xx or a 503 (never a 500 or a dropped connection), and its peak
// memory under HostileMemoryBound. The figures are logged (go test -v -run Hostile).
func TestHostileLoadLeavesTheServerResponsive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the server's peak memory from /proc")
	}
	if testing.Short() {
		t.Skip("-short: starts a server and loads it for some seconds")
	}
	dir, mk := t.TempDir(), filepath.Join(t.TempDir(), "master.key")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	apiPriv, apiPub, _ := stamp.GenerateKey(stamp.CurveP256)
	store := []string{"--data-dir", dir, "--master-key-file", mk}
	var initOut bytes.Buffer
	if err := run(context.Background(), append([]string{"init", "--org-name", "Acme", "--user-name", "ops",
		"--api-public-key", apiPub}, store...), &initOut, io.Discard); err != nil {
		t.Fatal(err)
	}
	var created server.Created
	if err := json.Unmarshal(initOut.Bytes(), &created); err != nil {
		t.Fatal(err)
	}
	var proxyOut bytes.Buffer
	if err := run(context.Background(), append([]string{"proxy", "enable", "--org", created.OrganizationID,
		"--allowed-origins", "http://localhost:3000"}, store...), &proxyOut, io.Discard); err != nil {
		t.Fatal(err)
	}
	var proxyCfg struct {
		ConfigID string `json:"configId"`
	}
	_ = json.Unmarshal(proxyOut.Bytes(), &proxyCfg)

	addrs := map[string]string{}
	for _, name := range []string{"api", "proxy", "dashboard", "metrics"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs[name] = ln.Addr().String()
		ln.Close()
	}
	srv := child(t, append([]string{"serve", "--api-addr", addrs["api"], "--proxy-addr", addrs["proxy"],
		"--dashboard-addr", addrs["dashboard"], "--metrics-addr", addrs["metrics"], "--log-level", "error"},
		store...)...)
	var logs syncBuffer
	srv.Stderr = &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	api := "http://" + addrs["api"]
	waitFor(t, func() bool {
		resp, err := http.Get(api + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	}, "serve to be ready:\n"+logs.String())
	idle := peakMemory(t, srv.Process.Pid)

	stamper, err := stamp.NewP256Stamper(apiPriv)
	if err != nil {
		t.Fatal(err)
	}
	stamped := func(path string, body []byte) *http.Request {
		name, value, err := stamper.Stamp(body)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, api+path, bytes.NewReader(body))
		req.Header.Set(name, value)
		return req
	}
	envelope := func(typ, params string) []byte {
		return []byte(fmt.Sprintf(`{"type":%q,"organizationId":%q,"timestampMs":"%d","parameters":%s}`,
			typ, created.OrganizationID, time.Now().UnixMilli(), params))
	}

	// The hostile bodies, each as large as its listener takes.
	const apiMax, proxyMax, dashMax = 2 << 20, authproxy.DefaultMaxBody, 64 << 10
	shapes := map[string]func(limit int) []byte{
		"deep arrays": func(limit int) []byte {
			return []byte(strings.Repeat("[", limit/2) + strings.Repeat("]", limit/2))
		},
		"deep objects": func(limit int) []byte {
			n := (limit - 1) / 6
			return []byte(strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n))
		},
		"long name over many elements": func(limit int) []byte {
			n := limit / 4
			return []byte(`{"` + strings.Repeat("n", n) + `":[` + strings.Repeat("1,", (limit-n)/2-8) + `1]}`)
		},
		"many members": func(limit int) []byte {
			var b bytes.Buffer
			b.WriteString("{")
			for i := 0; b.Len() < limit-32; i++ {
				fmt.Fprintf(&b, `"m%d":[],`, i)
			}
			b.WriteString(`"z":1}`)
			return b.Bytes()
		},
	}
	var requests []func() *http.Request
	for _, make := range shapes {
		apiBody, proxyBody, dashBody := make(apiMax-1024), make(proxyMax-1024), make(dashMax-1024)
		requests = append(requests,
			func() *http.Request { // no credentials
				req, _ := http.NewRequest(http.MethodPost, api+"/public/v1/query/get_activity", bytes.NewReader(apiBody))
				return req
			},
			func() *http.Request { // stamped: the stamp is checked after the strict pass
				return stamped("/public/v1/submit/create_users", apiBody)
			},
			func() *http.Request {
				req, _ := http.NewRequest(http.MethodPost, "http://"+addrs["proxy"]+"/v1/account", bytes.NewReader(proxyBody))
				req.Header.Set(authproxy.ConfigHeader, proxyCfg.ConfigID)
				req.Header.Set("Origin", "http://localhost:3000")
				return req
			},
			func() *http.Request {
				req, _ := http.NewRequest(http.MethodPost, "http://"+addrs["dashboard"]+"/login", bytes.NewReader(dashBody))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				return req
			},
		)
	}
	// Stamped and well-formed JSON, at the body limit: a create_users with a member the
	// intent does not have, holding most of the body.
	big := envelope("ACTIVITY_TYPE_CREATE_USERS_V3", `{"users":[],"x":"`+strings.Repeat("x", apiMax-4096)+`"}`)
	requests = append(requests, func() *http.Request { return stamped("/public/v1/submit/create_users", big) })

	// The request: 200 KB of nested brackets, without credentials, answered 400 naming
	// the depth limit on the API and on the auth proxy.
	deep := []byte(strings.Repeat("[", 100000) + strings.Repeat("]", 100000))
	for _, req := range []*http.Request{requests[0](), requests[2]()} {
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(deep)), int64(len(deep))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(msg), "limit of 32 levels") {
			t.Fatalf("%s: the deep body got %d %s", req.URL, resp.StatusCode, msg)
		}
	}

	var (
		stop                  atomic.Bool
		answered, shed, wrong atomic.Int64
		wg                    sync.WaitGroup
		mu                    sync.Mutex
		wrongs                []string
	)
	client := &http.Client{Timeout: 2 * time.Minute}
	for i := 0; i < hostileClients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := i; !stop.Load(); n++ {
				req := requests[n%len(requests)]()
				resp, err := client.Do(req)
				if err != nil {
					wrong.Add(1)
					mu.Lock()
					wrongs = append(wrongs, req.URL.Path+": "+err.Error())
					mu.Unlock()
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusServiceUnavailable:
					shed.Add(1)
				case resp.StatusCode >= 400 && resp.StatusCode < 500:
					answered.Add(1)
				default:
					wrong.Add(1)
					mu.Lock()
					wrongs = append(wrongs, req.URL.Path+": HTTP "+strconv.Itoa(resp.StatusCode))
					mu.Unlock()
				}
			}
		}()
	}

	// Meanwhile, a well-formed client: whoami and /readyz, each must succeed.
	var worst time.Duration
	var probes int
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		start := time.Now()
		resp, err := client.Do(stamped("/public/v1/query/whoami",
			[]byte(fmt.Sprintf(`{"organizationId":%q}`, created.OrganizationID))))
		if err != nil {
			t.Fatalf("whoami during the hostile load: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("whoami during the hostile load: HTTP %d %s", resp.StatusCode, body)
		}
		if resp, err = client.Get(api + "/readyz"); err != nil || resp.StatusCode != 200 {
			t.Fatalf("/readyz during the hostile load: %v %v", resp, err)
		}
		resp.Body.Close()
		worst = max(worst, time.Since(start))
		probes++
		time.Sleep(50 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	peak := peakMemory(t, srv.Process.Pid)

	t.Logf("%d hostile clients, 8 s: %d answered 4xx, %d shed with 503; %d probes (whoami and /readyz), "+
		"slowest pair %v; peak resident memory %d MiB (idle %d MiB)",
		hostileClients, answered.Load(), shed.Load(), probes, worst.Round(time.Millisecond), peak>>20, idle>>20)
	if wrong.Load() > 0 {
		t.Errorf("%d hostile requests got neither a 4xx nor a 503, e.g. %v", wrong.Load(), wrongs[:min(5, len(wrongs))])
	}
	if answered.Load() == 0 {
		t.Error("no hostile request was answered with a 4xx")
	}
	if peak > HostileMemoryBound {
		t.Errorf("peak resident memory %d MiB, over the bound of %d MiB", peak>>20, HostileMemoryBound>>20)
	}
}

// peakMemory is a process's peak resident memory (VmHWM), in bytes.
func peakMemory(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/pid/status")
	return 0
}
