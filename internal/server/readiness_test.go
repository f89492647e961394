package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/servertest"
)

// TestReadyOnlyWhenWritable: /readyz is ready only while the store takes writes. A process told
// to require a synchronous standby, over a PostgreSQL primary that has none, is not ready, says
// why, refuses activities with a 503, and its /healthz shows the database's role and standbys.
func TestReadyOnlyWhenWritable(t *testing.T) {
	cfg := servertest.NewConfig(t)
	cfg.DatabaseURL = servertest.PostgresURL(t)
	first := servertest.Start(t, cfg) // creates the deployment
	root, _ := first.RootOrg("Ready")
	get := func(h *servertest.Harness, path string) (int, string) {
		resp, err := http.Get(h.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(first, "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz over a writable primary: %d %s", code, body)
	}
	first.Close()

	cfg.RequireSyncStandby = true
	strict := servertest.Start(t, cfg)
	code, body := get(strict, "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "synchronous standby") {
		t.Fatalf("/readyz without the required synchronous standby: %d %s", code, body)
	}
	code, body = get(strict, "/healthz")
	var health struct {
		StoreRole     string `json:"storeRole"`
		StoreWritable bool   `json:"storeWritable"`
		SyncStandbys  int    `json:"syncStandbys"`
	}
	if err := json.Unmarshal([]byte(body), &health); err != nil || code != http.StatusOK ||
		health.StoreRole != "primary" || health.StoreWritable || health.SyncStandbys != 0 {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	root.H = strict
	r := root.Submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG",
		map[string]any{"userTagName": "t", "userIds": []string{}})
	servertest.WantError(t, r, http.StatusServiceUnavailable, 14, "")
}
