package server

import (
	"net/http"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/session"
)

func TestSessionProfilesAndInvitations(t *testing.T) {
	h := newHarness(t)
	root, created := h.rootOrg("Acme")
	wantError(t, root.submit("create_session_profile", "ACTIVITY_TYPE_CREATE_SESSION_PROFILE", map[string]any{"sessionProfileName": "bad", "scope": "activity.type =="}), http.StatusBadRequest, 3, "parameters.scope")
	r := root.submit("create_session_profile", "ACTIVITY_TYPE_CREATE_SESSION_PROFILE", map[string]any{"sessionProfileName": "tags only",
		"scope": "activity.resource == 'USER'", "expirationSeconds": "600", "notes": "n"})
	mustOK(t, r)
	profileID := r.str("activity", "result", "createSessionProfileResult", "sessionProfileId")
	g := root.query("get_session_profile", map[string]any{"sessionProfileId": profileID})
	if g.str("sessionProfile", "scope") != "activity.resource == 'USER'" {
		t.Fatalf("get_session_profile: %s", g.raw)
	}
	if n := len(root.query("get_session_profiles", nil).body["sessionProfiles"].([]any)); n != 1 {
		t.Fatalf("%d profiles", n)
	}
	// A stamp_login naming the profile binds the session key to it: the session can do what the
	// scope allows and nothing else, and lasts no longer than the profile says.
	priv, pub := h.newKey()
	h.advance(time.Millisecond)
	l := root.submit("stamp_login", "ACTIVITY_TYPE_STAMP_LOGIN", map[string]any{"publicKey": pub, "expirationSeconds": "3600", "sessionProfileId": profileID})
	mustOK(t, l)
	sc, err := session.Parse(l.str("activity", "result", "stampLoginResult", "session"), h.s.Keys.Public(custody.Notarizer), h.clock())
	if err != nil || sc.Exp != h.clock().Add(600*time.Second).Unix() {
		t.Fatalf("session %+v (want the profile's 600 s), %v", sc, err)
	}
	h.advance(time.Millisecond)
	wantError(t, root.submit("stamp_login", "ACTIVITY_TYPE_STAMP_LOGIN", map[string]any{"publicKey": pub, "sessionProfileId": "5b1c6a0e-0000-4000-8000-000000000000"}),
		http.StatusNotFound, 5, "parameters.sessionProfileId")
	sess := h.client(created.OrganizationID, priv)
	mustOK(t, sess.submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "in scope", "userIds": []string{}}))
	wantError(t, sess.submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "w", "accounts": []any{}}), http.StatusForbidden, 7, "session profile's scope")

	// Invitations.
	inv := root.submit("create_invitations", "ACTIVITY_TYPE_CREATE_INVITATIONS", map[string]any{"invitations": []any{map[string]any{
		"receiverUserName": "carol", "receiverUserEmail": "carol@example.com", "receiverUserTags": []string{}, "accessType": "ACCESS_TYPE_API", "senderUserId": created.UserID}}})
	mustOK(t, inv)
	invID := inv.str("activity", "result", "createInvitationsResult", "invitationIds", "0")
	wantError(t, root.submit("create_invitations", "ACTIVITY_TYPE_CREATE_INVITATIONS", map[string]any{"invitations": []any{map[string]any{
		"receiverUserName": "x", "receiverUserEmail": "nope", "receiverUserTags": []string{}, "accessType": "ACCESS_TYPE_API", "senderUserId": created.UserID}}}), http.StatusBadRequest, 3, "receiverUserEmail")
	mustOK(t, root.submit("delete_invitation", "ACTIVITY_TYPE_DELETE_INVITATION", map[string]any{"invitationId": invID}))
	h.advance(time.Millisecond) // the same bytes again would be the same activity
	wantError(t, root.submit("delete_invitation", "ACTIVITY_TYPE_DELETE_INVITATION", map[string]any{"invitationId": invID}), http.StatusBadRequest, 3, "parameters.invitationId")
}
