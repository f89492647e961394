package activity

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

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

// Activity statuses.
const (
	StatusCompleted       = "ACTIVITY_STATUS_COMPLETED"
	StatusFailed          = "ACTIVITY_STATUS_FAILED"
	StatusConsensusNeeded = "ACTIVITY_STATUS_CONSENSUS_NEEDED"
	StatusRejected        = "ACTIVITY_STATUS_REJECTED"
	StatusPending         = "ACTIVITY_STATUS_PENDING"
)

// The timestampMs window (docs/wire.md §8).
const (
	MaxAge    = time.Hour
	MaxFuture = 5 * time.Minute
)

// Services are what handlers may use besides the transaction.
type Services struct {
	Store      store.Store
	Keyring    *custody.Keyring
	ServerKeys *custody.ServerKeys
	Custodian  *custody.Custodian
	// Policies, when set, are consulted for every activity not allowed by the root quorum.
	Policies PolicySource
	// OnActivity, when set, runs in the transaction that writes an activity's new status (the
	// webhook outbox); Committed after that transaction commits.
	OnActivity func(ctx context.Context, tx store.Tx, org *directory.Organization, now time.Time, activityJSON []byte) error
	Committed  func()
	// SessionScope, when set, returns the compiled scope of a session profile.
	SessionScope func(ctx context.Context, r store.Reader, orgID, profileID string) (*policy.Expr, error)
	// MFA, when set, returns the MFA policy that applies to an initiator's activity.
	MFA MFASource
	// VerifyOIDC verifies id_tokens (oauth_login, list_suborgs by OIDC_TOKEN); nil refuses them.
	VerifyOIDC directory.VerifyOIDC
	// PrefetchOIDC, when set, fetches what verifying an id_token needs (the issuer's keys)
	// before the activity's transaction, for every oidcToken in its intent: no handler fetches
	// inside the transaction.
	PrefetchOIDC func(ctx context.Context, token string)
	// Recorded, when set, is told of every activity written: its type, its status and the
	// policy decision that was made ("allow", "deny", "consensus", or "" when none was needed).
	Recorded func(typ, status, decision string)
	Now      func() time.Time
	Log      *slog.Logger
}

// Engine runs activities and queries.
type Engine struct {
	svc *Services
	reg *Registry
}

// NewEngine returns an engine serving reg.
func NewEngine(svc *Services, reg *Registry) *Engine {
	if svc.Now == nil {
		svc.Now = func() time.Time { return time.Now().UTC() }
	}
	if svc.Log == nil {
		svc.Log = slog.Default()
	}
	return &Engine{svc: svc, reg: reg}
}

// Services returns the engine's services.
func (e *Engine) Services() *Services { return e.svc }

// Registry returns the engine's registry.
func (e *Engine) Registry() *Registry { return e.reg }

