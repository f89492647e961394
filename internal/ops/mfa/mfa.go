package mfa

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/hot"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/policy"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Record kind and lookup key.
const (
	KindMFAPolicy = "mfa_policy"
	KeyUser       = "mfa_policy.user"
)

// Limits.
const (
	MaxPoliciesPerUser = 20
	MaxSteps           = 8
	MaxMethodsPerStep  = 8
)

// Policy is one stored MFA policy.
type Policy struct {
	ID        string                  `json:"id"`
	OrgID     string                  `json:"orgId"`
	UserID    string                  `json:"userId"`
	Name      string                  `json:"name"`
	Condition string                  `json:"condition"`
	Steps     [][]activity.AuthMethod `json:"steps"`
	Order     int64                   `json:"order"`
	Notes     string                  `json:"notes,omitempty"`
	CreatedAt time.Time               `json:"createdAt"`
	UpdatedAt time.Time               `json:"updatedAt"`
}

// Deps are the dependencies of the operations (none yet: they take what they need from the
// Exec).
type Deps struct{}

// Register adds the operations to reg and returns the record kinds the package keeps under an
// organization (they go when a sub-organization is deleted).
func Register(reg *activity.Registry, d Deps) (owned []string) {
	self := func(_ *activity.Exec, in any) string {
		switch in := in.(type) {
		case *wire.CreateMfaPolicyIntent:
			return in.UserId
		case *wire.UpdateMfaPolicyIntent:
			return in.UserId
		case *wire.DeleteMfaPolicyIntent:
			return in.UserId
		}
		return ""
	}
	reg.Submit(
		activity.Operation{
			Path:     "create_mfa_policy",
			Access:   activity.AccessSelf,
			SelfUser: activity.UserAny(self, (*wire.CreateMfaPolicyIntent)(nil)),
			Execute:  activity.On(create),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:     "update_mfa_policy",
			Access:   activity.AccessSelf,
			SelfUser: activity.UserAny(self, (*wire.UpdateMfaPolicyIntent)(nil)),
			Execute:  activity.On(update),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:     "delete_mfa_policy",
			Access:   activity.AccessSelf,
			SelfUser: activity.UserAny(self, (*wire.DeleteMfaPolicyIntent)(nil)),
			Execute:  activity.On(remove),
		},
	)
	reg.Query(activity.QueryOp{Path: "get_mfa_policy", Execute: activity.Query(get)})
	reg.Query(activity.QueryOp{Path: "get_mfa_policies", Execute: activity.Query(list)})
	reg.Query(activity.QueryOp{Path: "get_mfa_status", Execute: activity.Query(status)})
	return []string{KindMFAPolicy}
}

func idx(f string, i int) string { return f + "[" + strconv.Itoa(i) + "]" }

// checkSteps validates the required methods of a policy for user u.
func checkSteps(
	x *activity.Exec,
	u *directory.User,
	field string,
	in []wire.RequiredAuthenticationMethodParams,
) ([][]activity.AuthMethod, error) {
	if len(in) == 0 {
		return nil, apierr.Invalid(field, "at least one authentication step is required")
	}
	if len(in) > MaxSteps {
		return nil, apierr.Invalid(field, "at most %d steps", MaxSteps)
	}
	out := make([][]activity.AuthMethod, 0, len(in))
	for i, step := range in {
		fs := idx(field, i) + ".any"
		if len(step.Any) == 0 || len(step.Any) > MaxMethodsPerStep {
			return nil, apierr.Invalid(fs, "each step lists 1 to %d methods", MaxMethodsPerStep)
		}
		var ms []activity.AuthMethod
		for j, m := range step.Any {
			fm := idx(fs, j)
			switch string(m.Type) {
			case activity.MethodAPIKey:
				if m.Id != "" {
					if k, err := directory.LoadAPIKey(x.Ctx, x.Tx, x.OrgID, m.Id); err != nil || k.UserID != u.ID {
						return nil, apierr.Invalid(fm+".id", "no API key %s of user %s", m.Id, u.ID)
					}
				}
			case activity.MethodPasskey:
				if m.Id != "" {
					if a, err := directory.LoadAuthenticator(x.Ctx, x.Tx, x.OrgID, m.Id); err != nil ||
						a.UserID != u.ID {
						return nil, apierr.Invalid(fm+".id", "no authenticator %s of user %s", m.Id, u.ID)
					}
				}
			case activity.MethodSession:
			case "AUTHENTICATION_TYPE_EMAIL_OTP", "AUTHENTICATION_TYPE_SMS_OTP", "AUTHENTICATION_TYPE_OAUTH":
				return nil, apierr.Invalid(
					fm+".type",
					"%s is proven by attested stamps, which Latchkey does not accept yet; use API_KEY, PASSKEY or SESSION",
					m.Type,
				)
			default:
				return nil, apierr.Invalid(fm+".type", "unknown authentication type %q", m.Type)
			}
			ms = append(ms, activity.AuthMethod{Type: string(m.Type), ID: m.Id})
		}
		out = append(out, ms)
	}
	return out, nil
}

