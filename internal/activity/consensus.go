package activity

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/outbound"
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
	return Voter{
		User:           u,
		VoteID:         voteID,
		CredentialID:   p.CredentialID,
		CredentialType: p.CredentialType,
		PublicKey:      p.PublicKey,
		At:             at,
	}
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

// RenderFor is a stored activity's JSON as the caller sees it: canApprove and canReject are true
// only for an activity that waits for approvals, to a user of its organization who has not voted
// yet.
func RenderFor(a store.Activity, c *directory.Caller) []byte {
	data := a.Data
	mfa := a.Status == StatusAuthenticatorsNeeded
	if (!mfa && a.Status != StatusConsensusNeeded) || c == nil {
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
	return apierr.New(
		apierr.NotFound,
		"NOT_FOUND",
		"No activity found with fingerprint. Consensus activities must target an existing activity by fingerprint",
	)
}

// voteRequest is a vote as submitted: an approval or a rejection, by caller, of the activity of
// organization orgID that holds fingerprint fp.
type voteRequest struct {
	caller  *directory.Caller
	orgID   string
	fp      string
	approve bool
	raw     []byte // the body, kept as the vote's message
}

// vote records the vote v, then decides its activity again: enough approvals run it (exactly
// once: votes on one activity are serialised), a rejection ends it. It returns the activity.
func (e *Engine) vote(ctx context.Context, v voteRequest) ([]byte, error) {
	var out store.Activity
	after := &afterCommit{}
	tctx, span := tracing.Start(ctx, "store.transaction")
	err := e.svc.Store.Update(tctx, func(tx store.Tx) error {
		var err error
		out, err = e.castVote(outbound.Forbid(tctx), tx, after.reset(), v)
		return err
	})
	endTransaction(span, "vote", err)
	if err != nil {
		return nil, err
	}
	after.run(ctx)
	if e.svc.Committed != nil {
		e.svc.Committed()
	}
	return RenderFor(out, v.caller), nil
}

// ballot is one vote on an activity that waits for approvals, inside the transaction that
// records it.
type ballot struct {
	tx     store.Tx
	after  *afterCommit
	caller *directory.Caller
	act    store.Activity // the activity as stored before the vote
	w      Wire           // the activity, the vote added
	p      pending
	voteID string
	now    time.Time
}

// castVote records the vote v in tx and returns the activity it leaves.
func (e *Engine) castVote(ctx context.Context, tx store.Tx, after *afterCommit, v voteRequest) (store.Activity, error) {
	b, act, err := openBallot(ctx, tx, v.orgID, v.fp)
	if b == nil {
		return act, err // an error, or an activity that no longer waits: the vote changes nothing
	}
	b.tx, b.after, b.caller = tx, after, v.caller
	caller := v.caller
	if caller.ParentAccess {
		return store.Activity{}, apierr.Denied(
			"request not authorized: a parent organization cannot vote in a sub-organization",
		)
	}
	mfa := b.act.Status == StatusAuthenticatorsNeeded
	if mfa && caller.User.ID != b.p.UserID {
		return store.Activity{}, apierr.New(
			apierr.FailedPrecondition,
			"AUTHENTICATORS_NEEDED",
			"the activity waits for its initiator to prove more authentication methods; only the initiator can approve or reject it now",
		)
	}
	for _, prior := range b.w.Votes {
		if prior.UserId == caller.User.ID && !mfa {
			return b.act, nil // already voted: nothing changes
		}
	}
	b.now = e.svc.Now()
	selection := "VOTE_SELECTION_APPROVED"
	if !v.approve {
		selection = "VOTE_SELECTION_REJECTED"
	}
	b.voteID = id.New()
	b.w.Votes = append(
		b.w.Votes,
		wire.Vote{Id: b.voteID, UserId: caller.User.ID, User: VoteUser(caller.User), ActivityId: b.act.ID,
			Selection: selection, Message: string(v.raw), PublicKey: caller.PublicKey, Signature: caller.Signature, Scheme: caller.Scheme,
			CreatedAt: Timestamp(b.now)},
	)
	b.w.UpdatedAt = Timestamp(b.now)
	if !v.approve {
		b.w.Status = StatusRejected
		return e.finishVote(ctx, b, true)
	}
	if mfa {
		b.p.MFADone = append(b.p.MFADone, MethodOf(caller))
		if err := savePending(ctx, tx, b.act.OrgID, b.act.ID, &b.p, b.now); err != nil {
			return store.Activity{}, err
		}
	}
	return e.decideAgain(ctx, b)
}

// openBallot reads the activity of organization orgID holding fingerprint fp, and what it
// needs to run, holding the lock that serialises votes on it. When the activity no longer waits
// for approvals, there is no ballot, and the activity is returned as it is.
func openBallot(ctx context.Context, tx store.Tx, orgID, fp string) (*ballot, store.Activity, error) {
	act, err := tx.GetActivityByFingerprint(ctx, fp)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.Activity{}, errNoFingerprint()
	}
	if err != nil {
		return nil, store.Activity{}, apierr.Internalf(err, "reading activity")
	}
	if act.OrgID != orgID {
		return nil, store.Activity{}, apierr.New(
			apierr.InvalidArgument,
			"ORGANIZATION_MISMATCH",
			"organization mismatch: the activity belongs to another organization",
		)
	}
	if !waiting(act.Status) {
		return nil, act, nil
	}
	rec, err := tx.Get(ctx, PendingKind, act.ID) // the lock that serialises votes
	if err == nil {
		// Read the activity again now that we hold the lock: another vote may have
		// finished it meanwhile.
		act, err = tx.GetActivity(ctx, act.ID)
	}
	if errors.Is(err, store.ErrNotFound) || (err == nil && !waiting(act.Status)) {
		if a, gerr := tx.GetActivity(ctx, act.ID); gerr == nil {
			return nil, a, nil
		}
	}
	if err != nil {
		return nil, store.Activity{}, apierr.Internalf(err, "reading pending activity")
	}
	b := &ballot{act: act}
	if err := json.Unmarshal(rec.Data, &b.p); err != nil {
		return nil, store.Activity{}, apierr.Internalf(err, "decoding pending activity")
	}
	if err := json.Unmarshal(act.Data, &b.w); err != nil {
		return nil, store.Activity{}, apierr.Internalf(err, "decoding activity")
	}
	return b, act, nil
}

