package policies

import (
	"errors"
	"strconv"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/policy"
	"github.com/latchkey/latchkey/internal/wire"
)

// Deps are what these operations need from the server configuration.
type Deps struct {
	Env func(x *activity.Exec) directory.Env
}

// Register adds the operations to reg and returns the record kinds the package keeps under an
// organization (they go when a sub-organization is deleted).
func Register(reg *activity.Registry, d Deps) (owned []string) {
	reg.Submit(
		activity.Operation{
			Path:   "create_policy",
			Access: activity.AccessRoot,
			Execute: activity.OnAny(
				d.createPolicy,
				(*wire.CreatePolicyIntentV3)(nil),
				(*wire.CreatePolicyIntentV2)(nil),
				(*wire.CreatePolicyIntent)(nil),
			),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "create_policies",
			Access:  activity.AccessRoot,
			Execute: activity.On(d.createPolicies),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "update_policy",
			Access:  activity.AccessRoot,
			Execute: activity.OnAny(updatePolicy, (*wire.UpdatePolicyIntentV2)(nil), (*wire.UpdatePolicyIntent)(nil)),
		},
	)
	reg.Submit(
		activity.Operation{Path: "delete_policy", Access: activity.AccessRoot, Execute: activity.On(deletePolicy)},
	)
	reg.Submit(
		activity.Operation{Path: "delete_policies", Access: activity.AccessRoot, Execute: activity.On(deletePolicies)},
	)
	reg.Submit(
		activity.Operation{
			Path:    "create_smart_contract_interface",
			Access:  activity.AccessRoot,
			Execute: activity.On(d.createInterface),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "delete_smart_contract_interface",
			Access:  activity.AccessRoot,
			Execute: activity.On(deleteInterface),
		},
	)

	reg.Query(activity.QueryOp{Path: "get_policy", Execute: activity.Query(getPolicy)})
	reg.Query(activity.QueryOp{Path: "list_policies", Execute: activity.Query(listPolicies)})
	reg.Query(activity.QueryOp{Path: "get_policy_evaluations", Execute: activity.Query(getPolicyEvaluations)})
	reg.Query(activity.QueryOp{Path: "get_smart_contract_interface", Execute: activity.Query(getInterface)})
	reg.Query(activity.QueryOp{Path: "list_smart_contract_interfaces", Execute: activity.Query(listInterfaces)})
	return []string{KindPolicy, KindPolicySet, KindPolicyEvaluation, KindSmartContractInterface}
}

func index(prefix string, i int) string { return prefix + "[" + strconv.Itoa(i) + "]" }

// notFoundAsInvalid turns "no such record" for an id given in the parameters into a 400 naming
// the field; any other failure (the store) passes through.
func notFoundAsInvalid(err error, field, format string, args ...any) error {
	if apierr.From(err).Code == apierr.NotFound {
		return apierr.Invalid(field, format, args...)
	}
	return err
}

// fields names where each part of a policy came from in the request, for error messages.
type fields struct {
	name, effect, condition, consensus, time string
}

// createFields are the names in CreatePolicyIntentV3 (and its older versions) under prefix.
func createFields(prefix string) fields {
	return fields{name: prefix + ".policyName", effect: prefix + ".effect", condition: prefix + ".condition",
		consensus: prefix + ".consensus", time: prefix + ".time"}
}

// updateFields are the renamed fields of UpdatePolicyIntent(V2).
var updateFields = fields{
	name:      "parameters.policyName",
	effect:    "parameters.policyEffect",
	condition: "parameters.policyCondition",
	consensus: "parameters.policyConsensus",
	time:      "parameters.time",
}

// check validates a policy about to be written: its name, its effect, and that condition,
// consensus and time compile.
func check(p *Policy, f fields) error {
	name, err := directory.CheckName(f.name, p.Name)
	if err != nil {
		return err
	}
	p.Name = name
	if _, err := p.Compile(); err != nil {
		var fe *policy.FieldError
		if !errors.As(err, &fe) {
			return apierr.Invalid(f.condition, "%v", err)
		}
		field := map[string]string{"effect": f.effect, "condition": f.condition, "consensus": f.consensus, "time": f.time}[fe.Field]
		return apierr.Invalid(field, "%s", fe.Error())
	}
	return nil
}

