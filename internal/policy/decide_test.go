package policy

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func mustCompile(t testing.TB, src string) *Expr {
	t.Helper()
	e, err := Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustCompileTime(t testing.TB, src string) *Expr {
	t.Helper()
	e, err := CompileTime(src)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestDecide(t *testing.T) {
	cond := ValueEnv{
		"activity": ActivityView("ACTIVITY_TYPE_SIGN_TRANSACTION_V2", Map{"type": String("TRANSACTION_TYPE_ETHEREUM")}),
		"eth":      FromGo(map[string]any{"tx": map[string]any{"to": "0xabc", "value": 5}}),
	}
	cons := ValueEnv{"approvers": FromGo([]any{map[string]any{"id": "alice", "tags": []any{"ops"}}})}
	timeEnv := TimeEnv(mustTime(t, "2026-03-11T14:00:00Z")) // Wednesday 10:00 EDT

	allowSign := Policy{ID: "allow-sign", Effect: EffectAllow, Condition: mustCompile(t, "activity.action == 'SIGN'")}
	allowAlice := Policy{
		ID:        "allow-alice",
		Effect:    EffectAllow,
		Condition: mustCompile(t, "activity.action == 'SIGN'"),
		Consensus: mustCompile(t, "approvers.any(u, u.id == 'alice')"),
	}
	needTwo := Policy{ID: "need-two", Effect: EffectAllow, Consensus: mustCompile(t, "approvers.count() >= 2")}
	denyOps := Policy{
		ID:        "deny-ops",
		Effect:    EffectDeny,
		Condition: mustCompile(t, "eth.tx.value > 1"),
		Consensus: mustCompile(t, "approvers.any(u, u.tags.contains('ops'))"),
	}
	denyBob := Policy{ID: "deny-bob", Effect: EffectDeny, Consensus: mustCompile(t, "approvers.any(u, u.id == 'bob')")}
	denyNoMatch := Policy{
		ID:        "deny-wallets",
		Effect:    EffectDeny,
		Condition: mustCompile(t, "activity.resource == 'WALLET'"),
	}
	denyErrors := Policy{ID: "deny-errors", Effect: EffectDeny, Condition: mustCompile(t, "wallet.id == 'w'")}
	allowErrors := Policy{ID: "allow-errors", Effect: EffectAllow, Condition: mustCompile(t, "private_key.id == 'k'")}
	denyNights := Policy{
		ID:     "deny-nights",
		Effect: EffectDeny,
		Time:   mustCompileTime(t, "CronSpan('0 22 * * *', '8h', 'America/New_York')"),
	}
	allowDays := Policy{
		ID:     "allow-days",
		Effect: EffectAllow,
		Time:   mustCompileTime(t, "CronSpan('0 9 * * 1-5', '8h', 'America/New_York')"),
	}
	badEffect := Policy{ID: "bad", Effect: "EFFECT_MAYBE"}
	allowAll := Policy{ID: "allow-all", Effect: EffectAllow}

	tests := []struct {
		name     string
		policies []Policy
		want     Outcome
		per      string
	}{
		{"no policies: implicit deny", nil, OutcomeDenyImplicit, ""},
		{"no fields: applies to everything", []Policy{allowAll}, OutcomeAllow, "allow-all=OUTCOME_ALLOW"},
		{"allow without consensus", []Policy{allowSign}, OutcomeAllow, "allow-sign=OUTCOME_ALLOW"},
		{"allow with satisfied consensus", []Policy{allowAlice}, OutcomeAllow, "allow-alice=OUTCOME_ALLOW"},
		{
			"allow awaiting consensus",
			[]Policy{needTwo},
			OutcomeRequiresConsensus,
			"need-two=OUTCOME_REQUIRES_CONSENSUS",
		},
		{
			"allow beats awaiting consensus",
			[]Policy{needTwo, allowSign},
			OutcomeAllow,
			"need-two=OUTCOME_REQUIRES_CONSENSUS allow-sign=OUTCOME_ALLOW",
		},
		{
			"deny beats allow",
			[]Policy{allowSign, denyOps},
			OutcomeDenyExplicit,
			"allow-sign=OUTCOME_ALLOW deny-ops=OUTCOME_DENY_EXPLICIT",
		},
		{
			"deny beats awaiting consensus",
			[]Policy{needTwo, denyOps},
			OutcomeDenyExplicit,
			"need-two=OUTCOME_REQUIRES_CONSENSUS deny-ops=OUTCOME_DENY_EXPLICIT",
		},
		{
			"deny whose consensus selects nobody does not apply",
			[]Policy{allowSign, denyBob},
			OutcomeAllow,
			"allow-sign=OUTCOME_ALLOW deny-bob=OUTCOME_DENY_IMPLICIT",
		},
		{
			"deny whose condition is false does not apply",
			[]Policy{allowSign, denyNoMatch},
			OutcomeAllow,
			"allow-sign=OUTCOME_ALLOW deny-wallets=OUTCOME_DENY_IMPLICIT",
		},
		{
			"erroring deny is ignored",
			[]Policy{allowSign, denyErrors},
			OutcomeAllow,
			"allow-sign=OUTCOME_ALLOW deny-errors=OUTCOME_ERROR",
		},
		{"erroring allow is ignored", []Policy{allowErrors}, OutcomeDenyImplicit, "allow-errors=OUTCOME_ERROR"},
		{
			"time-inactive deny does not apply",
			[]Policy{allowSign, denyNights},
			OutcomeAllow,
			"allow-sign=OUTCOME_ALLOW deny-nights=OUTCOME_TIME_INACTIVE",
		},
		{"time-active allow", []Policy{allowDays}, OutcomeAllow, "allow-days=OUTCOME_ALLOW"},
		{
			"unknown effect is an error",
			[]Policy{badEffect, allowSign},
			OutcomeAllow,
			"bad=OUTCOME_ERROR allow-sign=OUTCOME_ALLOW",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, per := Decide(tt.policies, cond, cons, timeEnv)
			if got != tt.want {
				t.Errorf("Decide = %s, want %s", got, tt.want)
			}
			var parts []string
			for _, e := range per {
				parts = append(parts, e.PolicyID+"="+string(e.Outcome))
				if (e.Outcome == OutcomeError) != (e.Err != "") {
					t.Errorf("%s: outcome %s with Err %q", e.PolicyID, e.Outcome, e.Err)
				}
			}
			if s := strings.Join(parts, " "); s != tt.per {
				t.Errorf("per-policy = %s, want %s", s, tt.per)
			}
		})
	}

	// Outside business hours the time-gated allow is inactive.
	got, per := Decide([]Policy{allowDays}, cond, cons, TimeEnv(mustTime(t, "2026-03-14T14:00:00Z")))
	if got != OutcomeDenyImplicit || per[0].Outcome != OutcomeTimeInactive {
		t.Errorf("weekend: %s %+v", got, per)
	}
	// A time expression without a time env is an error, not "always".
	got, per = Decide([]Policy{allowDays}, cond, cons, nil)
	if got != OutcomeDenyImplicit || per[0].Outcome != OutcomeError || !strings.Contains(per[0].Err, "time.now") {
		t.Errorf("no clock: %s %+v", got, per)
	}
}

func TestNewPolicy(t *testing.T) {
	p, err := NewPolicy("p1", EffectAllow, "activity.action == 'SIGN'", "  ", "")
	if err != nil || p.Condition == nil || p.Consensus != nil || p.Time != nil {
		t.Fatalf("NewPolicy = %+v, %v", p, err)
	}
	for _, tt := range []struct{ effect, cond, cons, time, want string }{
		{"EFFECT_ALLOW", "activity.action = 'SIGN'", "", "", "invalid policy condition: 1:17: unexpected '='"},
		{"EFFECT_DENY", "", "approvers.any(u, u.id == 'x', 1)", "", "invalid policy consensus: 1:29: expected ')' but found ','"},
		{"EFFECT_ALLOW", "", "", "CronSpan('0 9 * * *', '9d', 'UTC')", "invalid policy time: "},
		{"EFFECT_ALLOW", "", "", "activity.kind == 'X'", "invalid policy time: "},
		{"ALLOW", "", "", "", "invalid policy effect: unknown policy effect 'ALLOW'"},
	} {
		_, err := NewPolicy("p", tt.effect, tt.cond, tt.cons, tt.time)
		var fe *FieldError
		if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf(
				"NewPolicy(%q, %q, %q, %q) = %v, want prefix %q",
				tt.effect,
				tt.cond,
				tt.cons,
				tt.time,
				err,
				tt.want,
			)
		}
	}
}

// Compiled expressions and lazy values are shared by concurrent requests.
func TestConcurrentEval(t *testing.T) {
	e := mustCompile(t, "eth.tx.to == '0xabc' && approvers.filter(u, u.tags.contains('ops')).count() >= 1")
	var calls atomic.Int32
	env := ValueEnv{
		"eth":       Map{"tx": Lazy(func() (Value, error) { calls.Add(1); return Map{"to": String("0xabc")}, nil })},
		"approvers": FromGo([]any{map[string]any{"id": "a", "tags": []any{"ops"}}}),
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				if ok, err := e.Eval(env); !ok || err != nil {
					t.Error(ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if calls.Load() != 1 {
		t.Errorf("lazy value computed %d times", calls.Load())
	}
}
