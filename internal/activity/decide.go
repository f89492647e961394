package activity

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/policy"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/tracing"
)

// PolicySource supplies an organization's compiled policies and keeps the record of every
// evaluation (ops/policies implements it).
type PolicySource interface {
	Policies(ctx context.Context, r store.Reader, orgID string) ([]policy.Policy, error)
	RecordEvaluation(
		ctx context.Context,
		tx store.Tx,
		orgID, activityID, voteID string,
		now time.Time,
		final policy.Outcome,
		per []policy.Evaluation,
	) error
}

// ApprovalWindow is how long votes count: approvals older than this expire and the activity
// stays CONSENSUS_NEEDED until enough fresh ones arrive.
const ApprovalWindow = 24 * time.Hour

// Voter is a user who approved an activity, with the credential that stamped the approval.
type Voter struct {
	User           *directory.User
	VoteID         string
	CredentialID   string
	CredentialType string
	PublicKey      string
	At             time.Time
}

// Decision is the outcome of authorization for one activity and its votes so far.
type Decision struct {
	Outcome   policy.Outcome
	Per       []policy.Evaluation
	Evaluated bool // policies were consulted (record Per)
	// Authenticators: the initiator must prove more authentication methods (an MFA policy
	// matched); Outcome is then OutcomeRequiresConsensus.
	Authenticators bool
	Err            error // the refusal, for DENY outcomes
}

// Denial messages client libraries read (tkhq/sdk's viem test expects the explicit one).
const (
	msgDeniedExplicit = "policy engine denied request explicitly"
	msgDeniedImplicit = "policy engine denied request implicitly: no policy allows it"
)

// decide authorizes an activity, in the documented order: a parent organization never writes in
// a sub-organization (unless the operation allows it); the root quorum (enough distinct root
// users among the voters) allows without consulting policies; root-quorum-only activities
// need the quorum; then policies: any explicit deny wins, then allow, then consensus; what
// no policy allows is denied, except the built-in allowances (users managing their own
// credentials, operations open to every user), and a root user's request waits for the rest
// of the root quorum.
func (e *Engine) decide(ctx context.Context, x *Exec, op *Operation, intent any, voters []Voter) Decision {
	_, span := tracing.Start(ctx, "policy.evaluate")
	d := e.decideFor(ctx, x, op, intent, voters)
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("latchkey.policy.outcome", string(d.Outcome)),
			attribute.Bool(
				"latchkey.policy.evaluated",
				d.Evaluated,
			),
			attribute.Int("latchkey.policy.evaluations", len(d.Per)),
		)
		if d.Outcome == policy.OutcomeError {
			span.SetStatus(codes.Error, string(d.Outcome))
		}
	}
	span.End()
	return d
}

