package server_test

import (
	"net/http"
	"testing"

	"github.com/latchkey/latchkey/internal/servertest"
)

// TestWhoamiNamingTheParent: whoami asked of the parent organization with a sub-organization's
// key answers the sub-organization's user, as Turnkey's whoami maps a credential to its
// sub-organization (sdk-browser's e-mail login asks it so). Only whoami widens: another query
// naming the parent, or whoami naming an organization that is not the key's parent, is refused.
func TestWhoamiNamingTheParent(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Parent")
	subID, userID, endUserPriv := h.EndUser(root, "alice", "alice@example.com")
	_, other := h.RootOrg("Other")

	for _, org := range []string{created.OrganizationID, subID} {
		w := h.Client(org, endUserPriv).Query("whoami", nil)
		servertest.MustOK(t, w)
		if w.Str("organizationId") != subID || w.Str("userId") != userID || w.Str("username") != "alice" {
			t.Fatalf("whoami naming %s: %s", org, w.Raw)
		}
	}
	servertest.WantError(
		t,
		h.Client(other.OrganizationID, endUserPriv).Query("whoami", nil),
		http.StatusUnauthorized,
		16,
		"could not find public key",
	)
	servertest.WantError(
		t,
		h.Client(created.OrganizationID, endUserPriv).Query("get_organization", nil),
		http.StatusUnauthorized,
		16,
		"could not find public key",
	)
	// The parent's own key still answers as the parent.
	w := root.Query("whoami", nil)
	servertest.MustOK(t, w)
	if w.Str("organizationId") != created.OrganizationID {
		t.Fatalf("the parent's whoami: %s", w.Raw)
	}
}