func checkCondition(field, src string) error {
	if _, err := policy.Compile(src); err != nil {
		return apierr.Invalid(field, "%v", err)
	}
	return nil
}

func userPolicies(ctx context.Context, r store.Reader, orgID, userID string) ([]*Policy, error) {
	ps, err := records.LookupAll[Policy](ctx, r, KeyUser, userID, KindMFAPolicy, orgID)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(ps, func(a, b *Policy) int {
		if a.Order != b.Order {
			return cmp.Compare(a.Order, b.Order)
		}
		return a.CreatedAt.Compare(b.CreatedAt)
	})
	return ps, nil
}

func save(x *activity.Exec, p *Policy) error {
	return records.Save(
		x.Ctx,
		x.Tx,
		KindMFAPolicy,
		p.ID,
		p.OrgID,
		p.CreatedAt,
		p.UpdatedAt,
		p,
		store.Key{Name: KeyUser, Value: p.UserID},
	)
}

func create(x *activity.Exec, in *wire.CreateMfaPolicyIntent) (any, error) {
	u, err := directory.LoadUser(x.Ctx, x.Tx, x.OrgID, in.UserId)
	if err != nil {
		return nil, apierr.MissingOr(err, "parameters.userId: user not found: %s", in.UserId)
	}
	p := &Policy{
		ID:        id.New(),
		OrgID:     x.OrgID,
		UserID:    u.ID,
		Order:     in.Order,
		Notes:     in.Notes,
		Condition: in.Condition,
		CreatedAt: x.Now,
		UpdatedAt: x.Now,
	}
	if p.Name, err = directory.CheckName("parameters.mfaPolicyName", in.MfaPolicyName); err != nil {
		return nil, err
	}
	if err := checkCondition("parameters.condition", in.Condition); err != nil {
		return nil, err
	}
	if in.Order < 0 {
		return nil, apierr.Invalid("parameters.order", "must be 0 or more")
	}
	if p.Steps, err = checkSteps(x, u, "parameters.requiredAuthenticationMethods", in.RequiredAuthenticationMethods); err != nil {
		return nil, err
	}
	if err := x.Tx.Lock(x.Ctx, "mfa_policies\x00"+u.ID); err != nil {
		return nil, err
	}
	existing, err := userPolicies(x.Ctx, x.Tx, x.OrgID, u.ID)
	if err != nil {
		return nil, err
	}
	if len(existing) >= MaxPoliciesPerUser {
		return nil, apierr.New(
			apierr.ResourceExhausted,
			"RESOURCE_EXHAUSTED",
			"a user has at most %d MFA policies",
			MaxPoliciesPerUser,
		)
	}
	if err := save(x, p); err != nil {
		return nil, err
	}
	return wire.CreateMfaPolicyResult{MfaPolicyId: p.ID}, nil
}

func load(ctx context.Context, r store.Reader, orgID, userID, policyID string) (*Policy, error) {
	p, err := records.Load[Policy](ctx, r, KindMFAPolicy, orgID, policyID, "MFA policy")
	if err != nil {
		return nil, err
	}
	if p.UserID != userID {
		return nil, apierr.NotFoundf("MFA policy not found: %s", policyID)
	}
	return p, nil
}

func update(x *activity.Exec, in *wire.UpdateMfaPolicyIntent) (any, error) {
	p, err := load(x.Ctx, x.Tx, x.OrgID, in.UserId, in.MfaPolicyId)
	if err != nil {
		return nil, err
	}
	if in.MfaPolicyName != "" {
		if p.Name, err = directory.CheckName("parameters.mfaPolicyName", in.MfaPolicyName); err != nil {
			return nil, err
		}
	}
	if in.Condition != "" {
		if err := checkCondition("parameters.condition", in.Condition); err != nil {
			return nil, err
		}
		p.Condition = in.Condition
	}
	if in.RequiredAuthenticationMethods != nil {
		u, err := directory.LoadUser(x.Ctx, x.Tx, x.OrgID, p.UserID)
		if err != nil {
			return nil, err
		}
		if p.Steps, err = checkSteps(x, u, "parameters.requiredAuthenticationMethods", in.RequiredAuthenticationMethods); err != nil {
			return nil, err
		}
	}
	if in.Order != nil {
		if *in.Order < 0 {
			return nil, apierr.Invalid("parameters.order", "must be 0 or more")
		}
		p.Order = *in.Order
	}
	if in.Notes != "" {
		p.Notes = in.Notes
	}
	p.UpdatedAt = x.Now
	if err := save(x, p); err != nil {
		return nil, err
	}
	return wire.UpdateMfaPolicyResult{MfaPolicyId: p.ID}, nil
}