// waiting reports whether an activity of the status waits for votes.
func waiting(status string) bool {
	return status == StatusConsensusNeeded || status == StatusAuthenticatorsNeeded
}

// finishVote writes the ballot's activity as it now is; terminal, it no longer waits, and what
// it needed to run is removed.
func (e *Engine) finishVote(ctx context.Context, b *ballot, terminal bool) (store.Activity, error) {
	if terminal {
		if err := b.tx.Delete(ctx, PendingKind, b.act.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return store.Activity{}, apierr.Internalf(err, "removing pending activity")
		}
	}
	var org *directory.Organization
	if e.svc.OnActivity != nil {
		var err error
		if org, err = directory.LoadOrganization(ctx, b.tx, b.act.OrgID); err != nil {
			return store.Activity{}, err
		}
	}
	return e.write(ctx, b.tx, org, &b.w, b.act.CreatedAt, e.svc.Now())
}

// failVote writes the ballot's activity FAILED with cause (a denial when nil).
func (e *Engine) failVote(ctx context.Context, b *ballot, cause error) (store.Activity, error) {
	if cause == nil {
		cause = apierr.Denied(msgDeniedImplicit)
	}
	st := apierr.ToStatus(cause)
	b.w = b.w.with(StatusFailed, emptyResult, &st)
	return e.finishVote(ctx, b, true)
}

// decideAgain re-evaluates the ballot's activity with its approvals so far and runs it when
// allowed.
func (e *Engine) decideAgain(ctx context.Context, b *ballot) (store.Activity, error) {
	op := e.reg.submit[b.p.Path]
	intent, err := e.pendingIntent(b)
	if err != nil {
		return store.Activity{}, err
	}
	x, err := e.initiatorExec(ctx, b)
	if err != nil {
		return store.Activity{}, err
	}
	if op.Prepare.set() {
		if x.Prepared, err = op.Prepare.call(x, intent); err != nil {
			return e.failVote(ctx, b, err)
		}
	}
	d := e.decide(ctx, x, op, intent, b.voters(ctx))
	if err := e.recordEvaluation(ctx, x, &d, b.voteID); err != nil {
		return store.Activity{}, err
	}
	switch d.Outcome {
	case policyConsensus:
		b.w.Status = StatusConsensusNeeded
		if d.Authenticators {
			b.w.Status = StatusAuthenticatorsNeeded
		}
		if x.mfa != nil && b.p.MFA == nil { // the MFA state must outlive this status change
			b.p.MFA = x.mfa
			if err := savePending(ctx, b.tx, b.act.OrgID, b.act.ID, &b.p, b.now); err != nil {
				return store.Activity{}, err
			}
		}
		return e.finishVote(ctx, b, false)
	case policyAllow:
	default:
		return e.failVote(ctx, b, d.Err)
	}
	var result any
	err = b.tx.Savepoint(ctx, func(tx store.Tx) error {
		x.Tx, x.R = tx, tx
		var err error
		result, err = op.Execute.call(x, intent)
		return err
	})
	if err != nil {
		return e.failVote(ctx, b, err)
	}
	res, err := encodeResult(b.p.ResultMember, result)
	if err != nil {
		return store.Activity{}, err
	}
	b.w = b.w.with(StatusCompleted, res, nil)
	b.w.AppProofs = append(b.w.AppProofs, x.appProofs...)
	return e.finishVote(ctx, b, true)
}