// execute decides an activity inside its transaction and, when it is allowed, runs its handler
// and writes the completed activity; when it needs more approvals it writes the activity as
// CONSENSUS_NEEDED. A refusal or handler failure is left in *execErr and aborts the
// transaction.
func (e *Engine) execute(tx store.Tx, x0 *Exec, op *Operation, intent any, a *Wire, pend *pending, execErr *error, dec *Decision, data *[]byte, head []byte, member string, tail []byte) error {
	x := *x0
	x.Tx, x.R = tx, tx
	*dec = e.decide(&x, op, intent, []Voter{pend.initiatorVoter(x0.Caller.User, a.Votes[0].Id, x.Now)})
	switch dec.Outcome {
	case policyAllow:
	case policyConsensus:
		if err := e.recordEvaluation(&x, dec, a.Votes[0].Id); err != nil {
			return err
		}
		status := StatusConsensusNeeded
		if dec.Authenticators {
			status = StatusAuthenticatorsNeeded
		}
		pend.MFA, pend.MFADone = x.mfa, x.mfaDone
		if err := e.sealIntent(pend, op, intent, x.OrgID, a.ID); err != nil {
			return err
		}
		c := *a
		c.Status, c.Result = status, json.RawMessage("{}")
		b, err := json.Marshal(&c)
		if err != nil {
			return apierr.Internalf(err, "encoding activity")
		}
		*data = b
		if err := savePending(x.Ctx, tx, x.OrgID, a.ID, pend, x.Now); err != nil {
			return err
		}
		if err := e.notify(&x, b); err != nil {
			return err
		}
		return tx.PutActivity(x.Ctx, store.Activity{ID: a.ID, OrgID: x.OrgID, Fingerprint: a.Fingerprint, Status: status, Type: x.Type, CreatedAt: x.Now, UpdatedAt: x.Now, Data: b})
	default:
		*execErr = dec.Err
		return errExecFailed
	}
	if err := e.recordEvaluation(&x, dec, a.Votes[0].Id); err != nil {
		return err
	}
	result, err := op.Execute.call(&x, intent)
	if err != nil {
		*execErr = err
		var kept *keptFailure
		if errors.As(err, &kept) {
			// The handler's writes stay: record the failure in this transaction.
			*execErr = kept.err
			st := apierr.ToStatus(kept.err)
			c := *a
			c.Status, c.Result, c.Failure = StatusFailed, json.RawMessage("{}"), &st
			b, err := json.Marshal(&c)
			if err != nil {
				return apierr.Internalf(err, "encoding activity")
			}
			*data = b
			if err := e.notify(&x, b); err != nil {
				return err
			}
			return tx.PutActivity(x.Ctx, store.Activity{ID: a.ID, OrgID: x.OrgID, Fingerprint: a.Fingerprint, Status: StatusFailed, Type: x.Type, CreatedAt: x.Now, UpdatedAt: x.Now, Data: b})
		}
		return errExecFailed
	}
	if len(x.appProofs) > 0 {
		// Rare (asked for with generateAppProofs): re-encode the part that holds them.
		if tail, err = withAppProofs(tail, x.appProofs); err != nil {
			return err
		}
	}
	if *data, err = joinResult(head, member, result, tail); err != nil {
		return err
	}
	if err := e.notify(&x, *data); err != nil {
		return err
	}
	return tx.PutActivity(x.Ctx, store.Activity{ID: x.ActivityID, OrgID: x.OrgID, Fingerprint: a.Fingerprint, Status: StatusCompleted, Type: x.Type, CreatedAt: x.Now, UpdatedAt: x.Now, Data: *data})
}

// notify hands an activity's new state to OnActivity inside its transaction.
func (e *Engine) notify(x *Exec, data []byte) error {
	if e.svc.OnActivity == nil {
		return nil
	}
	return e.svc.OnActivity(x.Ctx, x.Tx, x.Caller.Target, x.Now, data)
}

func (e *Engine) recordEvaluation(x *Exec, d *Decision, voteID string) error {
	if !d.Evaluated || e.svc.Policies == nil {
		return nil
	}
	return e.svc.Policies.RecordEvaluation(x.Ctx, x.Tx, x.OrgID, x.ActivityID, voteID, x.Now, d.Outcome, d.Per)
}

// wantsAppProofs reads generateAppProofs from the envelope or, as @turnkey/core may leave it,
// from the parameters.
func wantsAppProofs(env *wire.SubmitEnvelope) bool {
	if env.GenerateAppProofs != nil {
		return *env.GenerateAppProofs
	}
	if !bytes.Contains(env.Parameters, []byte(`"generateAppProofs"`)) {
		return false
	}
	var p struct {
		GenerateAppProofs bool `json:"generateAppProofs"`
	}
	_ = json.Unmarshal(env.Parameters, &p)
	return p.GenerateAppProofs
}

func withAppProofs(tail []byte, proofs []json.RawMessage) ([]byte, error) {
	var t map[string]json.RawMessage
	if err := json.Unmarshal(append([]byte{'{'}, tail...), &t); err != nil {
		return nil, apierr.Internalf(err, "re-encoding activity")
	}
	p, err := json.Marshal(proofs)
	if err != nil {
		return nil, apierr.Internalf(err, "encoding app proofs")
	}
	t["appProofs"] = p
	b, err := json.Marshal(t)
	if err != nil {
		return nil, apierr.Internalf(err, "re-encoding activity")
	}
	return b[1:], nil
}

// errExecFailed aborts an activity's transaction when its handler fails.
var errExecFailed = errors.New("activity: handler failed")

