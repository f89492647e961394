package activity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/policy"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/tracing"
	"github.com/latchkey/latchkey/internal/wire"
)

const (
	policyAllow     = policy.OutcomeAllow
	policyConsensus = policy.OutcomeRequiresConsensus

	// PendingKind is the record kind of pending (see below); an organization owns its records.
	PendingKind = "pending_activity"
)

// pending is what an activity waiting for approvals needs to run later: which operation and
// version, and who initiated it (their credential is the first vote). It is kept beside the
// activity until the activity completes, fails or is rejected, and serves as the row that
// serialises concurrent votes (a locking read on PostgreSQL, the single writer on SQLite).
type pending struct {
	Path              string `json:"path"`
	Type              string `json:"type"` // the exact submitted type
	IntentMember      string `json:"intentMember"`
	ResultMember      string `json:"resultMember"`
	GenerateAppProofs bool   `json:"generateAppProofs,omitempty"`
	UserID            string `json:"userId"`
	CredentialID      string `json:"credentialId"`
	CredentialType    string `json:"credentialType"`
	PublicKey         string `json:"publicKey"`
	Scheme            string `json:"scheme"`
	Signature         string `json:"signature"`
	// MFA is the MFA policy that matched the initiator; MFADone the methods proven so far (the
	// initiator's stamp, then each of their approvals).
	MFA     *MFARequirement `json:"mfa,omitempty"`
	MFADone []AuthMethod    `json:"mfaDone,omitempty"`
	// SealedIntent is the intent as submitted, sealed, for an operation that redacts what it
	// stores and echoes: the stored activity lacks the secret, and running it on approval needs it.
	SealedIntent []byte `json:"sealedIntent,omitempty"`
}

func pendingBinding(orgID, activityID string) custody.Binding {
	return custody.Binding{OrgID: orgID, Kind: PendingKind, ID: activityID}
}

// sealIntent keeps a redacting operation's full intent with the pending activity.
func (e *Engine) sealIntent(p *pending, op *Operation, intent any, orgID, activityID string) error {
	if !op.Redact.set() {
		return nil
	}
	b, err := json.Marshal(intent)
	if err != nil {
		return apierr.Internalf(err, "encoding intent")
	}
	if p.SealedIntent, err = e.svc.Keyring.Seal(b, pendingBinding(orgID, activityID)); err != nil {
		return apierr.Internalf(err, "sealing intent")
	}
	return nil
}

func (p *pending) initiatorVoter(u *directory.User, voteID string, at time.Time) Voter {
	return Voter{User: u, VoteID: voteID, CredentialID: p.CredentialID, CredentialType: p.CredentialType, PublicKey: p.PublicKey, At: at}
}

func savePending(ctx context.Context, tx store.Tx, orgID, activityID string, p *pending, now time.Time) error {
	b, err := json.Marshal(p)
	if err != nil {
		return apierr.Internalf(err, "encoding pending activity")
	}
	if err := tx.Put(ctx, store.Record{Kind: PendingKind, ID: activityID, OrgID: orgID, Data: b, CreatedAt: now, UpdatedAt: now}); err != nil {
		return apierr.Internalf(err, "writing pending activity")
	}
	return nil
}

// RenderFor is an activity as the caller sees it: canApprove and canReject are true only for an
// activity that waits for approvals, to a user of its organization who has not voted yet.
func RenderFor(data []byte, c *directory.Caller) []byte {
	mfa := bytes.Contains(data, []byte(`"status":"`+StatusAuthenticatorsNeeded+`"`))
	if (!mfa && !bytes.Contains(data, []byte(`"status":"`+StatusConsensusNeeded+`"`))) || c == nil {
		return data
	}
	var w Wire
	if err := json.Unmarshal(data, &w); err != nil {
		return data
	}
	can := !c.ParentAccess && w.OrganizationID == c.Target.ID
	for _, v := range w.Votes {
		if v.UserId == c.User.ID {
			can = false
		}
	}
	if mfa { // only the initiator, proving their next factor
		can = !c.ParentAccess && w.OrganizationID == c.Target.ID && len(w.Votes) > 0 && w.Votes[0].UserId == c.User.ID
	}
	if can == w.CanApprove && can == w.CanReject {
		return data
	}
	w.CanApprove, w.CanReject = can, can
	out, err := json.Marshal(&w)
	if err != nil {
		return data
	}
	return out
}

// ErrNoFingerprint is Turnkey's answer for a vote on an unknown fingerprint.
func errNoFingerprint() error {
	return apierr.New(apierr.NotFound, "NOT_FOUND", "No activity found with fingerprint. Consensus activities must target an existing activity by fingerprint")
}

