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
	"github.com/latchkey/latchkey/internal/policy"
	"github.com/latchkey/latchkey/internal/store"
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

// recordEvaluation keeps the policy evaluation d, when policies were consulted, as made for the
// vote voteID on x's activity.
func (e *Engine) recordEvaluation(ctx context.Context, x *Exec, d *Decision, voteID string) error {
	if !d.Evaluated || e.svc.Policies == nil {
		return nil
	}
	return e.svc.Policies.RecordEvaluation(ctx, x.Tx, x.OrgID, x.ActivityID, voteID, x.Now, d.Outcome, d.Per)
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

// errExecFailed aborts an activity's transaction when its handler fails.
var errExecFailed = errors.New("activity: handler failed")

// Fingerprint is the activity fingerprint of a request body.
func Fingerprint(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ParseEnvelope decodes and checks a submit body's envelope.
func ParseEnvelope(raw []byte) (*wire.SubmitEnvelope, error) {
	return ParseEnvelopeOf(raw, false)
}

// ParseEnvelopeOf is ParseEnvelope for a body whose validity as JSON is known: valid is true
// only when wire.CheckBody (or json.Valid) said raw is valid JSON, and then it is not read again
// to check it.
func ParseEnvelopeOf(raw []byte, valid bool) (*wire.SubmitEnvelope, error) {
	env, ok := envelopeDirect(raw, valid)
	if !ok {
		var full struct {
			wire.SubmitEnvelope
			TimestampMs json.RawMessage `json:"timestampMs"`
		}
		if err := json.Unmarshal(raw, &full); err != nil {
			return nil, jsonError("", err)
		}
		// SDKs send timestampMs as a string; accept a JSON number too.
		full.SubmitEnvelope.TimestampMs = strings.Trim(string(full.TimestampMs), `"`)
		env = &full.SubmitEnvelope
	}
	if err := env.Validate(""); err != nil {
		return nil, fieldError(err)
	}
	return env, nil
}

// envelopeDirect reads an envelope as the SDKs send it (valid JSON, the envelope's members once
// each and no others, strings without escapes, no nulls) as ParseEnvelope's json.Unmarshal reads
// it, without its reflection; ok is false for anything else, which is left to json.Unmarshal.
func envelopeDirect(raw []byte, valid bool) (env *wire.SubmitEnvelope, ok bool) {
	var v [5][]byte
	if valid && !wire.MembersValid(raw, envelopeMembers, v[:], false) ||
		!valid && !wire.Members(raw, envelopeMembers, v[:], false) {
		return nil, false
	}
	for _, m := range v {
		if string(m) == "null" {
			return nil, false
		}
	}
	// timestampMs as the decoder's RawMessage would be trimmed (ParseEnvelope), parameters as
	// its RawMessage.
	env = &wire.SubmitEnvelope{TimestampMs: strings.Trim(string(v[1]), `"`), Parameters: bytes.Clone(v[3])}
	ok = true
	if v[0] != nil {
		env.Type, ok = wire.PlainString(v[0])
	}
	if v[2] != nil && ok {
		env.OrganizationId, ok = wire.PlainString(v[2])
	}
	if g := string(v[4]); g != "" && ok {
		b := g == "true"
		env.GenerateAppProofs, ok = &b, b || g == "false"
	}
	return env, ok
}

var envelopeMembers = []string{"type", "timestampMs", "organizationId", "parameters", "generateAppProofs"}

// decodeIntent decodes and validates the parameters as the submitted version's intent. When they
// are not valid for it but are for the intent of the path's request (the swagger's current
// version), they are taken as that version: Turnkey's gateway reads the parameters by the path's
// request message whatever the type says, and clients rely on it (tkcli's `ethereum tx` sends
// ACTIVITY_TYPE_SIGN_TRANSACTION with V2 parameters).
func decodeIntent(
	w *wire.Op,
	version *wire.ActivityVersion,
	params json.RawMessage,
) (wire.Validator, *wire.ActivityVersion, error) {
	intent := version.NewIntent()
	var err error
	if !plainIntent(params, intent) {
		err = json.Unmarshal(params, intent)
	}
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
	a, err := e.newAttempt(req)
	if err != nil {
		return nil, err
	}
	// The handler and the activity commit together. When the handler (or authorization) fails,
	// the whole transaction is undone and the FAILED activity is recorded in a second one:
	// failures pay an extra commit so that successes pay no savepoint.
	out, dec, err := e.run(ctx, a)
	if errors.Is(err, errExecFailed) {
		// The same bytes may have been submitted before (a retry, or another user approving by
		// resubmission): that activity, not a failure of the repeat, is the answer.
		if prior, ok, err := e.existing(ctx, a.act.Fingerprint, a.x.OrgID); ok || err != nil {
			return e.resubmitted(ctx, req, a.voteBody, prior, err)
		}
		out, err = e.recordFailure(ctx, a, dec, out.failure)
	}
	if errors.Is(err, store.ErrAlreadyExists) {
		// The same bytes were submitted before or concurrently: the activity that holds them.
		if prior, ok, err := e.existing(ctx, a.act.Fingerprint, a.x.OrgID); ok || err != nil {
			return e.resubmitted(ctx, req, a.voteBody, prior, err)
		}
	}
	if err != nil {
		return nil, storeFailure(err)
	}
	e.recorded(a, out, dec)
	if out.failure != nil {
		return nil, out.failure
	}
	return RenderFor(out.Activity, req.Caller), nil
}

// recorded tells the services of an activity written: Committed, Recorded, and the log when
// it failed inside Latchkey.
func (e *Engine) recorded(a *attempt, out outcome, dec Decision) {
	if e.svc.Committed != nil {
		e.svc.Committed()
	}
	if e.svc.Recorded != nil {
		e.svc.Recorded(out.Type, out.Status, dec.outcomeName())
	}
	if out.failure != nil && apierr.From(out.failure).Code == apierr.Internal {
		e.svc.Log.Error("activity failed", "path", a.req.Path, "err", out.failure)
	}
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
		span.SetAttributes(
			attribute.String("latchkey.store.purpose", purpose),
			attribute.String("latchkey.store.outcome", outcome),
		)
	}
	span.End()
}

// resubmitted answers a submission whose bytes the earlier activity prior holds: for an activity
// waiting for approvals, another user's identical submission is an approval.
func (e *Engine) resubmitted(
	ctx context.Context,
	req SubmitRequest,
	voteBody []byte,
	prior store.Activity,
	err error,
) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	if prior.Status == StatusConsensusNeeded {
		return e.vote(
			ctx,
			voteRequest{
				caller:  req.Caller,
				orgID:   req.Env.OrganizationId,
				fp:      prior.Fingerprint,
				approve: true,
				raw:     voteBody,
			},
		)
	}
	return RenderFor(prior, req.Caller), nil
}