// pendingIntent is the intent of the ballot's activity, decoded as submitted: from the activity,
// or from the sealed copy for an operation that redacts what it stores.
func (e *Engine) pendingIntent(b *ballot) (any, error) {
	wop, ok := wire.Lookup(wire.Submit, b.p.Path)
	if e.reg.submit[b.p.Path] == nil || !ok {
		return nil, apierr.Internalf(nil, "pending activity of unknown operation %s", b.p.Path)
	}
	version, ok := wop.Version(b.p.Type)
	if !ok {
		version = &wop.Versions[0]
	}
	var raw []byte
	if b.p.SealedIntent != nil {
		var err error
		if raw, err = e.svc.Keyring.Open(b.p.SealedIntent, pendingBinding(b.act.OrgID, b.act.ID)); err != nil {
			return nil, apierr.Internalf(err, "opening sealed intent")
		}
	} else {
		var members map[string]json.RawMessage
		if err := json.Unmarshal(b.w.Intent, &members); err != nil {
			return nil, apierr.Internalf(err, "decoding intent")
		}
		raw = members[b.p.IntentMember]
	}
	intent := version.NewIntent()
	if err := json.Unmarshal(raw, intent); err != nil {
		return nil, apierr.Internalf(err, "decoding intent")
	}
	return intent, nil
}

// initiatorExec is the handlers' view of the ballot's activity: the initiator's, stamped with
// the credential they submitted it with.
func (e *Engine) initiatorExec(ctx context.Context, b *ballot) (*Exec, error) {
	initiator, err := directory.LoadUser(ctx, b.tx, b.act.OrgID, b.p.UserID)
	if err != nil {
		return nil, err
	}
	p := &b.p
	ic := *b.caller
	ic.User, ic.Org = initiator, b.caller.Target
	ic.CredentialID, ic.CredentialType, ic.PublicKey, ic.Scheme, ic.Signature = p.CredentialID, p.CredentialType, p.PublicKey, p.Scheme, p.Signature
	return &Exec{
		Ctx:               ctx,
		Tx:                b.tx,
		R:                 b.tx,
		Caller:            &ic,
		OrgID:             b.act.OrgID,
		ActivityID:        b.act.ID,
		Type:              b.act.Type,
		Now:               b.now,
		Services:          e.svc,
		GenerateAppProofs: p.GenerateAppProofs,
		mfaDone:           p.MFADone,
		after:             b.after,
	}, nil
}

// voters are the ballot's approvals still inside the window, by users that still exist.
func (b *ballot) voters(ctx context.Context) []Voter {
	var voters []Voter
	for _, v := range b.w.Votes {
		at := timeOf(v.CreatedAt)
		if v.Selection != "VOTE_SELECTION_APPROVED" || b.now.Sub(at) > ApprovalWindow {
			continue
		}
		u, err := directory.LoadUser(ctx, b.tx, b.act.OrgID, v.UserId)
		if err != nil {
			continue // the user was deleted: their vote no longer counts
		}
		vt := Voter{User: u, VoteID: v.Id, PublicKey: v.PublicKey, At: at}
		if v.UserId == b.p.UserID && v.Id == b.w.Votes[0].Id {
			vt = b.p.initiatorVoter(u, v.Id, at)
		}
		voters = append(voters, vt)
	}
	return voters
}

func timeOf(t wire.Externaldatav1Timestamp) time.Time {
	var s, n int64
	_ = json.Unmarshal([]byte(t.Seconds), &s)
	_ = json.Unmarshal([]byte(t.Nanos), &n)
	return time.Unix(s, n).UTC()
}