// vote records an approval or a rejection of the activity holding fingerprint fp, by the
// caller, then decides it again: enough approvals run it (exactly once: votes on one activity
// are serialised), a rejection ends it. It returns the target activity.
func (e *Engine) vote(ctx context.Context, caller *directory.Caller, orgID, fp string, approve bool, raw []byte) ([]byte, error) {
	var out []byte
	after := &afterCommit{}
	outer := ctx
	tctx, span := tracing.Start(ctx, "store.transaction")
	err := e.svc.Store.Update(tctx, func(tx store.Tx) error {
		ctx := after.inTransaction(tctx)
		out = nil
		act, err := tx.GetActivityByFingerprint(ctx, fp)
		if errors.Is(err, store.ErrNotFound) {
			return errNoFingerprint()
		}
		if err != nil {
			return apierr.Internalf(err, "reading activity")
		}
		if act.OrgID != orgID {
			return apierr.New(apierr.InvalidArgument, "ORGANIZATION_MISMATCH", "organization mismatch: the activity belongs to another organization")
		}
		if act.Status != StatusConsensusNeeded && act.Status != StatusAuthenticatorsNeeded {
			out = act.Data
			return nil
		}
		rec, err := tx.Get(ctx, PendingKind, act.ID) // the lock that serialises votes
		if err == nil {
			// Read the activity again now that we hold the lock: another vote may have
			// finished it meanwhile.
			act, err = tx.GetActivity(ctx, act.ID)
		}
		if errors.Is(err, store.ErrNotFound) || (err == nil && act.Status != StatusConsensusNeeded && act.Status != StatusAuthenticatorsNeeded) {
			if a, gerr := tx.GetActivity(ctx, act.ID); gerr == nil {
				out = a.Data
				return nil
			}
		}
		if err != nil {
			return apierr.Internalf(err, "reading pending activity")
		}
		var p pending
		if err := json.Unmarshal(rec.Data, &p); err != nil {
			return apierr.Internalf(err, "decoding pending activity")
		}
		var w Wire
		if err := json.Unmarshal(act.Data, &w); err != nil {
			return apierr.Internalf(err, "decoding activity")
		}
		if caller.ParentAccess {
			return apierr.Denied("request not authorized: a parent organization cannot vote in a sub-organization")
		}
		mfa := act.Status == StatusAuthenticatorsNeeded
		if mfa && caller.User.ID != p.UserID {
			return apierr.New(apierr.FailedPrecondition, "AUTHENTICATORS_NEEDED", "the activity waits for its initiator to prove more authentication methods; only the initiator can approve or reject it now")
		}
		for _, v := range w.Votes {
			if v.UserId == caller.User.ID && !mfa {
				out = act.Data // already voted: nothing changes
				return nil
			}
		}
		now := e.svc.Now()
		selection := "VOTE_SELECTION_APPROVED"
		if !approve {
			selection = "VOTE_SELECTION_REJECTED"
		}
		v := wire.Vote{Id: id.New(), UserId: caller.User.ID, User: VoteUser(caller.User), ActivityId: act.ID, Selection: selection,
			Message: string(raw), PublicKey: caller.PublicKey, Signature: caller.Signature, Scheme: caller.Scheme, CreatedAt: Timestamp(now)}
		w.Votes = append(w.Votes, v)
		w.UpdatedAt = Timestamp(now)
		if !approve {
			w.Status = StatusRejected
			return e.finishVote(ctx, tx, &w, act, true, &out)
		}
		if mfa {
			p.MFADone = append(p.MFADone, MethodOf(caller))
			if err := savePending(ctx, tx, act.OrgID, act.ID, &p, now); err != nil {
				return err
			}
		}
		return e.decideAgain(ctx, tx, caller, &p, &w, act, v.Id, now, &out)
	})
	endTransaction(span, "vote", err)
	if err != nil {
		return nil, err
	}
	after.run(outer)
	if e.svc.Committed != nil {
		e.svc.Committed()
	}
	return RenderFor(out, caller), nil
}

func (e *Engine) finishVote(ctx context.Context, tx store.Tx, w *Wire, act store.Activity, terminal bool, out *[]byte) error {
	b, err := json.Marshal(w)
	if err != nil {
		return apierr.Internalf(err, "encoding activity")
	}
	*out = b
	if terminal {
		if err := tx.Delete(ctx, PendingKind, act.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return apierr.Internalf(err, "removing pending activity")
		}
	}
	now := e.svc.Now()
	if e.svc.OnActivity != nil {
		org, err := directory.LoadOrganization(ctx, tx, act.OrgID)
		if err != nil {
			return err
		}
		if err := e.svc.OnActivity(ctx, tx, org, now, b); err != nil {
			return err
		}
	}
	return tx.PutActivity(ctx, store.Activity{ID: act.ID, OrgID: act.OrgID, Fingerprint: act.Fingerprint, Status: w.Status, Type: act.Type,
		CreatedAt: act.CreatedAt, UpdatedAt: now, Data: b})
}