func remove(x *activity.Exec, in *wire.DeleteMfaPolicyIntent) (any, error) {
	p, err := load(x.Ctx, x.Tx, x.OrgID, in.UserId, in.MfaPolicyId)
	if err != nil {
		return nil, err
	}
	if err := records.Delete(x.Ctx, x.Tx, KindMFAPolicy, p.ID); err != nil {
		return nil, err
	}
	return wire.DeleteMfaPolicyResult{MfaPolicyId: p.ID}, nil
}

func methodsToWire(ms []activity.AuthMethod) []wire.AuthenticationMethod {
	out := make([]wire.AuthenticationMethod, 0, len(ms))
	for _, m := range ms {
		out = append(out, wire.AuthenticationMethod{Type: wire.AuthenticationType(m.Type), Id: m.ID})
	}
	return out
}

func stepsToWire(steps [][]activity.AuthMethod) []wire.RequiredAuthenticationMethod {
	out := make([]wire.RequiredAuthenticationMethod, 0, len(steps))
	for _, s := range steps {
		out = append(out, wire.RequiredAuthenticationMethod{Any: methodsToWire(s)})
	}
	return out
}

func (p *Policy) toWire() wire.MfaPolicy {
	return wire.MfaPolicy{
		MfaPolicyId:                   p.ID,
		MfaPolicyName:                 p.Name,
		Condition:                     p.Condition,
		RequiredAuthenticationMethods: stepsToWire(p.Steps),
		Order:                         p.Order,
		Notes:                         p.Notes,
		CreatedAt:                     directory.Timestamp(p.CreatedAt),
		UpdatedAt:                     directory.Timestamp(p.UpdatedAt),
	}
}

func get(q *activity.Read, in *wire.GetMfaPolicyRequest) (any, error) {
	p, err := load(q.Ctx, q.R, q.OrgID, in.UserId, in.MfaPolicyId)
	if err != nil {
		return nil, err
	}
	return wire.GetMfaPolicyResponse{MfaPolicy: p.toWire()}, nil
}

func list(q *activity.Read, in *wire.GetMfaPoliciesRequest) (any, error) {
	ps, err := userPolicies(q.Ctx, q.R, q.OrgID, in.UserId)
	if err != nil {
		return nil, err
	}
	out := wire.GetMfaPoliciesResponse{MfaPolicies: make([]wire.MfaPolicy, 0, len(ps))}
	for _, p := range ps {
		out.MfaPolicies = append(out.MfaPolicies, p.toWire())
	}
	return out, nil
}

func status(q *activity.Read, in *wire.GetMfaStatusRequest) (any, error) {
	if act, err := q.R.GetActivity(q.Ctx, in.ActivityId); err != nil || act.OrgID != q.OrgID {
		if err == nil || errors.Is(err, store.ErrNotFound) {
			return nil, apierr.NotFoundf("activity not found: %s", in.ActivityId)
		}
		return nil, apierr.Internalf(err, "reading activity")
	}
	st, err := activity.MFAStatusOf(q.Ctx, q.R, q.OrgID, in.ActivityId)
	if err != nil {
		return nil, err
	}
	out := wire.GetMfaStatusResponse{MfaStatuses: []wire.MfaStatus{}}
	if st != nil && (in.UserId == "" || in.UserId == st.UserID) {
		out.MfaStatuses = append(
			out.MfaStatuses,
			wire.MfaStatus{MfaPolicyId: st.PolicyID, UserId: st.UserID, Satisfied: st.Satisfied,
				SatisfiedMethods: methodsToWire(st.Done), RequiredMethods: stepsToWire(st.Steps)},
		)
	}
	return out, nil
}

// Policies holds each user's MFA policies, per (organization, user), for the activities'
// transactions (package hot; KindMFAPolicy must be among the kinds the store's hot.Wrap
// watches). The slices are shared: nothing modifies them.
type Policies = hot.Cache[[]*Policy]

// NewPolicies returns an empty cache over v.
func NewPolicies(v *hot.Versions) *Policies { return hot.NewCache[[]*Policy](v, 0) }

// Source is the engine's MFA source (activity.Services.MFA): the first of the user's
// policies, in order, whose condition holds; a condition that cannot be evaluated counts as
// holding. The policies are read through c (hot.Cache.LoadInTx: exact on SQLite, as of the
// request's arrival on PostgreSQL), not queried in every activity's transaction.
func Source(c *Policies) activity.MFASource {
	return func(ctx context.Context, r store.Reader, orgID, userID string, env policy.Env) (*activity.MFARequirement, error) {
		ps, err := c.LoadInTx(ctx, orgID+"\x00"+userID, orgID, func() ([]*Policy, error) {
			return userPolicies(ctx, r, orgID, userID)
		})
		return first(ps, env), err
	}
}

// first is the requirement of the first of ps whose condition holds (nil: none).
func first(ps []*Policy, env policy.Env) *activity.MFARequirement {
	for _, p := range ps {
		expr, err := policy.Compile(p.Condition)
		ok := err == nil
		if ok {
			ok, err = expr.Eval(env)
		}
		if ok || err != nil {
			return &activity.MFARequirement{PolicyID: p.ID, Steps: p.Steps}
		}
	}
	return nil
}
