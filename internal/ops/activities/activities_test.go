package activities_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/servertest"
)

func TestWhoamiAndActivityShape(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	r := root.Query("whoami", nil)
	servertest.MustOK(t, r)
	if r.Str("organizationId") != created.OrganizationID || r.Str("userId") != created.UserID ||
		r.Str("organizationName") != "Acme" ||
		r.Str("username") != "root" {
		t.Fatalf("whoami: %s", r.Raw)
	}

	body := root.SubmitBody(
		"ACTIVITY_TYPE_CREATE_USER_TAG",
		map[string]any{"userTagName": "ops", "userIds": []string{created.UserID}},
	)
	r = root.Post("/public/v1/submit/create_user_tag", body)
	servertest.MustOK(t, r)
	a := r.Body["activity"].(map[string]any)
	for _, k := range []string{"id", "organizationId", "status", "type", "intent", "result", "votes", "fingerprint", "canApprove", "canReject", "createdAt", "updatedAt"} {
		if _, ok := a[k]; !ok {
			t.Errorf("activity lacks %q", k)
		}
	}
	if r.Str("activity", "createdAt", "seconds") == "" ||
		!strings.HasPrefix(r.Str("activity", "fingerprint"), "sha256:") {
		t.Errorf("timestamps must be strings and fingerprint sha256:..: %s", r.Raw)
	}
	if r.Str("activity", "intent", "createUserTagIntent", "userTagName") != "ops" {
		t.Errorf("intent not echoed: %s", r.Raw)
	}
	tagID := r.Str("activity", "result", "createUserTagResult", "userTagId")
	if tagID == "" {
		t.Fatalf("no userTagId: %s", r.Raw)
	}
	if r.Str("activity", "votes", "0", "userId") != created.UserID ||
		r.Str("activity", "votes", "0", "message") != string(body) {
		t.Errorf("initiator vote: %s", r.Raw)
	}
	// The same bytes return the same activity.
	r2 := root.Post("/public/v1/submit/create_user_tag", body)
	servertest.MustOK(t, r2)
	if r2.Str("activity", "id") != r.Str("activity", "id") {
		t.Fatalf("resubmission made a new activity")
	}
	// get_activity returns it exactly.
	g := root.Query("get_activity", map[string]any{"activityId": r.Str("activity", "id")})
	servertest.MustOK(t, g)
	if g.Str("activity", "fingerprint") != r.Str("activity", "fingerprint") {
		t.Fatalf("get_activity: %s", g.Raw)
	}
	// The tag shows on the user.
	u := root.Query("get_user", map[string]any{"userId": created.UserID})
	servertest.MustOK(t, u)
	if u.Str("user", "userTags", "0") != tagID {
		t.Fatalf("get_user tags: %s", u.Raw)
	}
	// list_activities filters.
	l := root.Query("list_activities", map[string]any{"filterByType": []string{"ACTIVITY_TYPE_CREATE_USER_TAG"}})
	servertest.MustOK(t, l)
	if n := len(l.Body["activities"].([]any)); n != 1 {
		t.Fatalf("list_activities: %d activities", n)
	}
}

// list_activities pages newest first and filters by status; bad pagination is a 400 naming the
// field; an organization never reads another's activities, nor their app proofs.
func TestActivityListingAndOwnership(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	var ids []string
	for _, name := range []string{"a", "b", "c"} {
		h.Advance(time.Millisecond)
		r := root.MustSubmit(
			"create_user_tag",
			"ACTIVITY_TYPE_CREATE_USER_TAG",
			map[string]any{"userTagName": name, "userIds": []string{}},
		)
		ids = append(ids, r.Str("activity", "id"))
	}
	page := root.MustQuery("list_activities", map[string]any{"paginationOptions": map[string]any{"limit": "2"}})
	if page.Len("activities") != 2 || page.Str("activities", "0", "id") != ids[2] ||
		page.Str("activities", "1", "id") != ids[1] {
		t.Fatalf("first page, newest first: %s", page.Raw)
	}
	// after and before are cursors in the listing's order (newest first).
	if next := root.MustQuery("list_activities", map[string]any{"paginationOptions": map[string]any{"limit": "2", "after": ids[1]}}); next.Len(
		"activities",
	) != 1 ||
		next.Str("activities", "0", "id") != ids[0] {
		t.Fatalf("the page after %s: %s", ids[1], next.Raw)
	}
	if prev := root.MustQuery("list_activities", map[string]any{"paginationOptions": map[string]any{"before": ids[1]}}); prev.Len(
		"activities",
	) != 1 ||
		prev.Str("activities", "0", "id") != ids[2] {
		t.Fatalf("the page before %s: %s", ids[1], prev.Raw)
	}
	if l := root.MustQuery("list_activities", map[string]any{"filterByStatus": []string{"ACTIVITY_STATUS_FAILED"}}); l.Len(
		"activities",
	) != 0 {
		t.Fatalf("no activity failed: %s", l.Raw)
	}
	for _, tc := range []struct {
		name  string
		p     map[string]any
		field string
	}{
		{"limit 0", map[string]any{"limit": "0"}, "paginationOptions.limit"},
		{"limit over 100", map[string]any{"limit": "101"}, "paginationOptions.limit"},
		{"before and after", map[string]any{"before": ids[0], "after": ids[2]}, "paginationOptions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servertest.WantError(
				t,
				root.Query("list_activities", map[string]any{"paginationOptions": tc.p}),
				http.StatusBadRequest,
				3,
				tc.field,
			)
		})
	}

	other, _ := h.RootOrg("Other")
	servertest.WantError(
		t,
		other.Query("get_activity", map[string]any{"activityId": ids[0]}),
		http.StatusNotFound,
		5,
		"activity not found",
	)
	servertest.WantError(
		t,
		other.Query("list_app_proofs", map[string]any{"activityId": ids[0]}),
		http.StatusNotFound,
		5,
		"activity not found",
	)
	if l := other.MustQuery("list_activities", nil); l.Len("activities") != 0 {
		t.Fatalf("another organization lists %d activities: %s", l.Len("activities"), l.Raw)
	}
	if p := root.MustQuery("list_app_proofs", map[string]any{"activityId": ids[0]}); p.Str("appProofs") != "[]" {
		t.Fatalf("app proofs of an activity that made none: %s", p.Raw)
	}
}