// decideAgain re-evaluates an activity with its current approvals and runs it when allowed.
func (e *Engine) decideAgain(ctx context.Context, tx store.Tx, caller *directory.Caller, p *pending, w *Wire, act store.Activity, voteID string, now time.Time, out *[]byte) error {
	op := e.reg.submit[p.Path]
	wop, ok := wire.Lookup(wire.Submit, p.Path)
	if op == nil || !ok {
		return apierr.Internalf(nil, "pending activity of unknown operation %s", p.Path)
	}
	version, ok := wop.Version(p.Type)
	if !ok {
		version = &wop.Versions[0]
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(w.Intent, &members); err != nil {
		return apierr.Internalf(err, "decoding intent")
	}
	raw := []byte(members[p.IntentMember])
	if p.SealedIntent != nil {
		var err error
		if raw, err = e.svc.Keyring.Open(p.SealedIntent, pendingBinding(act.OrgID, act.ID)); err != nil {
			return apierr.Internalf(err, "opening sealed intent")
		}
	}
	intent := version.NewIntent()
	if err := json.Unmarshal(raw, intent); err != nil {
		return apierr.Internalf(err, "decoding intent")
	}
	initiator, err := directory.LoadUser(ctx, tx, act.OrgID, p.UserID)
	if err != nil {
		return err
	}
	// Voters: the approvals still inside the window.
	var voters []Voter
	for _, v := range w.Votes {
		at := timeOf(v.CreatedAt)
		if v.Selection != "VOTE_SELECTION_APPROVED" || now.Sub(at) > ApprovalWindow {
			continue
		}
		u, err := directory.LoadUser(ctx, tx, act.OrgID, v.UserId)
		if err != nil {
			continue // the user was deleted: their vote no longer counts
		}
		vt := Voter{User: u, VoteID: v.Id, PublicKey: v.PublicKey, At: at}
		if v.UserId == p.UserID && v.Id == w.Votes[0].Id {
			vt = p.initiatorVoter(u, v.Id, at)
		}
		voters = append(voters, vt)
	}
	ic := *caller
	ic.User, ic.Org = initiator, caller.Target
	ic.CredentialID, ic.CredentialType, ic.PublicKey, ic.Scheme, ic.Signature = p.CredentialID, p.CredentialType, p.PublicKey, p.Scheme, p.Signature
	x := &Exec{Ctx: ctx, Tx: tx, R: tx, Caller: &ic, OrgID: act.OrgID, ActivityID: act.ID, Type: act.Type, Now: now, Services: e.svc, GenerateAppProofs: p.GenerateAppProofs,
		mfaDone: p.MFADone}
	if op.Prepare.set() {
		prepared, err := op.Prepare.call(x, intent)
		if err != nil {
			return e.failVote(ctx, tx, w, act, err, out)
		}
		x.Prepared = prepared
	}
	d := e.decide(x, op, intent, voters)
	if err := e.recordEvaluation(x, &d, voteID); err != nil {
		return err
	}
	switch d.Outcome {
	case policyConsensus:
		w.Status = StatusConsensusNeeded
		if d.Authenticators {
			w.Status = StatusAuthenticatorsNeeded
		}
		if x.mfa != nil && p.MFA == nil { // the MFA state must outlive this status change
			p.MFA = x.mfa
			if err := savePending(ctx, tx, act.OrgID, act.ID, p, now); err != nil {
				return err
			}
		}
		return e.finishVote(ctx, tx, w, act, false, out)
	case policyAllow:
	default:
		return e.failVote(ctx, tx, w, act, d.Err, out)
	}
	var result any
	execErr := tx.Savepoint(ctx, func(tx store.Tx) error {
		x.Tx, x.R = tx, tx
		var err error
		result, err = op.Execute.call(x, intent)
		return err
	})
	if execErr != nil {
		return e.failVote(ctx, tx, w, act, execErr, out)
	}
	if result == nil {
		result = struct{}{}
	}
	res, err := json.Marshal(map[string]any{p.ResultMember: result})
	if err != nil {
		return apierr.Internalf(err, "encoding result")
	}
	w.Status, w.Result = StatusCompleted, res
	w.AppProofs = append(w.AppProofs, x.appProofs...)
	return e.finishVote(ctx, tx, w, act, true, out)
}

func (e *Engine) failVote(ctx context.Context, tx store.Tx, w *Wire, act store.Activity, cause error, out *[]byte) error {
	if cause == nil {
		cause = apierr.Denied(msgDeniedImplicit)
	}
	st := apierr.ToStatus(cause)
	w.Status, w.Result, w.Failure = StatusFailed, json.RawMessage("{}"), &st
	return e.finishVote(ctx, tx, w, act, true, out)
}

func timeOf(t wire.Externaldatav1Timestamp) time.Time {
	var s, n int64
	_ = json.Unmarshal([]byte(t.Seconds), &s)
	_ = json.Unmarshal([]byte(t.Nanos), &n)
	return time.Unix(s, n).UTC()
}
