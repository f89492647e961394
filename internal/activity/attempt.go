package activity

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/outbound"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/tracing"
	"github.com/latchkey/latchkey/internal/wire"
)

// attempt is one submission on its way through the engine: what Submit learns from the request
// before any transaction, which each later step (prepare, execute, recordFailure) reads.
type attempt struct {
	req    SubmitRequest
	op     *Operation
	intent any
	// voteBody is the body as votes keep it (redacted for an operation that redacts its intent):
	// the initiator's vote, and the vote an identical resubmission by another user counts as.
	voteBody []byte
	// member is the member of result that holds the handler's result.
	member string
	// x is the handlers' view of the activity, without a transaction: each step works on a copy.
	x Exec
	// act is the activity as it will be stored: every write sets its status and result.
	act Wire
	// pend is what the activity needs to run later, should it wait for approvals.
	pend pending
}

// outcome is what one transaction of an activity wrote (Data is nil when it was undone), and
// failure why the activity failed, if it did: the answer to the submission.
type outcome struct {
	store.Activity
	failure error
}

// emptyResult is the result of an activity that has none (yet).
var emptyResult = json.RawMessage("{}")

// newAttempt checks a submission before anything runs (type, timestamp, parameters) and lays out
// the activity it makes.
func (e *Engine) newAttempt(req SubmitRequest) (*attempt, error) {
	op, w, err := e.lookupSubmit(req.Path)
	if err != nil {
		return nil, err
	}
	version, ok := w.Version(req.Env.Type)
	if !ok {
		return nil, apierr.Invalid(
			"type",
			"%s is not an activity type of %s (expected %s)",
			req.Env.Type,
			w.Route,
			w.Versions[0].Type,
		)
	}
	if err := checkTimestamp(req.Env.TimestampMs, e.svc.Now()); err != nil {
		return nil, err
	}
	intent, version, err := decodeIntent(w, version, req.Env.Parameters)
	if err != nil {
		return nil, err
	}
	if err := wire.CheckText(intent, "parameters"); err != nil {
		return nil, fieldError(err)
	}
	actType := version.Type
	if version.Unlisted {
		actType = w.Versions[0].Type
	}
	shown := any(intent)
	if op.Redact.set() {
		shown = op.Redact.call(intent)
	}
	intentJSON, err := encodeIntent(version.IntentMember, shown)
	if err != nil {
		return nil, err
	}
	c := req.Caller
	now := e.svc.Now()
	a := &attempt{req: req, op: op, intent: intent, voteBody: voteMessage(req.Raw, op, shown),
		member: resultMember(version.IntentMember, w.ResultMember)}
	a.x = Exec{
		Caller:            c,
		OrgID:             req.Env.OrganizationId,
		ActivityID:        id.NewOrdered(now),
		GenerateAppProofs: wantsAppProofs(req.Env),
		Type:              actType,
		Now:               now,
		Services:          e.svc,
		mfaDone:           []AuthMethod{MethodOf(c)},
	}
	ts := Timestamp(now)
	a.act = Wire{ID: a.x.ActivityID, OrganizationID: a.x.OrgID, Type: actType, Intent: intentJSON,
		Votes: []wire.Vote{initiatorVote(&a.x, a.voteBody)}, Fingerprint: Fingerprint(req.Raw),
		CreatedAt: ts, UpdatedAt: ts}
	a.pend = pending{Path: req.Path, Type: version.Type, IntentMember: version.IntentMember, ResultMember: a.member,
		GenerateAppProofs: a.x.GenerateAppProofs, UserID: c.User.ID, CredentialID: c.CredentialID, CredentialType: c.CredentialType,
		PublicKey: c.PublicKey, Scheme: c.Scheme, Signature: c.Signature}
	return a, nil
}

// exec is the handlers' view of the attempt in ctx, reading through r and writing through tx
// (nil in Prepare).
func (a *attempt) exec(ctx context.Context, r store.Reader, tx store.Tx) *Exec {
	x := a.x
	x.Ctx, x.R, x.Tx = ctx, r, tx
	return &x
}

// prepare runs the operation's Prepare, if it has one, over committed data, and keeps its value
// for Execute. failure is the activity's failure; err the store's.
func (e *Engine) prepare(ctx context.Context, a *attempt) (failure, err error) {
	if !a.op.Prepare.set() {
		return nil, nil
	}
	err = e.svc.Store.View(ctx, func(r store.Reader) error {
		a.x.Prepared, failure = a.op.Prepare.call(a.exec(ctx, r, nil), a.intent)
		return nil
	})
	return failure, err
}

// run prepares the attempt, then decides and runs it in one transaction, then runs what its
// handler asked to run once that committed. errExecFailed means the activity failed (the
// outcome's failure) and nothing was written.
func (e *Engine) run(ctx context.Context, a *attempt) (outcome, Decision, error) {
	if failure, err := e.prepare(ctx, a); err != nil {
		return outcome{}, Decision{}, storeFailure(err)
	} else if store.IsUnavailable(failure) {
		return outcome{}, Decision{}, storeFailure(failure) // the store's failure, not the request's
	} else if failure != nil {
		return outcome{failure: failure}, Decision{}, errExecFailed
	}
	if e.svc.PrefetchOIDC != nil {
		for _, tok := range oidcTokens(a.intent) {
			e.svc.PrefetchOIDC(ctx, tok)
		}
	}
	var out outcome
	var dec Decision
	after := &afterCommit{}
	sctx, span := tracing.Start(ctx, "store.transaction")
	err := e.svc.Store.Update(sctx, func(tx store.Tx) error {
		var err error
		out, dec, err = e.execute(outbound.Forbid(sctx), tx, a, after.reset())
		return err
	})
	endTransaction(span, "activity", err)
	if err == nil {
		after.run(ctx)
	}
	return out, dec, err
}

