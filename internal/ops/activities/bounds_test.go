package activities_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/costtest"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

// putLarge stores n activities of org whose JSON is about size bytes (a long intent), one
// millisecond apart, and returns their ids newest first.
func putLarge(t *testing.T, h *servertest.Harness, org string, n, size int, status string) []string {
	t.Helper()
	ctx := context.Background()
	ids := make([]string, n)
	start := h.Now().Add(-time.Hour)
	err := h.Server.Store.Update(ctx, func(tx store.Tx) error {
		for i := range n {
			a := store.Activity{ID: id.New(), OrgID: org, Fingerprint: id.New(), Status: status,
				Type: "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", CreatedAt: start.Add(time.Duration(i) * time.Millisecond)}
			a.UpdatedAt = a.CreatedAt
			a.Data = fmt.Appendf(nil, `{"id":%q,"organizationId":%q,"status":%q,"type":%q,`+
				`"intent":{"signRawPayloadIntentV2":{"payload":%q}},"votes":[],"canApprove":false,"canReject":false}`,
				a.ID, org, status, a.Type, strings.Repeat("ab", size/2))
			if err := tx.PutActivity(ctx, a); err != nil {
				return err
			}
			ids[n-1-i] = a.ID
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// post sends a stamped query and returns its status and the bytes of its answer, read without
// keeping them (the test's own cost stays out of the measure).
func post(t *testing.T, c *servertest.Client, op string, params map[string]any) (status int, answer []byte) {
	t.Helper()
	params["organizationId"] = c.Org
	body, _ := json.Marshal(params)
	name, value, err := c.Stamper.Stamp(body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, c.H.URL+"/public/v1/query/"+op, bytes.NewReader(body))
	req.Header.Set(name, value)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var head bytes.Buffer
	n, _ := io.Copy(&limitedWriter{w: &head, n: 4096}, resp.Body)
	return resp.StatusCode, append(head.Bytes(), fmt.Sprintf(" (%d bytes)", n)...)
}

// leastAllocated is the least of three measures of what f allocates: pools (encoders' buffers,
// the database driver's) make one measure vary by a few megabytes.
func leastAllocated(f func()) int64 {
	least := costtest.Allocated(f)
	for range 2 {
		least = min(least, costtest.Allocated(f))
	}
	return least
}

// limitedWriter keeps the first n bytes written and counts the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(l.n, len(p))
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// answerBytes is the size post appended to an answer.
func answerBytes(answer []byte) int {
	var n int
	i := bytes.LastIndex(answer, []byte(" ("))
	fmt.Sscanf(string(answer[i:]), " (%d bytes)", &n)
	return n
}

// A page of list_activities is bounded by bytes as well as by count: over 10 or 40 stored
// activities of 512 KB, a page of limit 100 answers about MaxPageBytes and costs the same.
// Before, it answered every activity (5 MB, then 20 MB) and its cost grew with them.
func TestListActivitiesPageBoundedByBytes(t *testing.T) {
	h := servertest.New(t)
	const size = 512 << 10
	few, fewOrg := h.RootOrg("Few")
	many, manyOrg := h.RootOrg("Many")
	putLarge(t, h, fewOrg.OrganizationID, 10, size, "ACTIVITY_STATUS_COMPLETED")
	ids := putLarge(t, h, manyOrg.OrganizationID, 40, size, "ACTIVITY_STATUS_COMPLETED")
	query := func(c *servertest.Client) (int64, int) {
		var status int
		var answer []byte
		alloc := leastAllocated(func() {
			status, answer = post(
				t,
				c,
				"list_activities",
				map[string]any{"paginationOptions": map[string]any{"limit": "100"}},
			)
		})
		if status != http.StatusOK {
			t.Fatalf("list_activities: %d %s", status, answer)
		}
		return alloc, answerBytes(answer)
	}
	query(few) // warm up
	allocFew, bytesFew := query(few)
	allocMany, bytesMany := query(many)
	t.Logf("10 activities: answer %d bytes, allocated %d; 40: answer %d bytes, allocated %d",
		bytesFew, allocFew, bytesMany, allocMany)
	const maxAnswer = 4<<20 + size + 64<<10
	if bytesMany > maxAnswer || bytesFew > maxAnswer {
		t.Errorf("answers of %d and %d bytes, over %d", bytesFew, bytesMany, maxAnswer)
	}
	if float64(allocMany) > 1.5*float64(allocFew)+float64(1<<20) {
		t.Errorf("the page's cost grows with the activities it does not return: %d bytes over 10, %d over 40",
			allocFew, allocMany)
	}
	if limit := int64(12 * maxAnswer); allocMany > limit {
		t.Errorf("a page allocated %d bytes, over %d", allocMany, limit)
	}
	// The cursors still work: paging after the last activity of each page, or before the first,
	// lists every activity once, in order, in pages shorter than their limit.
	pageIDs := func(r servertest.Response) []string {
		var out []string
		for i := range r.Len("activities") {
			out = append(out, r.Str("activities", fmt.Sprint(i), "id"))
		}
		return out
	}
	var after, before []string
	pages := 0
	for cursor := ""; pages <= len(ids); pages++ {
		p := map[string]any{"limit": "100"}
		if cursor != "" {
			p["after"] = cursor
		}
		got := pageIDs(many.MustQuery("list_activities", map[string]any{"paginationOptions": p}))
		if len(got) == 0 {
			break
		}
		after, cursor = append(after, got...), got[len(got)-1]
	}
	for cursor := ids[len(ids)-1]; ; {
		got := pageIDs(many.MustQuery("list_activities",
			map[string]any{"paginationOptions": map[string]any{"limit": "100", "before": cursor}}))
		if len(got) == 0 {
			break
		}
		before, cursor = append(got, before...), got[0]
	}
	before = append(before, ids[len(ids)-1])
	if strings.Join(after, ",") != strings.Join(ids, ",") || strings.Join(before, ",") != strings.Join(ids, ",") ||
		pages < 5 {
		t.Errorf("paging through 40 activities of 512 KB in %d pages:\nafter:  %v\nbefore: %v\nwant:   %v",
			pages, after, before, ids)
	}
}

// filterByStatus and filterByType are bounded in count and de-duplicated: 36,000 copies of a
// status are refused with a 400 naming the field and the limit (before, SQLite answered 500:
// one SQL parameter per value), and a few repeated values list as one.
func TestListActivitiesFilterBounds(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	root.MustSubmit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG",
		map[string]any{"userTagName": "a", "userIds": []string{}})
	many := make([]string, 36000)
	for i := range many {
		many[i] = "ACTIVITY_STATUS_COMPLETED"
	}
	servertest.WantError(t, root.Query("list_activities", map[string]any{"filterByStatus": many}),
		http.StatusBadRequest, 3, "filterByStatus")
	types := make([]string, 36000)
	for i := range types {
		types[i] = "ACTIVITY_TYPE_CREATE_USER_TAG"
	}
	servertest.WantError(t, root.Query("list_activities", map[string]any{"filterByType": types}),
		http.StatusBadRequest, 3, "filterByType")
	l := root.MustQuery("list_activities", map[string]any{
		"filterByStatus": many[:5], "filterByType": types[:5]})
	if l.Len("activities") != 1 {
		t.Fatalf("repeated filters: %s", l.Raw)
	}
}