// create validates and stores one new policy. Policies list by creation time; the nth policy of
// one activity is created n nanoseconds after its start so that they list in request order.
func (d Deps) create(x *activity.Exec, p *Policy, f fields, nth int) error {
	if err := check(p, f); err != nil {
		return err
	}
	lim := d.Env(x).Limits
	if err := lim.Check(x.Ctx, x.Tx, KindPolicy, x.OrgID, lim.PoliciesPerOrg, "policies"); err != nil {
		return err
	}
	now := x.Now.Add(time.Duration(nth))
	p.ID, p.OrgID, p.CreatedAt, p.UpdatedAt = id.New(), x.OrgID, now, now
	return SavePolicy(x.Ctx, x.Tx, p, f.name)
}

func fromV3(in *wire.CreatePolicyIntentV3) *Policy {
	return &Policy{Name: in.PolicyName, Effect: string(in.Effect), Condition: in.Condition, Consensus: in.Consensus,
		Notes: in.Notes, Time: in.Time}
}

// fromSelectors converts the selector-based intents of CREATE_POLICY and CREATE_POLICY_V2. Their
// selector language predates conditions and its semantics are not documented, so only a policy
// without selectors (one that applies to every activity) is accepted.
func fromSelectors(name string, effect wire.Effect, notes string, selectors int) (*Policy, error) {
	if selectors > 0 {
		return nil, apierr.Unsupported(
			"parameters.selectors (the selector policies of ACTIVITY_TYPE_CREATE_POLICY and " +
				"ACTIVITY_TYPE_CREATE_POLICY_V2; write the policy as condition and consensus with ACTIVITY_TYPE_CREATE_POLICY_V3)",
		)
	}
	return &Policy{Name: name, Effect: string(effect), Notes: notes}, nil
}

func (d Deps) createPolicy(x *activity.Exec, intent any) (any, error) {
	var p *Policy
	switch in := intent.(type) {
	case *wire.CreatePolicyIntentV3:
		p = fromV3(in)
	case *wire.CreatePolicyIntentV2:
		var err error
		if p, err = fromSelectors(in.PolicyName, in.Effect, in.Notes, len(in.Selectors)); err != nil {
			return nil, err
		}
	case *wire.CreatePolicyIntent:
		var err error
		if p, err = fromSelectors(in.PolicyName, in.Effect, in.Notes, len(in.Selectors)); err != nil {
			return nil, err
		}
	default:
		return nil, apierr.Internalf(nil, "create_policy: unexpected intent %T", intent)
	}
	if err := d.create(x, p, createFields("parameters"), 0); err != nil {
		return nil, err
	}
	return wire.CreatePolicyResult{PolicyId: p.ID}, nil
}

// createPolicies creates every policy or, the activity's transaction being undone on the first
// error, none.
func (d Deps) createPolicies(x *activity.Exec, in *wire.CreatePoliciesIntent) (any, error) {
	if len(in.Policies) == 0 {
		return nil, apierr.Invalid("parameters.policies", "at least one policy is required")
	}
	ids := make([]string, 0, len(in.Policies))
	for i := range in.Policies {
		p := fromV3(&in.Policies[i])
		if err := d.create(x, p, createFields(index("parameters.policies", i)), i); err != nil {
			return nil, err
		}
		ids = append(ids, p.ID)
	}
	return wire.CreatePoliciesResult{PolicyIds: ids}, nil
}

// policyUpdate is UpdatePolicyIntent(V2). An empty field keeps the stored value: the wire types
// cannot tell an absent field from "", so an update cannot clear an expression (delete and
// create the policy instead).
type policyUpdate struct {
	id, name, effect, condition, consensus, notes, time string
}

