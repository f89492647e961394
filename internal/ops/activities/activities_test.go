package activities_test

import (
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/servertest"
)

func TestWhoamiAndActivityShape(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	r := root.Query("whoami", nil)
	servertest.MustOK(t, r)
	if r.Str("organizationId") != created.OrganizationID || r.Str("userId") != created.UserID || r.Str("organizationName") != "Acme" || r.Str("username") != "root" {
		t.Fatalf("whoami: %s", r.Raw)
	}

	body := root.SubmitBody("ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "ops", "userIds": []string{created.UserID}})
	r = root.Post("/public/v1/submit/create_user_tag", body)
	servertest.MustOK(t, r)
	a := r.Body["activity"].(map[string]any)
	for _, k := range []string{"id", "organizationId", "status", "type", "intent", "result", "votes", "fingerprint", "canApprove", "canReject", "createdAt", "updatedAt"} {
		if _, ok := a[k]; !ok {
			t.Errorf("activity lacks %q", k)
		}
	}
	if r.Str("activity", "createdAt", "seconds") == "" || !strings.HasPrefix(r.Str("activity", "fingerprint"), "sha256:") {
		t.Errorf("timestamps must be strings and fingerprint sha256:..: %s", r.Raw)
	}
	if r.Str("activity", "intent", "createUserTagIntent", "userTagName") != "ops" {
		t.Errorf("intent not echoed: %s", r.Raw)
	}
	tagID := r.Str("activity", "result", "createUserTagResult", "userTagId")
	if tagID == "" {
		t.Fatalf("no userTagId: %s", r.Raw)
	}
	if r.Str("activity", "votes", "0", "userId") != created.UserID || r.Str("activity", "votes", "0", "message") != string(body) {
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
