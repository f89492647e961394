package activity

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/policy"
	"github.com/latchkey/latchkey/internal/store"
)

// StatusAuthenticatorsNeeded is the status of an activity whose initiator must still prove more
// authentication methods (an MFA policy matched): they approve it once per method, each approval
// stamped with a credential of the method required next.
const StatusAuthenticatorsNeeded = "ACTIVITY_STATUS_AUTHENTICATORS_NEEDED"

// Authentication methods (AUTHENTICATION_TYPE_* values) a stamp can prove.
const (
	MethodAPIKey  = "AUTHENTICATION_TYPE_API_KEY"
	MethodPasskey = "AUTHENTICATION_TYPE_PASSKEY"
	MethodSession = "AUTHENTICATION_TYPE_SESSION"
)

// AuthMethod is one authentication method: its type and, optionally, the one credential (API key
// id, authenticator id) or session profile id that must be used.
type AuthMethod struct {
	Type string `json:"type"`
	ID   string `json:"id,omitempty"`
	// Cred is the credential that proved it (kept on proofs only, to count each credential once).
	Cred string `json:"cred,omitempty"`
}

// MFARequirement is the MFA policy that applies to an activity: ordered steps, each satisfied by
// any one of its methods.
type MFARequirement struct {
	PolicyID string         `json:"policyId"`
	Steps    [][]AuthMethod `json:"steps"`
}

// MFASource returns the first of userID's MFA policies (in order) whose condition holds in env,
// or nil when none does.
type MFASource func(ctx context.Context, r store.Reader, orgID, userID string, env policy.Env) (*MFARequirement, error)

// MethodOf is the authentication method a caller's stamp proves. Session credentials (read-write
// sessions and the keys minted by logins) prove SESSION, identified by their session profile;
// they do not prove the method that created the session.
func MethodOf(c *directory.Caller) AuthMethod {
	switch {
	case c.CredentialType == directory.CredentialWebAuthn:
		return AuthMethod{Type: MethodPasskey, ID: c.CredentialID, Cred: c.CredentialID}
	case strings.HasPrefix(c.CredentialType, "CREDENTIAL_TYPE_API_KEY_"):
		return AuthMethod{Type: MethodAPIKey, ID: c.CredentialID, Cred: c.CredentialID}
	default:
		return AuthMethod{Type: MethodSession, ID: c.SessionProfileID, Cred: c.CredentialID}
	}
}

func (m AuthMethod) satisfies(want AuthMethod) bool {
	return m.Type == want.Type && (want.ID == "" || want.ID == m.ID)
}

// progress returns how many of the steps the methods proved so far satisfy, in order: each
// proof counts for the step it is presented at when it matches one of that step's methods. A
// credential counts once: signing again with it proves no further factor.
func (r *MFARequirement) progress(done []AuthMethod) int {
	n := 0
	seen := map[string]bool{}
	for _, m := range done {
		if n == len(r.Steps) {
			break
		}
		if seen[m.Cred] {
			continue
		}
		seen[m.Cred] = true
		for _, want := range r.Steps[n] {
			if m.satisfies(want) {
				n++
				break
			}
		}
	}
	return n
}

// MFAState is an activity's MFA progress as get_mfa_status shows it.
type MFAState struct {
	PolicyID  string
	UserID    string
	Satisfied bool
	Done      []AuthMethod
	Steps     [][]AuthMethod
}

// MFAStatusOf reads the MFA progress of an activity that waits for its initiator's
// authenticators; nil when the activity waits for none.
func MFAStatusOf(ctx context.Context, r store.Reader, orgID, activityID string) (*MFAState, error) {
	rec, err := r.Get(ctx, PendingKind, activityID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && rec.OrgID != orgID) {
		return nil, nil
	}
	if err != nil {
		return nil, apierr.Internalf(err, "reading pending activity")
	}
	var p pending
	if err := json.Unmarshal(rec.Data, &p); err != nil {
		return nil, apierr.Internalf(err, "decoding pending activity")
	}
	if p.MFA == nil {
		return nil, nil
	}
	return &MFAState{
		PolicyID:  p.MFA.PolicyID,
		UserID:    p.UserID,
		Satisfied: p.MFA.progress(p.MFADone) == len(p.MFA.Steps),
		Done:      p.MFADone,
		Steps:     p.MFA.Steps,
	}, nil
}

// mfaCheck is the first step of authorization: when an MFA policy of the initiator matches and
// the methods proved so far (x.mfaDone) do not satisfy it, the activity waits for them.
func (e *Engine) mfaCheck(ctx context.Context, x *Exec, cond policy.Env) (*Decision, error) {
	if e.svc.MFA == nil || x.Caller.ParentAccess {
		return nil, nil
	}
	req, err := e.svc.MFA(ctx, x.R, x.OrgID, x.Caller.User.ID, cond)
	if err != nil || req == nil {
		return nil, err
	}
	x.mfa = req
	if req.progress(x.mfaDone) == len(req.Steps) {
		return nil, nil
	}
	return &Decision{Outcome: policy.OutcomeRequiresConsensus, Authenticators: true}, nil
}
