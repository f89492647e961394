package policy

import "strings"

// Effects of a policy.
const (
	EffectAllow = "EFFECT_ALLOW"
	EffectDeny  = "EFFECT_DENY"
)

// Outcome is a policy outcome, per policy or final (wire values of v1Outcome).
type Outcome string

const (
	OutcomeAllow                  Outcome = "OUTCOME_ALLOW"
	OutcomeDenyExplicit           Outcome = "OUTCOME_DENY_EXPLICIT"
	OutcomeDenyImplicit           Outcome = "OUTCOME_DENY_IMPLICIT"
	OutcomeRequiresConsensus      Outcome = "OUTCOME_REQUIRES_CONSENSUS"
	OutcomeRejected               Outcome = "OUTCOME_REJECTED"
	OutcomeError                  Outcome = "OUTCOME_ERROR"
	OutcomeRequiresAuthenticators Outcome = "OUTCOME_REQUIRES_AUTHENTICATORS"
	OutcomeTimeInactive           Outcome = "OUTCOME_TIME_INACTIVE"
)

// Policy is a compiled policy. A nil expression is an absent field.
type Policy struct {
	ID        string
	Effect    string // EffectAllow or EffectDeny
	Condition *Expr
	Consensus *Expr
	Time      *Expr
}

// Evaluation is one policy's outcome; Err holds the error text when Outcome
// is OUTCOME_ERROR.
type Evaluation struct {
	PolicyID string
	Outcome  Outcome
	Err      string
}

// Decide evaluates policies for one activity (the root-quorum bypass is the
// caller's job, before Decide) and returns the final outcome and one
// Evaluation per policy, in input order.
//
// Per policy, in order, stopping at the first that decides:
//   - time (if present) is evaluated against timeEnv: false gives
//     TIME_INACTIVE (the policy does not apply);
//   - condition (absent = true) against condEnv: false gives DENY_IMPLICIT
//     (does not apply; the consensus is not evaluated);
//   - consensus (absent = satisfied) against consensusEnv:
//     DENY: satisfied gives DENY_EXPLICIT, else DENY_IMPLICIT (does not apply);
//     ALLOW: satisfied gives ALLOW, else REQUIRES_CONSENSUS;
//   - any evaluation error gives ERROR and the policy does not apply;
//   - an effect other than EFFECT_ALLOW/EFFECT_DENY gives ERROR.
//
// Final: DENY_EXPLICIT if any policy has it (deny beats everything), else
// ALLOW if any, else REQUIRES_CONSENSUS if any, else DENY_IMPLICIT.
//
// An erroring policy is ignored (reference open question 2). This means an
// erroring DENY policy does not deny: authors must keep deny policies free of
// fields that may be absent, as the docs advise (split them in two).
func Decide(policies []Policy, condEnv, consensusEnv, timeEnv Env) (Outcome, []Evaluation) {
	per := make([]Evaluation, len(policies))
	var anyDeny, anyAllow, anyConsensus bool
	for i, p := range policies {
		out, err := decideOne(p, condEnv, consensusEnv, timeEnv)
		per[i] = Evaluation{PolicyID: p.ID, Outcome: out}
		if err != nil {
			per[i].Err = err.Error()
		}
		switch out {
		case OutcomeDenyExplicit:
			anyDeny = true
		case OutcomeAllow:
			anyAllow = true
		case OutcomeRequiresConsensus:
			anyConsensus = true
		}
	}
	switch {
	case anyDeny:
		return OutcomeDenyExplicit, per
	case anyAllow:
		return OutcomeAllow, per
	case anyConsensus:
		return OutcomeRequiresConsensus, per
	}
	return OutcomeDenyImplicit, per
}

type effectError string

func (e effectError) Error() string { return "unknown policy effect '" + string(e) + "'" }

func decideOne(p Policy, condEnv, consensusEnv, timeEnv Env) (Outcome, error) {
	if p.Effect != EffectAllow && p.Effect != EffectDeny {
		return OutcomeError, effectError(p.Effect)
	}
	if p.Time != nil {
		ok, err := p.Time.Eval(timeEnv)
		if err != nil {
			return OutcomeError, err
		}
		if !ok {
			return OutcomeTimeInactive, nil
		}
	}
	if p.Condition != nil {
		ok, err := p.Condition.Eval(condEnv)
		if err != nil {
			return OutcomeError, err
		}
		if !ok {
			return OutcomeDenyImplicit, nil
		}
	}
	satisfied := true
	if p.Consensus != nil {
		ok, err := p.Consensus.Eval(consensusEnv)
		if err != nil {
			return OutcomeError, err
		}
		satisfied = ok
	}
	switch {
	case p.Effect == EffectDeny && satisfied:
		return OutcomeDenyExplicit, nil
	case p.Effect == EffectDeny:
		return OutcomeDenyImplicit, nil
	case satisfied:
		return OutcomeAllow, nil
	}
	return OutcomeRequiresConsensus, nil
}

// FieldError is a compile error in one field of a policy; its message
// matches Turnkey's "invalid policy condition" / "invalid policy consensus".
type FieldError struct {
	Field string // "condition", "consensus" or "time"
	Err   error  // a *SyntaxError
}

func (e *FieldError) Error() string { return "invalid policy " + e.Field + ": " + e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

// NewPolicy compiles a stored policy. An empty or all-whitespace field is
// absent (Turnkey returns absent fields as ""). The effect must be
// EFFECT_ALLOW or EFFECT_DENY. Errors are *FieldError (Field "effect" for a
// bad effect).
func NewPolicy(id, effect, condition, consensus, timeExpr string) (Policy, error) {
	p := Policy{ID: id, Effect: effect}
	if effect != EffectAllow && effect != EffectDeny {
		return Policy{}, &FieldError{Field: "effect", Err: effectError(effect)}
	}
	fields := []struct {
		name    string
		src     string
		compile func(string) (*Expr, error)
		dst     **Expr
	}{
		{"condition", condition, Compile, &p.Condition},
		{"consensus", consensus, Compile, &p.Consensus},
		{"time", timeExpr, CompileTime, &p.Time},
	}
	for _, f := range fields {
		if strings.TrimSpace(f.src) == "" {
			continue
		}
		e, err := f.compile(f.src)
		if err != nil {
			return Policy{}, &FieldError{Field: f.name, Err: err}
		}
		*f.dst = e
	}
	return p, nil
}
