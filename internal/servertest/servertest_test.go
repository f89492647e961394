package servertest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/servertest"
)

func TestResponsePaths(t *testing.T) {
	r := servertest.Response{Status: http.StatusOK, Body: map[string]any{
		"activity": map[string]any{
			"id":     "a1",
			"result": map[string]any{"createUsersResult": map[string]any{"userIds": []any{"u1", "u2"}}},
		},
		"n": float64(3), "flag": true,
	}}
	for _, tc := range []struct {
		path []string
		want string
	}{
		{[]string{"activity", "id"}, "a1"},
		{[]string{"activity", "result", "createUsersResult", "userIds", "1"}, "u2"},
		{[]string{"activity", "result", "createUsersResult", "userIds", "2"}, ""},
		{[]string{"activity", "result", "createUsersResult", "userIds", "x"}, ""},
		{[]string{"n"}, "3"},
		{[]string{"flag"}, "true"},
		{[]string{"missing", "deeper"}, ""},
	} {
		if got := r.Str(tc.path...); got != tc.want {
			t.Errorf("Str(%v) = %q, want %q", tc.path, got, tc.want)
		}
	}
	if n := r.Len("activity", "result", "createUsersResult", "userIds"); n != 2 {
		t.Errorf("Len = %d", n)
	}
	if got := r.Result("createUsersResult", "userIds", "0"); got != "u1" {
		t.Errorf("Result = %q", got)
	}
	var ids []string
	r.Decode(t, &ids, "activity", "result", "createUsersResult", "userIds")
	if len(ids) != 2 || ids[1] != "u2" {
		t.Errorf("Decode = %v", ids)
	}
}

// A new harness answers a root organization's whoami; its clock moves only when told.
func TestHarness(t *testing.T) {
	h := servertest.New(t)
	start := h.Now()
	root, created := h.RootOrg("Acme")
	w := root.MustQuery("whoami", nil)
	if w.Str("organizationId") != created.OrganizationID || w.Str("userId") != created.UserID {
		t.Fatalf("whoami: %s", w.Raw)
	}
	if !h.Now().Equal(start) {
		t.Fatal("the harness clock moved by itself")
	}
	h.Advance(time.Minute)
	if h.Now().Sub(start) != time.Minute {
		t.Fatalf("Advance(1m) moved the clock by %v", h.Now().Sub(start))
	}
	servertest.WantError(
		t,
		h.Post("/public/v1/query/whoami", []byte(`{}`), nil),
		http.StatusUnauthorized,
		16,
		"not stamped",
	)
	subID, userID, priv := h.EndUser(root, "bob", "bob@example.com")
	if w := h.Client(subID, priv).MustQuery("whoami", nil); w.Str("userId") != userID {
		t.Fatalf("EndUser's key: %s", w.Raw)
	}
}