// Fingerprint is the activity fingerprint of a request body.
func Fingerprint(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ParseEnvelope decodes and checks a submit body's envelope.
func ParseEnvelope(raw []byte) (*wire.SubmitEnvelope, error) {
	var env struct {
		wire.SubmitEnvelope
		TimestampMs json.RawMessage `json:"timestampMs"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, jsonError("", err)
	}
	// SDKs send timestampMs as a string; accept a JSON number too.
	ts := strings.Trim(string(env.TimestampMs), `"`)
	env.SubmitEnvelope.TimestampMs = ts
	if err := env.SubmitEnvelope.Validate(""); err != nil {
		return nil, fieldError(err)
	}
	return &env.SubmitEnvelope, nil
}

// decodeIntent decodes and validates the parameters as the submitted version's intent. When they
// are not valid for it but are for the intent of the path's request (the swagger's current
// version), they are taken as that version: Turnkey's gateway reads the parameters by the path's
// request message whatever the type says, and clients rely on it (tkcli's `ethereum tx` sends
// ACTIVITY_TYPE_SIGN_TRANSACTION with V2 parameters).
func decodeIntent(w *wire.Op, version *wire.ActivityVersion, params json.RawMessage) (wire.Validator, *wire.ActivityVersion, error) {
	intent := version.NewIntent()
	err := json.Unmarshal(params, intent)
	if err != nil {
		err = jsonError("parameters", err)
	} else if verr := intent.Validate("parameters"); verr != nil {
		err = fieldError(verr)
	}
	if err == nil {
		return intent, version, nil
	}
	if cur := currentVersion(w); cur != nil && cur != version {
		alt := cur.NewIntent()
		if json.Unmarshal(params, alt) == nil && alt.Validate("parameters") == nil {
			return alt, cur, nil
		}
	}
	return nil, nil, err
}

// currentVersion is the version whose intent the path's request message carries.
func currentVersion(w *wire.Op) *wire.ActivityVersion {
	if w.NewRequest == nil {
		return nil
	}
	rt := reflect.TypeOf(w.NewRequest()).Elem()
	f, ok := rt.FieldByName("Parameters")
	if !ok {
		return nil
	}
	for i := range w.Versions {
		if reflect.TypeOf(w.Versions[i].NewIntent()).Elem() == f.Type {
			return &w.Versions[i]
		}
	}
	return nil
}

// SubmitRequest is a verified submit request.
type SubmitRequest struct {
	Path   string
	Raw    []byte
	Env    *wire.SubmitEnvelope
	Caller *directory.Caller
}

// Submit runs a submit request and returns the activity JSON (the value of "activity").
func (e *Engine) Submit(ctx context.Context, req SubmitRequest) ([]byte, error) {
	if err := proxyRefusal(req.Caller, true, req.Path); err != nil {
		return nil, err
	}
	if req.Path == "approve_activity" || req.Path == "reject_activity" {
		return e.submitVote(ctx, req)
	}
	op, w, err := e.lookupSubmit(req.Path)
	if err != nil {
		return nil, err
	}
	version, ok := w.Version(req.Env.Type)
	if !ok {
		return nil, apierr.Invalid("type", "%s is not an activity type of %s (expected %s)", req.Env.Type, w.Route, w.Versions[0].Type)
	}
	now := e.svc.Now()
	if err := checkTimestamp(req.Env.TimestampMs, now); err != nil {
		return nil, err
	}
	fp := Fingerprint(req.Raw)
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
	intentJSON, err := json.Marshal(map[string]any{version.IntentMember: shown})
	if err != nil {
		return nil, apierr.Internalf(err, "encoding intent")
	}

	// The body as votes keep it (redacted for operations that redact their intent): the
	// initiator's vote, and the vote an identical resubmission by another user counts as.
	voteBody := voteMessage(req.Raw, op, shown)

	// Everything of the activity but its result is known before the transaction: encode it here,
	// in parallel with other requests, so the serial section only encodes the result.
	x0 := &Exec{Ctx: ctx, Caller: req.Caller, OrgID: req.Env.OrganizationId, ActivityID: id.New(), GenerateAppProofs: wantsAppProofs(req.Env),
		Type: actType, Now: e.svc.Now(), Services: e.svc, mfaDone: []AuthMethod{MethodOf(req.Caller)}}
	a := &Wire{ID: x0.ActivityID, OrganizationID: x0.OrgID, Status: StatusCompleted, Type: actType, Intent: intentJSON,
		Votes: []wire.Vote{initiatorVote(x0, voteBody)}, Fingerprint: fp, CreatedAt: Timestamp(x0.Now), UpdatedAt: Timestamp(x0.Now)}
	head, tail, err := a.split()
	if err != nil {
		return nil, err
	}
	member := resultMember(version.IntentMember, w.ResultMember)

	var data []byte
	var execErr error
	var dec Decision
	c := req.Caller
	pend := &pending{Path: req.Path, Type: version.Type, IntentMember: version.IntentMember, ResultMember: member,
		GenerateAppProofs: x0.GenerateAppProofs, UserID: c.User.ID, CredentialID: c.CredentialID, CredentialType: c.CredentialType,
		PublicKey: c.PublicKey, Scheme: c.Scheme, Signature: c.Signature}
	if op.Prepare.set() {
		err := e.svc.Store.View(ctx, func(r store.Reader) error {
			x := *x0
			x.R = r
			var perr error
			x0.Prepared, perr = op.Prepare.call(&x, intent)
			if perr != nil {
				execErr = perr
			}
			return nil
		})
		if err != nil {
			return nil, storeFailure(err)
		}
	}
	// The handler and the activity commit together. When the handler (or authorization) fails,
	// the whole transaction is undone and the FAILED activity is recorded in a second one:
	// failures pay an extra commit so that successes pay no savepoint.
	if e.svc.PrefetchOIDC != nil && execErr == nil {
		for _, tok := range oidcTokens(intent) {
			e.svc.PrefetchOIDC(ctx, tok)
		}
	}
	err = errExecFailed // when Prepare failed
	after := &afterCommit{}
	if execErr == nil {
		sctx, span := tracing.Start(ctx, "store.transaction")
		err = e.svc.Store.Update(sctx, func(tx store.Tx) error {
			x := *x0
			x.Ctx = after.inTransaction(sctx)
			return e.execute(tx, &x, op, intent, a, pend, &execErr, &dec, &data, head, member, tail)
		})
		endTransaction(span, "activity", err)
	}
	if err == nil {
		after.run(ctx)
	}
	if errors.Is(err, errExecFailed) {
		// The same bytes may have been submitted before (a retry, or another user approving by
		// resubmission): that activity, not a failure of the repeat, is the answer.
		if data, ok, err := e.existing(ctx, fp, req.Env.OrganizationId); ok || err != nil {
			return e.resubmitted(ctx, req, voteBody, fp, data, err)
		}
		st := apierr.ToStatus(execErr)
		a.Status, a.Result, a.Failure = StatusFailed, json.RawMessage("{}"), &st
		if data, err = json.Marshal(a); err != nil {
			return nil, apierr.Internalf(err, "encoding activity")
		}
		sctx, span := tracing.Start(ctx, "store.transaction")
		err = e.svc.Store.Update(sctx, func(tx store.Tx) error {
			x := *x0
			x.Tx, x.Ctx = tx, outbound.Forbid(sctx)
			// The policy evaluation that decided (a denial, or an allowance whose handler then
			// failed) was written in the transaction that was undone: record it with the FAILED
			// activity, so get_policy_evaluations explains the failure.
			if err := e.recordEvaluation(&x, &dec, a.Votes[0].Id); err != nil {
				return err
			}
			if err := e.notify(&x, data); err != nil {
				return err
			}
			return tx.PutActivity(ctx, store.Activity{ID: a.ID, OrgID: a.OrganizationID, Fingerprint: fp,
				Status: a.Status, Type: a.Type, CreatedAt: x0.Now, UpdatedAt: x0.Now, Data: data})
		})
		endTransaction(span, "failed_activity", err)
	}
	if errors.Is(err, store.ErrAlreadyExists) {
		// The same bytes were submitted before or concurrently: the activity that holds them.
		if data, ok, err := e.existing(ctx, fp, req.Env.OrganizationId); ok || err != nil {
			return e.resubmitted(ctx, req, voteBody, fp, data, err)
		}
	}
	if err != nil {
		return nil, storeFailure(err)
	}
	if e.svc.Committed != nil {
		e.svc.Committed()
	}
	if e.svc.Recorded != nil {
		e.svc.Recorded(actType, recordedStatus(data, execErr), dec.outcomeName())
	}
	if execErr != nil {
		if ae := apierr.From(execErr); ae.Code == apierr.Internal {
			e.svc.Log.Error("activity failed", "path", req.Path, "err", execErr)
		}
		return nil, execErr
	}
	return RenderFor(data, req.Caller), nil
}

// endTransaction ends the span of a store transaction the engine ran for purpose ("activity",
// "failed_activity", "vote"): committed, rolled back (the activity failed or was refused, which
// is the request span's error, not the store's), or failed in the store.
func endTransaction(span trace.Span, purpose string, err error) {
	if span.IsRecording() {
		outcome := "committed"
		switch {
		case err == nil:
		case errors.Is(err, errExecFailed):
			outcome = "rolled_back"
		case errors.Is(err, store.ErrAlreadyExists):
			outcome = "duplicate"
		default:
			var ae *apierr.Error
			if errors.As(err, &ae) {
				outcome = "rolled_back"
			} else {
				outcome = "failed"
				span.SetStatus(codes.Error, "store transaction failed")
			}
		}
		span.SetAttributes(attribute.String("latchkey.store.purpose", purpose), attribute.String("latchkey.store.outcome", outcome))
	}
	span.End()
}

// resubmitted answers a submission whose bytes an earlier activity holds: for an activity
// waiting for approvals, another user's identical submission is an approval.
func (e *Engine) resubmitted(ctx context.Context, req SubmitRequest, voteBody []byte, fp string, data []byte, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	if bytes.Contains(data, []byte(`"status":"`+StatusConsensusNeeded+`"`)) {
		return e.vote(ctx, req.Caller, req.Env.OrganizationId, fp, true, voteBody)
	}
	return RenderFor(data, req.Caller), nil
}

// submitVote handles approve_activity and reject_activity: a vote on the activity named by
// fingerprint, answered with that activity.
func (e *Engine) submitVote(ctx context.Context, req SubmitRequest) ([]byte, error) {
	w, _ := wire.Lookup(wire.Submit, req.Path)
	if _, ok := w.Version(req.Env.Type); !ok {
		return nil, apierr.Invalid("type", "%s is not an activity type of %s (expected %s)", req.Env.Type, w.Route, w.Versions[0].Type)
	}
	if err := checkTimestamp(req.Env.TimestampMs, e.svc.Now()); err != nil {
		return nil, err
	}
	var in struct {
		Fingerprint string `json:"fingerprint"`
	}
	if err := json.Unmarshal(req.Env.Parameters, &in); err != nil {
		return nil, jsonError("parameters", err)
	}
	if in.Fingerprint == "" {
		return nil, apierr.Required("parameters.fingerprint")
	}
	return e.vote(ctx, req.Caller, req.Env.OrganizationId, in.Fingerprint, req.Path == "approve_activity", req.Raw)
}

func (e *Engine) existing(ctx context.Context, fp, orgID string) ([]byte, bool, error) {
	var a store.Activity
	err := e.svc.Store.View(ctx, func(r store.Reader) error {
		var err error
		a, err = r.GetActivityByFingerprint(ctx, fp)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, storeFailure(err)
	case a.OrgID != orgID:
		return nil, false, apierr.Invalid("organizationId", "an activity with this fingerprint belongs to another organization")
	}
	return a.Data, true, nil
}

func (e *Engine) lookupSubmit(path string) (*Operation, *wire.Op, error) {
	w, ok := wire.Lookup(wire.Submit, path)
	if !ok {
		return nil, nil, apierr.NotFoundf("unknown operation: /public/v1/submit/%s", path)
	}
	op := e.reg.submit[path]
	if op == nil {
		return nil, nil, e.reg.unsupported("submit", path)
	}
	return op, w, nil
}

// QueryRequest is a verified query request.
type QueryRequest struct {
	Path   string
	Raw    []byte
	Caller *directory.Caller
}

// Query runs a query and returns the response value to encode.
func (e *Engine) Query(ctx context.Context, req QueryRequest) (any, error) {
	if err := proxyRefusal(req.Caller, false, req.Path); err != nil {
		return nil, err
	}
	w, ok := wire.Lookup(wire.Query, req.Path)
	if !ok {
		return nil, apierr.NotFoundf("unknown operation: /public/v1/query/%s", req.Path)
	}
	op := e.reg.query[req.Path]
	if op == nil {
		return nil, e.reg.unsupported("query", req.Path)
	}
	body := w.NewRequest()
	if err := json.Unmarshal(req.Raw, body); err != nil {
		return nil, jsonError("", err)
	}
	if err := body.Validate(""); err != nil {
		return nil, fieldError(err)
	}
	var out any
	err := e.svc.Store.View(ctx, func(r store.Reader) error {
		var err error
		out, err = op.Execute.call(&Read{Ctx: ctx, R: r, Caller: req.Caller, OrgID: req.Caller.Target.ID, Now: e.svc.Now(), Services: e.svc}, body)
		return err
	})
	if err != nil {
		var ae *apierr.Error
		if !errors.As(err, &ae) {
			return nil, storeFailure(err)
		}
		return nil, err
	}
	return out, nil
}

func checkTimestamp(s string, now time.Time) error {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return apierr.Invalid("timestampMs", "must be a decimal number of milliseconds, got %q", s)
	}
	t := time.UnixMilli(ms)
	if t.Before(now.Add(-MaxAge)) {
		return apierr.New(apierr.InvalidArgument, "INVALID_TIMESTAMP", "timestampMs: request is stale: %s is more than 1 hour old", t.UTC().Format(time.RFC3339))
	}
	if t.After(now.Add(MaxFuture)) {
		return apierr.New(apierr.InvalidArgument, "INVALID_TIMESTAMP", "timestampMs: request is from the future: %s is more than 5 minutes ahead", t.UTC().Format(time.RFC3339))
	}
	return nil
}

func fieldError(err error) error {
	var fe *wire.FieldError
	if errors.As(err, &fe) {
		return apierr.New(apierr.InvalidArgument, "INVALID_REQUEST", "%s", fe.Error())
	}
	return apierr.Invalid("", "%v", err)
}

// jsonError turns a decoding failure into a 400 naming the field where possible.
func jsonError(prefix string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if prefix != "" && field != "" {
			field = prefix + "." + field
		} else if field == "" {
			field = prefix
		}
		if field == "" {
			field = "body"
		}
		return apierr.Invalid(field, "expected %s, got JSON %s", goKind(te.Type.String()), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return apierr.Invalid("body", "malformed JSON at byte %d", se.Offset)
	}
	where := prefix
	if where == "" {
		where = "body"
	}
	return apierr.Invalid(where, "malformed JSON: %v", err)
}

func goKind(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case t == "string":
		return "a string"
	case t == "bool", t == "*bool":
		return "a boolean"
	case strings.Contains(t, "int"), strings.Contains(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "map"), strings.HasPrefix(t, "wire."), strings.HasPrefix(t, "*wire."):
		return "an object"
	}
	return t
}

func storeFailure(err error) error {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	return &apierr.Error{Code: apierr.Unavailable, TurnkeyCode: "UNAVAILABLE", Message: "the store is unavailable; try again", Cause: err}
}

// Timestamp renders a time as the swagger's {seconds, nanos} with string members.
var Timestamp = directory.Timestamp

// split encodes the activity without its result, as the JSON before the result member and the
// JSON after it (see joinResult).
func (a *Wire) split() (head, tail []byte, err error) {
	h, err := json.Marshal(struct {
		ID             string          `json:"id"`
		OrganizationID string          `json:"organizationId"`
		Status         string          `json:"status"`
		Type           string          `json:"type"`
		Intent         json.RawMessage `json:"intent"`
	}{a.ID, a.OrganizationID, a.Status, a.Type, a.Intent})
	if err != nil {
		return nil, nil, apierr.Internalf(err, "encoding activity")
	}
	t, err := json.Marshal(struct {
		Votes       []wire.Vote                  `json:"votes"`
		AppProofs   []json.RawMessage            `json:"appProofs,omitempty"`
		Fingerprint string                       `json:"fingerprint"`
		CanApprove  bool                         `json:"canApprove"`
		CanReject   bool                         `json:"canReject"`
		CreatedAt   wire.Externaldatav1Timestamp `json:"createdAt"`
		UpdatedAt   wire.Externaldatav1Timestamp `json:"updatedAt"`
	}{a.Votes, a.AppProofs, a.Fingerprint, a.CanApprove, a.CanReject, a.CreatedAt, a.UpdatedAt})
	if err != nil {
		return nil, nil, apierr.Internalf(err, "encoding activity")
	}
	return h[:len(h)-1], t[1:], nil
}

// joinResult completes an activity encoded by split with its result, giving the same bytes
// json.Marshal of the whole Wire would.
func joinResult(head []byte, member string, result any, tail []byte) ([]byte, error) {
	if result == nil {
		result = struct{}{}
	}
	res, err := json.Marshal(result)
	if err != nil {
		return nil, apierr.Internalf(err, "encoding result")
	}
	out := make([]byte, 0, len(head)+len(member)+len(res)+len(tail)+20)
	out = append(out, head...)
	out = append(out, `,"result":{`...)
	out = appendJSONString(out, member)
	out = append(out, ':')
	out = append(out, res...)
	out = append(out, "},"...)
	return append(out, tail...), nil
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// Wire is the activity as stored and returned.
type Wire struct {
	ID             string                       `json:"id"`
	OrganizationID string                       `json:"organizationId"`
	Status         string                       `json:"status"`
	Type           string                       `json:"type"`
	Intent         json.RawMessage              `json:"intent"`
	Result         json.RawMessage              `json:"result"`
	Votes          []wire.Vote                  `json:"votes"`
	AppProofs      []json.RawMessage            `json:"appProofs,omitempty"`
	Fingerprint    string                       `json:"fingerprint"`
	CanApprove     bool                         `json:"canApprove"`
	CanReject      bool                         `json:"canReject"`
	CreatedAt      wire.Externaldatav1Timestamp `json:"createdAt"`
	UpdatedAt      wire.Externaldatav1Timestamp `json:"updatedAt"`
	Failure        *apierr.Status               `json:"failure,omitempty"`
}

// voteMessage is the request body as the initiator's vote keeps it: as stamped, except for an
// operation that redacts its intent, whose vote keeps the body with the redacted parameters
// (the secret must not be echoed or stored; that vote's signature no longer covers its message).
func voteMessage(raw []byte, op *Operation, shown any) []byte {
	if !op.Redact.set() {
		return raw
	}
	var body map[string]json.RawMessage
	if json.Unmarshal(raw, &body) != nil {
		return []byte("{}")
	}
	p, err := json.Marshal(shown)
	if err != nil {
		return []byte("{}")
	}
	body["parameters"] = p
	out, err := json.Marshal(body)
	if err != nil {
		return []byte("{}")
	}
	return out
}

func initiatorVote(x *Exec, raw []byte) wire.Vote {
	c := x.Caller
	return wire.Vote{
		Id: id.New(), UserId: c.User.ID, User: VoteUser(c.User), ActivityId: x.ActivityID,
		Selection: "VOTE_SELECTION_APPROVED", Message: string(raw), PublicKey: c.PublicKey,
		Signature: c.Signature, Scheme: c.Scheme, CreatedAt: Timestamp(x.Now),
	}
}

// VoteUser is the user snapshot kept in a vote: identity fields, empty credential lists.
func VoteUser(u *directory.User) wire.User {
	return wire.User{
		UserId: u.ID, UserName: u.Name, UserEmail: u.Email, UserPhoneNumber: u.PhoneNumber,
		Authenticators: []wire.Authenticator{}, ApiKeys: []wire.ApiKey{}, UserTags: []string{},
		OauthProviders: []wire.OauthProvider{}, MfaPolicies: []wire.MfaPolicy{},
		CreatedAt: Timestamp(u.CreatedAt), UpdatedAt: Timestamp(u.UpdatedAt),
	}
}

// ErrNotSupported builds the clear refusal for a parameter Latchkey does not support yet.
func ErrNotSupported(what string) error {
	return apierr.Unsupported(fmt.Sprint(what))
}

// recordedStatus is the status of the activity just written (for metrics).
func recordedStatus(data []byte, execErr error) string {
	if execErr != nil {
		return StatusFailed
	}
	var a struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(data, &a) != nil || a.Status == "" {
		return StatusCompleted
	}
	return a.Status
}