// execute decides the attempt inside tx and, when it is allowed, runs its handler and writes
// the completed activity; when it needs more approvals it writes it CONSENSUS_NEEDED (or
// AUTHENTICATORS_NEEDED) with what it needs to run later. A refusal or handler failure is the
// outcome's failure, with errExecFailed to undo the transaction; a handler failure that keeps
// its writes (FailKeepingWrites) is written FAILED in it instead.
func (e *Engine) execute(ctx context.Context, tx store.Tx, a *attempt, after *afterCommit) (outcome, Decision, error) {
	x := a.exec(ctx, tx, tx)
	x.after = after
	initiator := a.act.Votes[0].Id
	dec := e.decide(ctx, x, a.op, a.intent, []Voter{a.pend.initiatorVoter(x.Caller.User, initiator, x.Now)})
	if dec.Outcome != policyAllow && dec.Outcome != policyConsensus {
		if store.IsUnavailable(dec.Err) {
			return outcome{}, dec, dec.Err // Update runs it again once the store is back
		}
		return outcome{failure: dec.Err}, dec, errExecFailed
	}
	if err := e.recordEvaluation(ctx, x, &dec, initiator); err != nil {
		return outcome{}, dec, err
	}
	if dec.Outcome == policyConsensus {
		out, err := e.await(ctx, tx, a, x, &dec)
		return out, dec, err
	}
	result, err := a.op.Execute.call(x, a.intent)
	if err != nil {
		var kept *keptFailure
		if store.IsUnavailable(err) {
			// The store failed, not the request: no FAILED activity; Update runs fn again
			// once the store is back (or the request is answered 503).
			return outcome{}, dec, err
		}
		if !errors.As(err, &kept) {
			return outcome{failure: err}, dec, errExecFailed
		}
		// The handler's writes stay: record the failure in this transaction.
		st := apierr.ToStatus(kept.err)
		w := a.act.with(StatusFailed, emptyResult, &st)
		act, err := e.write(ctx, tx, x.Caller.Target, &w, x.Now, x.Now)
		return outcome{act, kept.err}, dec, err
	}
	res, err := encodeResult(a.member, result)
	if err != nil {
		return outcome{}, dec, err
	}
	w := a.act.with(StatusCompleted, res, nil)
	w.AppProofs = x.appProofs
	act, err := e.write(ctx, tx, x.Caller.Target, &w, x.Now, x.Now)
	return outcome{Activity: act}, dec, err
}

// await writes the attempt as waiting for approvals (or for its initiator's authenticators),
// with what it needs to run once they come.
func (e *Engine) await(ctx context.Context, tx store.Tx, a *attempt, x *Exec, dec *Decision) (outcome, error) {
	status := StatusConsensusNeeded
	if dec.Authenticators {
		status = StatusAuthenticatorsNeeded
	}
	p := a.pend
	p.MFA, p.MFADone = x.mfa, x.mfaDone
	if err := e.sealIntent(&p, a.op, a.intent, x.OrgID, x.ActivityID); err != nil {
		return outcome{}, err
	}
	if err := savePending(ctx, tx, x.OrgID, x.ActivityID, &p, x.Now); err != nil {
		return outcome{}, err
	}
	w := a.act.with(status, emptyResult, nil)
	act, err := e.write(ctx, tx, x.Caller.Target, &w, x.Now, x.Now)
	return outcome{Activity: act}, err
}

// recordFailure writes the attempt FAILED with failure, in a transaction of its own: the one
// that decided was undone. The policy evaluation that decided (a denial, or an allowance whose
// handler then failed) was written in that one too: it is recorded again here, so
// get_policy_evaluations explains the failure.
func (e *Engine) recordFailure(ctx context.Context, a *attempt, dec Decision, failure error) (outcome, error) {
	st := apierr.ToStatus(failure)
	w := a.act.with(StatusFailed, emptyResult, &st)
	var act store.Activity
	sctx, span := tracing.Start(ctx, "store.transaction")
	err := e.svc.Store.Update(sctx, func(tx store.Tx) error {
		ctx := outbound.Forbid(sctx)
		x := a.exec(ctx, tx, tx)
		if err := e.recordEvaluation(ctx, x, &dec, a.act.Votes[0].Id); err != nil {
			return err
		}
		var err error
		act, err = e.write(ctx, tx, x.Caller.Target, &w, x.Now, x.Now)
		return err
	})
	endTransaction(span, "failed_activity", err)
	return outcome{act, failure}, err
}

// write stores w as an activity of org created and updated at the times given, and hands it to
// OnActivity in the same transaction.
func (e *Engine) write(
	ctx context.Context,
	tx store.Tx,
	org *directory.Organization,
	w *Wire,
	created, updated time.Time,
) (store.Activity, error) {
	data, err := w.encode()
	if err != nil {
		return store.Activity{}, err
	}
	if e.svc.OnActivity != nil {
		if err := e.svc.OnActivity(ctx, tx, org, updated, data); err != nil {
			return store.Activity{}, err
		}
	}
	act := store.Activity{ID: w.ID, OrgID: w.OrganizationID, Fingerprint: w.Fingerprint, Status: w.Status, Type: w.Type,
		CreatedAt: created, UpdatedAt: updated, Data: data}
	return act, tx.PutActivity(ctx, act)
}
