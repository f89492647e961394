package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/store/storetest"
)

// TestDatabaseCrashUnderLoad: the PostgreSQL server crashes (every process ended at once) and
// comes back while clients submit activities. Every request completes, later: none is answered
// with an error, and every activity acknowledged is there afterwards, once.
func TestDatabaseCrashUnderLoad(t *testing.T) {
	cluster := storetest.PrivateCluster(t)
	cfg := servertest.NewConfig(t)
	cfg.DatabaseURL = cluster.URL
	h := servertest.Start(t, cfg)
	root, _ := h.RootOrg("Crash")

	const workers, perWorker = 4, 20
	var done atomic.Int32
	var mu sync.Mutex
	var failures []string
	acked := map[string]string{} // tag name -> activity id
	var slowest time.Duration
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				name := fmt.Sprintf("w%d-%d", w, i)
				body := root.SubmitBody("ACTIVITY_TYPE_CREATE_USER_TAG",
					map[string]any{"userTagName": name, "userIds": []string{}})
				hn, hv, err := root.Stamper.Stamp(body)
				if err != nil {
					panic(err)
				}
				req, _ := http.NewRequest(http.MethodPost, h.URL+"/public/v1/submit/create_user_tag",
					bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(hn, hv)
				start := time.Now()
				resp, err := http.DefaultClient.Do(req)
				took := time.Since(start)
				var raw []byte
				if err == nil {
					raw, _ = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				var out struct {
					Activity struct {
						ID, Status string
					}
				}
				mu.Lock()
				slowest = max(slowest, took)
				switch {
				case err != nil:
					failures = append(failures, fmt.Sprintf("%s: %v", name, err))
				case resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil ||
					out.Activity.Status != "ACTIVITY_STATUS_COMPLETED":
					failures = append(failures, fmt.Sprintf("%s: %d %s", name, resp.StatusCode, raw))
				default:
					acked[name] = out.Activity.ID
				}
				mu.Unlock()
				done.Add(1)
			}
		})
	}
	for done.Load() < workers*perWorker/4 {
		time.Sleep(5 * time.Millisecond)
	}
	crash := time.Now()
	cluster.Restart()
	down := time.Since(crash)
	wg.Wait()
	// Reported, not asserted: how long the database was away and the slowest request.
	t.Logf("database away %v; slowest request %v", down.Round(time.Millisecond), slowest.Round(time.Millisecond))
	for _, f := range failures {
		t.Errorf("a request failed: %s", f)
	}
	tags := root.MustQuery("list_user_tags", nil)
	var list struct {
		UserTags []struct {
			TagName string `json:"tagName"`
		} `json:"userTags"`
	}
	if err := json.Unmarshal(tags.Raw, &list); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, tag := range list.UserTags {
		seen[tag.TagName]++
	}
	for name := range acked {
		if seen[name] != 1 {
			t.Errorf("acknowledged tag %s is there %d times", name, seen[name])
		}
	}
	if len(acked) != workers*perWorker {
		t.Errorf("%d of %d requests acknowledged", len(acked), workers*perWorker)
	}
}