// decideFor is decide without its span.
func (e *Engine) decideFor(ctx context.Context, x *Exec, op *Operation, intent any, voters []Voter) Decision {
	c := x.Caller
	if c.ParentAccess && !op.ParentMayWrite {
		return Decision{
			Outcome: policy.OutcomeDenyImplicit,
			Err: apierr.Denied(
				"request not authorized: a parent organization can read a sub-organization but cannot change it or sign in it (%s)",
				op.Path,
			),
		}
	}
	if isProxy(c) {
		// Submit let only the proxy's own operations through (proxyRefusal); the operator
		// granted those by enabling the proxy.
		if proxyRefusal(c, true, op.Path) != nil {
			return Decision{Outcome: policy.OutcomeDenyImplicit, Err: proxyRefusal(c, true, op.Path)}
		}
		return Decision{Outcome: policy.OutcomeAllow}
	}
	// The condition environment (the activity, and for signing the key, its wallet and the
	// parsed payload, which cost reads) is built the first time a condition looks into it: an
	// activity the root quorum allows, with no MFA policy and no session profile, never needs it.
	cond := &lazyEnv{build: func() policy.ValueEnv {
		env := policy.ValueEnv{"activity": policy.ActivityView(x.Type, paramsView(x.Type, intent))}
		if op.PolicyEnv.set() {
			for k, v := range op.PolicyEnv.call(x, intent) {
				env[k] = v
			}
		}
		return env
	}}
	// A request of several parts (EnvEach: the calls of a batched send) is judged part by part:
	// the session scope and the MFA policies as much as the policies.
	envs := partEnvs(x, op, intent, cond)
	// A session bound to a profile may only do what the profile's scope allows.
	if c.SessionProfileID != "" && e.svc.SessionScope != nil {
		scope, err := e.svc.SessionScope(ctx, x.R, c.Org.ID, c.SessionProfileID)
		if err != nil {
			return Decision{
				Outcome: policy.OutcomeError,
				Err:     apierr.Denied("request not authorized: the session's profile cannot be read"),
			}
		}
		if ok, err := evalAll(scope, envs); err != nil || !ok {
			return Decision{
				Outcome: policy.OutcomeDenyImplicit,
				Err: apierr.New(
					apierr.PermissionDenied,
					"POLICY_DENIED",
					"request not authorized: outside the session profile's scope (%s)",
					op.Path,
				),
			}
		}
	}
	// MFA policies come first: an activity that needs more of its initiator's factors waits.
	for _, env := range envs {
		if d, err := e.mfaCheck(ctx, x, env); err != nil {
			return Decision{Outcome: policy.OutcomeError, Err: err}
		} else if d != nil {
			return *d
		}
	}
	org := c.Target
	roots := 0
	seen := map[string]bool{}
	for _, v := range voters {
		if !seen[v.User.ID] && org.IsRoot(v.User.ID) {
			roots++
		}
		seen[v.User.ID] = true
	}
	if !c.ParentAccess && org.RootQuorum.Threshold > 0 && roots >= org.RootQuorum.Threshold {
		return Decision{Outcome: policy.OutcomeAllow}
	}
	// On the operations a parent may write in a sub-organization (checked above), the parent's
	// root quorum acts for it: enough of the parent's root users allow. Parent users cannot
	// vote in the sub-organization, so short of that the request is refused below.
	if c.ParentAccess && c.Org != nil && c.Org.RootQuorum.Threshold > 0 {
		proots := 0
		pseen := map[string]bool{}
		for _, v := range voters {
			if !pseen[v.User.ID] && c.Org.IsRoot(v.User.ID) {
				proots++
			}
			pseen[v.User.ID] = true
		}
		if proots >= c.Org.RootQuorum.Threshold {
			return Decision{Outcome: policy.OutcomeAllow}
		}
	}
	if policy.RootQuorumOnly(x.Type) {
		if roots > 0 {
			return Decision{Outcome: policy.OutcomeRequiresConsensus}
		}
		return Decision{
			Outcome: policy.OutcomeDenyImplicit,
			Err:     apierr.Denied("request not authorized: only the root quorum may submit %s", op.Path),
		}
	}
	d := Decision{Outcome: policy.OutcomeDenyImplicit}
	if e.svc.Policies != nil && !c.ParentAccess {
		ps, err := e.svc.Policies.Policies(ctx, x.R, x.OrgID)
		if err != nil {
			return Decision{Outcome: policy.OutcomeError, Err: err}
		}
		if len(ps) > 0 {
			d.Outcome, d.Per = decideParts(ps, envs, consensusEnv(ctx, x.R, voters), policy.TimeEnv(x.Now))
			d.Evaluated = true
		}
	}
	switch d.Outcome {
	case policy.OutcomeAllow, policy.OutcomeRequiresConsensus:
		return d
	case policy.OutcomeDenyExplicit:
		d.Err = apierr.New(apierr.PermissionDenied, "POLICY_DENIED", msgDeniedExplicit)
		return d
	}
	// Built-in allowances when no policy decided.
	switch op.Access {
	case AccessAnyUser:
		d.Outcome = policy.OutcomeAllow
		return d
	case AccessSelf:
		if op.SelfUser.set() && op.SelfUser.call(x, intent) == c.User.ID {
			d.Outcome = policy.OutcomeAllow
			return d
		}
	}
	if roots > 0 {
		d.Outcome = policy.OutcomeRequiresConsensus // the rest of the root quorum must approve
		return d
	}
	d.Err = apierr.New(apierr.PermissionDenied, "POLICY_DENIED", "%s (%s)", msgDeniedImplicit, op.Path)
	return d
}

// partEnvs is the condition environment of each part of the request: cond alone, or, for an
// operation whose request has several parts (EnvEach: the calls of a batched eth_send_transaction,
// each its own eth.tx), one environment per part.
func partEnvs(x *Exec, op *Operation, intent any, cond *lazyEnv) []*lazyEnv {
	parts := op.PolicyEnv.callEach(x, intent)
	if len(parts) <= 1 {
		return []*lazyEnv{cond}
	}
	envs := make([]*lazyEnv, len(parts))
	for i, part := range parts {
		envs[i] = &lazyEnv{build: func() policy.ValueEnv {
			e := policy.ValueEnv{"activity": policy.ActivityView(x.Type, paramsView(x.Type, intent))}
			for k, v := range part {
				e[k] = v
			}
			return e
		}}
	}
	return envs
}

