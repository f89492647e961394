package policy

import (
	"testing"
	"time"
)

func benchExample(b *testing.B, n int) (Policy, Env, Env) {
	for _, ex := range loadDocumentedExamples(b) {
		if ex.N == n {
			c := ex.Cases[0]
			return compileExample(b, ex), conditionEnv(c.Env), consensusEnv(c.Approvers, c.Credentials)
		}
	}
	b.Fatalf("no example %d", n)
	return Policy{}, nil, nil
}

// BenchmarkCompile compiles a typical policy condition (example #14).
func BenchmarkCompile(b *testing.B) {
	src := "eth.eip_712.domain.name == 'Permit2' && eth.eip_712.primary_type == 'PermitBatchTransferFrom' && eth.eip_712.message['permitted'].all(p, p['token'] == '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48') && activity.type == 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2'"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvalExample1 evaluates condition and consensus of example #1.
func BenchmarkEvalExample1(b *testing.B) {
	p, cond, cons := benchExample(b, 1)
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := p.Condition.Eval(cond); !ok || err != nil {
			b.Fatal(ok, err)
		}
		if ok, err := p.Consensus.Eval(cons); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkEvalExample14 evaluates the Permit2 condition of example #14.
func BenchmarkEvalExample14(b *testing.B) {
	p, cond, _ := benchExample(b, 14)
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := p.Condition.Eval(cond); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkDecideExample24 runs Decide on the time-gated example #24.
func BenchmarkDecideExample24(b *testing.B) {
	p, cond, cons := benchExample(b, 24)
	timeEnv := TimeEnv(time.Date(2026, 3, 11, 14, 0, 0, 0, time.UTC))
	b.ReportAllocs()
	for b.Loop() {
		if out, _ := Decide([]Policy{p}, cond, cons, timeEnv); out != OutcomeAllow {
			b.Fatal(out)
		}
	}
}
