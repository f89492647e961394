package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// A running server (Run, as latchkey serve does) with --metrics-addr: requests are counted by
// listener, operation and status, the metrics pass `promtool check metrics` (Debian's
// prometheus package; skipped with the reason when it is not installed), every request gets one
// info-level access-log line naming its operation and organization, /livez and /readyz answer,
// and /readyz turns 503 while draining.
func TestMetricsAccessLogAndProbes(t *testing.T) {
	dir := t.TempDir()
	mk := filepath.Join(dir, "master.key")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	s, err := server.Open(
		context.Background(),
		server.Config{DataDir: dir, MasterKeyFile: mk, APIAddr: "127.0.0.1:0", ProxyAddr: "127.0.0.1:0",
			MetricsAddr: "127.0.0.1:0", Log: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, stop := context.WithCancel(context.Background())
	apiURL := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, 5*time.Second, func(addr string) { apiURL <- "http://" + addr }) }()
	base := <-apiURL

	h := servertest.Attach(t, s, base)
	root, created := h.RootOrg("Metrics")
	servertest.MustOK(t, root.Query("whoami", nil))
	servertest.MustOK(
		t,
		root.Submit(
			"create_user_tag",
			"ACTIVITY_TYPE_CREATE_USER_TAG",
			map[string]any{"userTagName": "t", "userIds": []string{}},
		),
	)
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(base + "/no_such_thing"); code != http.StatusNotFound {
		t.Fatalf("unknown path: %d", code)
	}
	for _, p := range []string{"/livez", "/readyz"} {
		if code, body := get(base + p); code != http.StatusOK || !strings.Contains(body, `"ok"`) {
			t.Fatalf("%s: %d %s", p, code, body)
		}
	}

	code, text := get(s.MetricsURL() + "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`latchkey_http_requests_total{code="200",listener="api",operation="query/whoami"} 1`,
		`latchkey_http_requests_total{code="200",listener="api",operation="submit/create_user_tag"} 1`,
		`latchkey_http_requests_total{code="404",listener="api",operation="unknown"} 1`,
		`latchkey_http_request_duration_seconds_bucket{listener="api",operation="query/whoami",le="+Inf"} 1`,
		`latchkey_activities_total{status="ACTIVITY_STATUS_COMPLETED",type="ACTIVITY_TYPE_CREATE_USER_TAG"} 1`,
		`latchkey_store_commit_duration_seconds_count{store="sqlite"}`,
		`latchkey_store_commit_batch_size_bucket{store="sqlite",le="1"}`,
		"latchkey_store_up 1", "latchkey_store_writable 1", "latchkey_store_sync_standbys -1",
		`go_goroutines`, `process_resident_memory_bytes`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(text, "no_such_thing") {
		t.Error("an unknown path became a label value")
	}
	if promtool, err := exec.LookPath("promtool"); err != nil {
		if os.Getenv("LATCHKEY_REQUIRE_PROMTOOL") != "" {
			t.Fatal("promtool not installed, and CI requires it (apt-get install prometheus)")
		}
		t.Log("promtool not installed (apt-get install prometheus): format check skipped")
	} else {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(text)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	}

	// One access-log line per API request, with the operation and the organization.
	found := false
	for _, line := range bytes.Split(logs.Bytes(), []byte("\n")) {
		var e map[string]any
		if json.Unmarshal(line, &e) != nil || e["msg"] != "request" {
			continue
		}
		if e["operation"] == "submit/create_user_tag" {
			found = e["organization_id"] == created.OrganizationID && e["status"] == float64(200) &&
				e["level"] == "INFO" &&
				e["request_id"] != "" &&
				e["duration_ms"] != nil &&
				e["listener"] == "api"
		}
	}
	if !found {
		t.Fatalf("no access-log line for create_user_tag with its organization:\n%s", logs.Bytes())
	}
	if bytes.Contains(logs.Bytes(), []byte(`"userTagName"`)) {
		t.Fatal("a request body reached the log")
	}

	// Draining: /readyz says so while in-flight requests finish; /livez stays up.
	s.API.Drain()
	if code, body := get(base + "/readyz"); code != http.StatusServiceUnavailable ||
		!strings.Contains(body, "draining") {
		t.Fatalf("/readyz while draining: %d %s", code, body)
	}
	if code, _ := get(base + "/livez"); code != http.StatusOK {
		t.Fatalf("/livez while draining: %d", code)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
