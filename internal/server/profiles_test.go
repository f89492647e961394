package server

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/store"
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
	// A session key bound to the profile can do what the scope allows and nothing else (the
	// login flows that issue such keys arrive with the auth issue; bind one directly here).
	priv, pub := h.newKey()
	ctx := context.Background()
	err := h.s.Store.Update(ctx, func(tx store.Tx) error {
		u, err := directory.LoadUser(ctx, tx, created.OrganizationID, created.UserID)
		if err != nil {
			return err
		}
		k, err := directory.CreateAPIKey(ctx, tx, h.s.env(h.clock()), u, directory.APIKeySpec{Name: "s", PublicKey: pub, ExpirationSeconds: "600", CredentialType: directory.CredentialLogin})
		if err != nil {
			return err
		}
		k.SessionProfileID = profileID
		return directory.SaveAPIKey(ctx, tx, k)
	})
	if err != nil {
		t.Fatal(err)
	}
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