// evalAll tells whether a condition holds for every part.
func evalAll(c *policy.Expr, envs []*lazyEnv) (bool, error) {
	for _, env := range envs {
		if ok, err := c.Eval(env); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// decideParts runs the policies on each part's environment: the request gets the most
// restrictive outcome (an explicit deny, then an implicit one, then consensus; allowed only if
// every part is allowed) and the evaluations of the part that decided.
func decideParts(ps []policy.Policy, envs []*lazyEnv, consensus, now policy.Env) (policy.Outcome, []policy.Evaluation) {
	if len(envs) == 1 {
		return policy.Decide(ps, envs[0], consensus, now)
	}
	rank := map[policy.Outcome]int{policy.OutcomeAllow: 0, policy.OutcomeRequiresConsensus: 1,
		policy.OutcomeDenyImplicit: 2, policy.OutcomeDenyExplicit: 3}
	var out policy.Outcome
	var per []policy.Evaluation
	for i, env := range envs {
		o, p := policy.Decide(ps, env, consensus, now)
		if r, known := rank[o]; i == 0 || !known || r > rank[out] {
			out, per = o, p
		}
		if _, known := rank[o]; !known || o == policy.OutcomeDenyExplicit {
			break
		}
	}
	return out, per
}

// consensusEnv is what `approvers` and `credentials` see: the voters so far.
func consensusEnv(ctx context.Context, r store.Reader, voters []Voter) policy.Env {
	return policy.ValueEnv{
		"approvers": policy.Lazy(func() (policy.Value, error) {
			var out policy.List
			seen := map[string]bool{}
			for _, v := range voters {
				if seen[v.User.ID] {
					continue
				}
				seen[v.User.ID] = true
				tags, err := directory.UserTagIDs(ctx, r, v.User.ID)
				if err != nil {
					return nil, err
				}
				tl := make(policy.List, 0, len(tags))
				for _, t := range tags {
					tl = append(tl, policy.String(t))
				}
				out = append(
					out,
					policy.Map{
						"id":    policy.String(v.User.ID),
						"tags":  tl,
						"email": policy.String(v.User.Email),
						"alias": policy.String(v.User.Name),
					},
				)
			}
			return out, nil
		}),
		"credentials": policy.Lazy(func() (policy.Value, error) {
			var out policy.List
			for _, v := range voters {
				m := policy.Map{
					"id":         policy.String(v.CredentialID),
					"user_id":    policy.String(v.User.ID),
					"type":       policy.String(v.CredentialType),
					"public_key": policy.String(v.PublicKey),
				}
				if v.CredentialType == directory.CredentialWebAuthn {
					m["credential_id"] = policy.String(v.CredentialID)
				}
				out = append(out, m)
			}
			return out, nil
		}),
	}
}

// paramsWhitelist is what `activity.params` exposes per activity kind (language.mdx): any other
// field is a MissingField error.
var paramsWhitelist = map[string][]string{
	"SIGN_RAW_PAYLOAD":        {"hashFunction", "encoding"},
	"SIGN_RAW_PAYLOADS":       {"hashFunction", "encoding"},
	"SIGN_TRANSACTION":        {"type"},
	"DELETE_USERS":            {"userIds"},
	"CREATE_API_KEYS":         {"userId"},
	"DELETE_API_KEYS":         {"userId", "apiKeyIds"},
	"EXPORT_WALLET":           {"targetPublicKey"},
	"EXPORT_WALLET_ACCOUNT":   {"targetPublicKey"},
	"EXPORT_PRIVATE_KEY":      {"targetPublicKey"},
	"UPDATE_WALLET":           {"walletId"},
	"INIT_OTP_AUTH":           {"otpLength"},
	"OTP_LOGIN":               {"sessionProfileId"},
	"STAMP_LOGIN":             {"sessionProfileId"},
	"OAUTH_LOGIN":             {"sessionProfileId"},
	"UPDATE_WEBHOOK_ENDPOINT": {"endpointId"},
	"DELETE_WEBHOOK_ENDPOINT": {"endpointId"},
}

func paramsView(activityType string, intent any) policy.Map {
	kind, _, _ := policy.Classify(activityType)
	fields := paramsWhitelist[kind]
	if len(fields) == 0 {
		return nil
	}
	b, err := json.Marshal(intent)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	out := policy.Map{}
	for _, f := range fields {
		if v, ok := m[f]; ok {
			out[snake(f)] = policy.FromGo(v)
		}
	}
	return out
}

func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// outcomeName names the decision for metrics: "allow", "deny", "consensus", or "" when no
// policy was evaluated (the root quorum, an engine refusal before policies).
func (d Decision) outcomeName() string {
	if !d.Evaluated {
		return ""
	}
	switch d.Outcome {
	case policy.OutcomeAllow:
		return "allow"
	case policy.OutcomeRequiresConsensus, policy.OutcomeRequiresAuthenticators:
		return "consensus"
	}
	return "deny"
}

// lazyEnv is a policy.Env built on its first lookup.
type lazyEnv struct {
	build func() policy.ValueEnv
	env   policy.ValueEnv
}

// Lookup implements policy.Env.
func (l *lazyEnv) Lookup(name string) (policy.Value, bool) {
	if l.env == nil {
		l.env = l.build()
	}
	return l.env.Lookup(name)
}
