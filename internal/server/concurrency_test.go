package server_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/notify"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// bothStores runs fn against one SQLite server (a and b are the same process) and, with
// LATCHKEY_TEST_DATABASE_URL set, against two processes over one PostgreSQL, each delivering
// e-mail to one outbox.
func bothStores(t *testing.T, fn func(t *testing.T, a, b *servertest.Harness, out *notify.Outbox)) {
	t.Run("sqlite", func(t *testing.T) {
		h, out := otpHarness(t)
		fn(t, h, h, out)
	})
	t.Run("postgres-two-processes", func(t *testing.T) {
		out, err := notify.NewOutbox(filepath.Join(t.TempDir(), "outbox.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		a, b := twoProcessesWith(t, func(c *server.Config) { c.Emailer, c.Texter = out, out })
		fn(t, a, b, out)
	})
}

// lastCodeTo reads the newest one-time code sent to the address.
func lastCodeTo(t *testing.T, out *notify.Outbox, to string) string {
	t.Helper()
	es, err := notify.ReadOutbox(out.Path())
	if err != nil {
		t.Fatal(err)
	}
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Email != nil && es[i].Email.To == to {
			if m := otpCodeLine.FindStringSubmatch(es[i].Email.Text); m != nil {
				return m[1]
			}
		}
	}
	t.Fatalf("no code sent to %s", to)
	return ""
}

// A verification token logs in once, even when two logins race with it (through two
// processes on PostgreSQL): exactly one gets a session, the other is told it was used.
func TestVerificationTokenSingleUseUnderConcurrency(t *testing.T) {
	bothStores(t, func(t *testing.T, a, b *servertest.Harness, out *notify.Outbox) {
		root, _ := a.RootOrg("Parent")
		for round := 0; round < 5; round++ {
			email := fmt.Sprintf("racer%d@example.com", round)
			subID, _, _ := a.EndUser(root, "racer", email)
			r := root.Submit(
				"init_otp",
				"ACTIVITY_TYPE_INIT_OTP_V3",
				map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": email, "appName": "Acme"},
			)
			servertest.MustOK(t, r)
			otpID := r.Str("activity", "result", "initOtpResultV2", "otpId")
			r = root.Submit(
				"verify_otp",
				"ACTIVITY_TYPE_VERIFY_OTP",
				map[string]any{"otpId": otpID, "otpCode": lastCodeTo(t, out, email)},
			)
			servertest.MustOK(t, r)
			tok := r.Str("activity", "result", "verifyOtpResult", "verificationToken")
			var wg sync.WaitGroup
			results := make([]servertest.Response, 4)
			for i := range results {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					h := []*servertest.Harness{a, b}[i%2]
					_, sessPub := h.NewKey()
					results[i] = h.Client(subID, root.Priv).Submit("otp_login", "ACTIVITY_TYPE_OTP_LOGIN",
						map[string]any{"verificationToken": tok, "publicKey": sessPub})
				}(i)
			}
			wg.Wait()
			won := 0
			for _, r := range results {
				switch {
				case r.Status == http.StatusOK && r.Str("activity", "status") == "ACTIVITY_STATUS_COMPLETED":
					won++
				case r.Status == http.StatusBadRequest:
				default:
					t.Errorf("unexpected answer %d %s", r.Status, r.Raw)
				}
			}
			if won != 1 {
				t.Fatalf("round %d: %d logins succeeded with one token", round, won)
			}
		}
	})
}

// Concurrent changes to the root quorum and to its users never leave an organization with a
// quorum it cannot reach: adding a user to the quorum races deleting that user, and afterwards
// every quorum member exists and the threshold is at most their number.
func TestRootQuorumStaysReachableUnderConcurrency(t *testing.T) {
	bothStores(t, func(t *testing.T, a, b *servertest.Harness, _ *notify.Outbox) {
		root, created := a.RootOrg("Acme")
		for round := 0; round < 8; round++ {
			u := root.Submit(
				"create_users",
				"ACTIVITY_TYPE_CREATE_USERS_V4",
				map[string]any{"users": []any{map[string]any{
					"userName": fmt.Sprintf(
						"u%d",
						round,
					), "apiKeys": []any{}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}},
			)
			servertest.MustOK(t, u)
			uid := u.Str("activity", "result", "createUsersResult", "userIds", "0")
			var wg sync.WaitGroup
			var add, del servertest.Response
			wg.Add(2)
			go func() {
				defer wg.Done()
				add = a.Client(created.OrganizationID, root.Priv).
					Submit("update_root_quorum", "ACTIVITY_TYPE_UPDATE_ROOT_QUORUM",
						map[string]any{"threshold": 1, "userIds": []string{created.UserID, uid}})
			}()
			go func() {
				defer wg.Done()
				del = b.Client(created.OrganizationID, root.Priv).Submit("delete_users", "ACTIVITY_TYPE_DELETE_USERS",
					map[string]any{"userIds": []string{uid}})
			}()
			wg.Wait()
			org := root.Query("get_organization", nil)
			servertest.MustOK(t, org)
			quorum, _ := org.Body["organizationData"].(map[string]any)["rootQuorum"].(map[string]any)
			ids, _ := quorum["userIds"].([]any)
			threshold := quorum["threshold"].(float64)
			for _, id := range ids {
				if r := root.Query("get_user", map[string]any{"userId": id}); r.Status != http.StatusOK {
					t.Fatalf(
						"round %d: quorum member %v does not exist (add %d, delete %d): the quorum is unreachable",
						round,
						id,
						add.Status,
						del.Status,
					)
				}
			}
			if int(threshold) > len(ids) {
				t.Fatalf("round %d: threshold %v over %d members", round, threshold, len(ids))
			}
			if len(ids) == 2 {
				// The user joined, so the deletion must have been refused; put the quorum back.
				if del.Status == http.StatusOK && del.Str("activity", "status") == "ACTIVITY_STATUS_COMPLETED" {
					t.Fatalf("round %d: both the deletion and the quorum change completed", round)
				}
				a.Advance(time.Millisecond)
				servertest.MustOK(t, root.Submit("update_root_quorum", "ACTIVITY_TYPE_UPDATE_ROOT_QUORUM",
					map[string]any{"threshold": 1, "userIds": []string{created.UserID}}))
			}
		}
	})
}