// submitVote handles approve_activity and reject_activity: a vote on the activity named by
// fingerprint, answered with that activity.
func (e *Engine) submitVote(ctx context.Context, req SubmitRequest) ([]byte, error) {
	w, _ := wire.Lookup(wire.Submit, req.Path)
	if _, ok := w.Version(req.Env.Type); !ok {
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
	var in struct {
		Fingerprint string `json:"fingerprint"`
	}
	if err := json.Unmarshal(req.Env.Parameters, &in); err != nil {
		return nil, jsonError("parameters", err)
	}
	if in.Fingerprint == "" {
		return nil, apierr.Required("parameters.fingerprint")
	}
	return e.vote(
		ctx,
		voteRequest{
			caller:  req.Caller,
			orgID:   req.Env.OrganizationId,
			fp:      in.Fingerprint,
			approve: req.Path == "approve_activity",
			raw:     req.Raw,
		},
	)
}

// existing is the activity of organization orgID that holds fingerprint fp, if there is one.
func (e *Engine) existing(ctx context.Context, fp, orgID string) (store.Activity, bool, error) {
	var a store.Activity
	err := e.svc.Store.View(ctx, func(r store.Reader) error {
		var err error
		a, err = r.GetActivityByFingerprint(ctx, fp)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Activity{}, false, nil
	case err != nil:
		return store.Activity{}, false, storeFailure(err)
	case a.OrgID != orgID:
		return store.Activity{}, false, apierr.Invalid(
			"organizationId",
			"an activity with this fingerprint belongs to another organization",
		)
	}
	// The activity may have been read from a primary that committed it, crashed before its
	// standby had it, and came back: answering from it would acknowledge what a failover can
	// lose. Once everything committed there is on the synchronous standbys, it cannot be.
	if r, ok := e.svc.Store.(store.Replicator); ok {
		if err := r.Replicated(ctx); err != nil {
			return store.Activity{}, false, storeFailure(err)
		}
	}
	return a, true, nil
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
	if !plainIntent(req.Raw, body) {
		if err := json.Unmarshal(req.Raw, body); err != nil {
			return nil, jsonError("", err)
		}
	}
	if err := body.Validate(""); err != nil {
		return nil, fieldError(err)
	}
	var out any
	err := e.svc.Store.View(ctx, func(r store.Reader) error {
		var err error
		out, err = op.Execute.call(
			&Read{Ctx: ctx, R: r, Caller: req.Caller, OrgID: req.Caller.Target.ID, Now: e.svc.Now(), Services: e.svc},
			body,
		)
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
		return apierr.New(
			apierr.InvalidArgument,
			"INVALID_TIMESTAMP",
			"timestampMs: request is stale: %s is more than 1 hour old",
			t.UTC().Format(time.RFC3339),
		)
	}
	if t.After(now.Add(MaxFuture)) {
		return apierr.New(
			apierr.InvalidArgument,
			"INVALID_TIMESTAMP",
			"timestampMs: request is from the future: %s is more than 5 minutes ahead",
			t.UTC().Format(time.RFC3339),
		)
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
	return &apierr.Error{
		Code:        apierr.Unavailable,
		TurnkeyCode: "UNAVAILABLE",
		Message:     "the store is unavailable; try again",
		Cause:       err,
	}
}

// Timestamp renders a time as the swagger's {seconds, nanos} with string members.
var Timestamp = directory.Timestamp

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

// with is w with its status, result and failure set.
func (w Wire) with(status string, result json.RawMessage, failure *apierr.Status) Wire {
	w.Status, w.Result, w.Failure = status, result, failure
	return w
}

// encode is w's JSON, as stored and answered.
func (w *Wire) encode() ([]byte, error) {
	size := 512 + len(w.Intent) + len(w.Result)
	for i := range w.Votes {
		size += 768 + len(w.Votes[i].Message)*5/4
	}
	b, err := appendWire(make([]byte, 0, size), w)
	if err != nil {
		return nil, apierr.Internalf(err, "encoding activity")
	}
	return b, nil
}

// encodeIntent is an activity's intent: the (possibly redacted) intent as member of it.
func encodeIntent(member string, intent any) (json.RawMessage, error) {
	b, err := encodeMember(member, intent)
	if err != nil {
		return nil, apierr.Internalf(err, "encoding intent")
	}
	return b, nil
}

// encodeResult is an activity's result: the handler's result as member of it ({} for none).
func encodeResult(member string, result any) (json.RawMessage, error) {
	if result == nil {
		result = struct{}{}
	}
	b, err := encodeMember(member, result)
	if err != nil {
		return nil, apierr.Internalf(err, "encoding result")
	}
	return b, nil
}

// encodeMember is json.Marshal(map[string]any{member: v}) without the map.
func encodeMember(member string, v any) ([]byte, error) {
	m, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(member)+len(m)+5)
	b = append(appendString(append(b, '{'), member), ':')
	return append(append(b, m...), '}'), nil
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