func updatePolicy(x *activity.Exec, intent any) (any, error) {
	var u policyUpdate
	switch in := intent.(type) {
	case *wire.UpdatePolicyIntentV2:
		u = policyUpdate{in.PolicyId, in.PolicyName, string(in.PolicyEffect), in.PolicyCondition, in.PolicyConsensus, in.PolicyNotes, in.Time}
	case *wire.UpdatePolicyIntent:
		u = policyUpdate{in.PolicyId, in.PolicyName, string(in.PolicyEffect), in.PolicyCondition, in.PolicyConsensus, in.PolicyNotes, ""}
	default:
		return nil, apierr.Internalf(nil, "update_policy: unexpected intent %T", intent)
	}
	p, err := LoadPolicy(x.Ctx, x.Tx, x.OrgID, u.id)
	if err != nil {
		return nil, notFoundAsInvalid(err, "parameters.policyId", "no policy %s in this organization", u.id)
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&p.Name, u.name)
	set(&p.Effect, u.effect)
	set(&p.Condition, u.condition)
	set(&p.Consensus, u.consensus)
	set(&p.Notes, u.notes)
	set(&p.Time, u.time)
	if err := check(p, updateFields); err != nil {
		return nil, err
	}
	p.UpdatedAt = x.Now
	if err := SavePolicy(x.Ctx, x.Tx, p, updateFields.name); err != nil {
		return nil, err
	}
	if _, ok := intent.(*wire.UpdatePolicyIntent); ok {
		return wire.UpdatePolicyResult{PolicyId: p.ID}, nil
	}
	return wire.UpdatePolicyResultV2{PolicyId: p.ID}, nil
}

func deletePolicy(x *activity.Exec, in *wire.DeletePolicyIntent) (any, error) {
	if err := deleteOne(x, "parameters.policyId", in.PolicyId); err != nil {
		return nil, err
	}
	return wire.DeletePolicyResult{PolicyId: in.PolicyId}, nil
}

func deletePolicies(x *activity.Exec, in *wire.DeletePoliciesIntent) (any, error) {
	if len(in.PolicyIds) == 0 {
		return nil, apierr.Invalid("parameters.policyIds", "at least one policy id is required")
	}
	seen := map[string]bool{}
	for i, pid := range in.PolicyIds {
		f := index("parameters.policyIds", i)
		if seen[pid] {
			return nil, apierr.Invalid(f, "policy %s is listed twice", pid)
		}
		seen[pid] = true
		if err := deleteOne(x, f, pid); err != nil {
			return nil, err
		}
	}
	return wire.DeletePoliciesResult{PolicyIds: in.PolicyIds}, nil
}

func deleteOne(x *activity.Exec, field, policyID string) error {
	p, err := LoadPolicy(x.Ctx, x.Tx, x.OrgID, policyID)
	if err != nil {
		return notFoundAsInvalid(err, field, "no policy %s in this organization", policyID)
	}
	if err := touchPolicySet(x.Ctx, x.Tx, x.OrgID, x.Now); err != nil {
		return err
	}
	return deleteRecord(x.Ctx, x.Tx, KindPolicy, p.ID)
}

func getPolicy(q *activity.Read, in *wire.GetPolicyRequest) (any, error) {
	p, err := LoadPolicy(q.Ctx, q.R, q.OrgID, in.PolicyId)
	if err != nil {
		return nil, err
	}
	return wire.GetPolicyResponse{Policy: p.ToWire()}, nil
}

func listPolicies(q *activity.Read, _ *wire.GetPoliciesRequest) (any, error) {
	ps, err := ListPolicies(q.Ctx, q.R, q.OrgID)
	if err != nil {
		return nil, err
	}
	out := wire.GetPoliciesResponse{Policies: make([]wire.Policy, 0, len(ps))}
	for _, p := range ps {
		out.Policies = append(out.Policies, p.ToWire())
	}
	return out, nil
}

func getPolicyEvaluations(q *activity.Read, in *wire.GetPolicyEvaluationsRequest) (any, error) {
	es, err := ActivityEvaluations(q.Ctx, q.R, q.OrgID, in.ActivityId)
	if err != nil {
		return nil, err
	}
	out := wire.GetPolicyEvaluationsResponse{
		PolicyEvaluations: make([]wire.Externalactivityv1PolicyEvaluation, 0, len(es)),
	}
	for _, e := range es {
		out.PolicyEvaluations = append(out.PolicyEvaluations, e.ToWire())
	}
	return out, nil
}
