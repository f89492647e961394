package profiles_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/session"
)

func TestSessionProfilesAndInvitations(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	servertest.WantError(
		t,
		root.Submit(
			"create_session_profile",
			"ACTIVITY_TYPE_CREATE_SESSION_PROFILE",
			map[string]any{"sessionProfileName": "bad", "scope": "activity.type =="},
		),
		http.StatusBadRequest,
		3,
		"parameters.scope",
	)
	r := root.Submit(
		"create_session_profile",
		"ACTIVITY_TYPE_CREATE_SESSION_PROFILE",
		map[string]any{"sessionProfileName": "tags only",
			"scope": "activity.resource == 'USER'", "expirationSeconds": "600", "notes": "n"},
	)
	servertest.MustOK(t, r)
	profileID := r.Str("activity", "result", "createSessionProfileResult", "sessionProfileId")
	g := root.Query("get_session_profile", map[string]any{"sessionProfileId": profileID})
	if g.Str("sessionProfile", "scope") != "activity.resource == 'USER'" {
		t.Fatalf("get_session_profile: %s", g.Raw)
	}
	if n := len(root.Query("get_session_profiles", nil).Body["sessionProfiles"].([]any)); n != 1 {
		t.Fatalf("%d profiles", n)
	}
	// A stamp_login naming the profile binds the session key to it: the session can do what the
	// scope allows and nothing else, and lasts no longer than the profile says.
	priv, pub := h.NewKey()
	h.Advance(time.Millisecond)
	l := root.Submit(
		"stamp_login",
		"ACTIVITY_TYPE_STAMP_LOGIN",
		map[string]any{"publicKey": pub, "expirationSeconds": "3600", "sessionProfileId": profileID},
	)
	servertest.MustOK(t, l)
	sc, err := session.Parse(
		l.Str("activity", "result", "stampLoginResult", "session"),
		h.Server.Keys.Public(custody.Notarizer),
		h.Now(),
	)
	if err != nil || sc.Exp != h.Now().Add(600*time.Second).Unix() {
		t.Fatalf("session %+v (want the profile's 600 s), %v", sc, err)
	}
	h.Advance(time.Millisecond)
	servertest.WantError(
		t,
		root.Submit(
			"stamp_login",
			"ACTIVITY_TYPE_STAMP_LOGIN",
			map[string]any{"publicKey": pub, "sessionProfileId": "5b1c6a0e-0000-4000-8000-000000000000"},
		),
		http.StatusNotFound,
		5,
		"parameters.sessionProfileId",
	)
	sess := h.Client(created.OrganizationID, priv)
	servertest.MustOK(
		t,
		sess.Submit(
			"create_user_tag",
			"ACTIVITY_TYPE_CREATE_USER_TAG",
			map[string]any{"userTagName": "in scope", "userIds": []string{}},
		),
	)
	servertest.WantError(
		t,
		sess.Submit(
			"create_wallet",
			"ACTIVITY_TYPE_CREATE_WALLET",
			map[string]any{"walletName": "w", "accounts": []any{}},
		),
		http.StatusForbidden,
		7,
		"session profile's scope",
	)

	// Invitations.
	inv := root.Submit(
		"create_invitations",
		"ACTIVITY_TYPE_CREATE_INVITATIONS",
		map[string]any{"invitations": []any{map[string]any{
			"receiverUserName": "carol", "receiverUserEmail": "carol@example.com", "receiverUserTags": []string{}, "accessType": "ACCESS_TYPE_API", "senderUserId": created.UserID}}},
	)
	servertest.MustOK(t, inv)
	invID := inv.Str("activity", "result", "createInvitationsResult", "invitationIds", "0")
	servertest.WantError(
		t,
		root.Submit(
			"create_invitations",
			"ACTIVITY_TYPE_CREATE_INVITATIONS",
			map[string]any{"invitations": []any{map[string]any{
				"receiverUserName": "x", "receiverUserEmail": "nope", "receiverUserTags": []string{}, "accessType": "ACCESS_TYPE_API", "senderUserId": created.UserID}}},
		),
		http.StatusBadRequest,
		3,
		"receiverUserEmail",
	)
	servertest.MustOK(
		t,
		root.Submit("delete_invitation", "ACTIVITY_TYPE_DELETE_INVITATION", map[string]any{"invitationId": invID}),
	)
	h.Advance(time.Millisecond) // the same bytes again would be the same activity
	servertest.WantError(
		t,
		root.Submit("delete_invitation", "ACTIVITY_TYPE_DELETE_INVITATION", map[string]any{"invitationId": invID}),
		http.StatusBadRequest,
		3,
		"parameters.invitationId",
	)
}

// A session profile and an invitation are their organization's: another organization neither
// reads them nor binds a login to the profile, nor deletes the invitation.
func TestProfilesAndInvitationsOwnership(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	profileID := root.MustSubmit("create_session_profile", "ACTIVITY_TYPE_CREATE_SESSION_PROFILE", map[string]any{"sessionProfileName": "p",
		"scope": "activity.resource == 'USER'", "expirationSeconds": "600"}).
		Result("createSessionProfileResult", "sessionProfileId")
	invID := root.MustSubmit("create_invitations", "ACTIVITY_TYPE_CREATE_INVITATIONS", map[string]any{"invitations": []any{map[string]any{
		"receiverUserName": "carol", "receiverUserEmail": "carol@example.com", "receiverUserTags": []string{}, "accessType": "ACCESS_TYPE_API",
		"senderUserId": created.UserID}}}).
		Result("createInvitationsResult", "invitationIds", "0")

	other, _ := h.RootOrg("Other")
	servertest.WantError(
		t,
		other.Query("get_session_profile", map[string]any{"sessionProfileId": profileID}),
		http.StatusNotFound,
		5,
		"session profile not found",
	)
	if l := other.MustQuery("get_session_profiles", nil); l.Len("sessionProfiles") != 0 {
		t.Fatalf("Other lists Acme's session profiles: %s", l.Raw)
	}
	_, pub := h.NewKey()
	servertest.WantError(
		t,
		other.Submit(
			"stamp_login",
			"ACTIVITY_TYPE_STAMP_LOGIN",
			map[string]any{"publicKey": pub, "sessionProfileId": profileID},
		),
		http.StatusNotFound,
		5,
		"parameters.sessionProfileId",
	)
	servertest.WantError(
		t,
		other.Submit("delete_invitation", "ACTIVITY_TYPE_DELETE_INVITATION", map[string]any{"invitationId": invID}),
		http.StatusBadRequest,
		3,
		"parameters.invitationId",
	)
	h.Advance(time.Millisecond)
	root.MustSubmit("delete_invitation", "ACTIVITY_TYPE_DELETE_INVITATION", map[string]any{"invitationId": invID})
}
