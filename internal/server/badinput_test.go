package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/servertest"
)

// Bad input found by a probe was stored instead of refused: a 1 MiB name with NUL bytes and
// control characters, invalid UTF-8 (replaced with U+FFFD, so the stored value differed from the
// signed bytes), and duplicate member names (the last won). Each is now a 400 naming the field,
// and nothing is stored: no activity, no profile, no feature.
func TestBadInputIsRefusedNotStored(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Strict")
	huge := strings.Repeat("a", 1<<20) + "\x00\x07"
	raw := func(params string) []byte {
		return []byte(
			fmt.Sprintf(
				`{"parameters":%s,"organizationId":%q,"timestampMs":"%d","type":"ACTIVITY_TYPE_CREATE_SESSION_PROFILE"}`,
				params,
				created.OrganizationID,
				h.Now().UnixMilli(),
			),
		)
	}
	tests := []struct {
		name  string
		path  string
		body  []byte
		field string
	}{
		{
			"1 MiB name with NUL and BEL",
			"create_session_profile",
			root.SubmitBody("ACTIVITY_TYPE_CREATE_SESSION_PROFILE",
				map[string]any{"sessionProfileName": huge, "scope": "true"}),
			"parameters.sessionProfileName",
		},
		{
			"name with a control character",
			"create_session_profile",
			root.SubmitBody("ACTIVITY_TYPE_CREATE_SESSION_PROFILE",
				map[string]any{"sessionProfileName": "ops\x1b[31m", "scope": "true"}),
			"parameters.sessionProfileName",
		},
		{"name over 256 bytes", "create_session_profile", root.SubmitBody(
			"ACTIVITY_TYPE_CREATE_SESSION_PROFILE",
			map[string]any{
				"sessionProfileName": strings.Repeat("n", 257),
				"scope":              "true",
			},
		), "parameters.sessionProfileName"},
		{"notes with NUL", "create_session_profile", root.SubmitBody("ACTIVITY_TYPE_CREATE_SESSION_PROFILE",
			map[string]any{"sessionProfileName": "p", "scope": "true", "notes": "a\x00b"}), "parameters.notes"},
		{"feature value with NUL", "set_organization_feature", root.SubmitBody("ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE",
			map[string]any{"name": "FEATURE_NAME_WEBHOOK", "value": "https://x.example/\x00"}), "parameters.value"},
		{"feature value of 1 MiB", "set_organization_feature", root.SubmitBody("ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE",
			map[string]any{"name": "FEATURE_NAME_WEBHOOK", "value": strings.Repeat("v", 1<<20)}), "parameters.value"},
		{
			"invalid UTF-8 in a string",
			"create_session_profile",
			raw("{\"sessionProfileName\":\"caf\xe9\",\"scope\":\"true\"}"),
			"parameters.sessionProfileName",
		},
		{"a lone surrogate escape", "create_session_profile", raw(`{"sessionProfileName":"x\ud800y","scope":"true"}`),
			"parameters.sessionProfileName"},
		{"organizationId twice", "create_session_profile", []byte(fmt.Sprintf(
			`{"parameters":{"sessionProfileName":"p","scope":"true"},"organizationId":%q,"organizationId":"00000000-0000-4000-8000-000000000000","timestampMs":"%d","type":"ACTIVITY_TYPE_CREATE_SESSION_PROFILE"}`,
			created.OrganizationID,
			h.Now().UnixMilli(),
		)), "organizationId"},
		{
			"a nested member twice",
			"create_session_profile",
			raw(`{"sessionProfileName":"p","scope":"true","scope":"false"}`),
			"parameters.scope",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.Advance(time.Millisecond)
			r := root.Post("/public/v1/submit/"+tc.path, tc.body)
			if r.Status != http.StatusBadRequest || !strings.Contains(r.Str("message"), tc.field) {
				t.Fatalf("%d %.300s", r.Status, r.Raw)
			}
		})
	}
	// A duplicate in a query body is refused too.
	q := root.Post(
		"/public/v1/query/get_organization",
		[]byte(
			fmt.Sprintf(`{"organizationId":%q,"organizationId":%q}`, created.OrganizationID, created.OrganizationID),
		),
	)
	if q.Status != http.StatusBadRequest || !strings.Contains(q.Str("message"), "organizationId") {
		t.Fatalf("query with a duplicate member: %d %s", q.Status, q.Raw)
	}
	if n := len(root.Query("list_activities", nil).Body["activities"].([]any)); n != 0 {
		t.Fatalf("%d activities were recorded for refused requests", n)
	}
	if p := root.Query("list_session_profiles", nil); strings.Contains(string(p.Raw), "sessionProfileId") {
		t.Fatalf("a profile was stored: %s", p.Raw)
	}
	// Line breaks are allowed in notes; a plain name passes.
	servertest.MustOK(t, root.Submit("create_session_profile", "ACTIVITY_TYPE_CREATE_SESSION_PROFILE",
		map[string]any{"sessionProfileName": "café ops", "scope": "true", "notes": "line one\nline two\ttabbed"}))
}
