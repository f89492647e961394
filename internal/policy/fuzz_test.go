package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/costtest"
)

// Allocation bounds the fuzz targets check (docs/limits.md §6). Compiling allocates in proportion
// to the source (about 180 bytes per byte at worst: a token and a node per byte); an evaluation in
// proportion to its steps (a step boxes a value or adds a list element; string work allocates at
// most EvalBytesPerStep bytes per step it is charged).
const (
	compileAllocPerByte = 256
	evalAllocPerStep    = 64
	fuzzAllocFixed      = 64 << 10
)

func fuzzSeeds(f *testing.F) {
	for _, ex := range loadDocumentedExamples(f) {
		for _, s := range []string{ex.Condition, ex.Consensus, ex.Time} {
			if s != "" {
				f.Add(s)
			}
		}
	}
	for _, s := range docsCorpus {
		f.Add(s)
	}
	for _, s := range docsTimeCorpus {
		f.Add(s)
	}
	for _, s := range []string{
		"", "(", "[", "'", "1..2", "[1,2,3][0..2].count() == 2", "!!true", "-1 < 0", "'é'[0] == 'é'",
		"greek[1..3] == 'βγ'", "nums[99999999999999999999999] == 1", "xs.all(a, xs.all(b, xs.any(c, c == a)))",
		"Timestamp('2026-01-01T00:00:00Z') < time.now", "CronSpan('* * * * *', '7d', 'UTC')",
		"xs.all(a, xs.all(b, text[a] != 'x' && data[b] != 'x' && bad[a..b] != 'x'))",
		"xs.all(a, xs.all(b, data == copy && data in [copy] && m[data] == 1 && text[a..600] != ''))",
		"xs.all(a, [1,2,3].all(b, CronSpan('* * * * *', '7d', 'UTC')))",
	} {
		f.Add(s)
	}
}

// fuzzEnv is a fixed environment for FuzzEval, with lists big enough that
// nested quantifiers hit the step limit.
func fuzzEnv() Env {
	env := testEnv()
	xs := make(List, 64)
	for i := range xs {
		xs[i] = IntOf(int64(i))
	}
	env["xs"] = xs
	env["time"] = Map{"now": Timestamp(time.Date(2026, 3, 8, 7, 30, 0, 0, time.UTC))}
	env["lazy"] = Lazy(func() (Value, error) { return Map{"a": List{String("x")}}, nil })
	// Long strings, so that string work inside quantifiers meets the byte charge: ASCII calldata,
	// an equal copy in other memory, non-ASCII text and invalid UTF-8.
	data := "0x" + strings.Repeat("a9059cbb", 1024)
	env["data"] = String(data)
	env["copy"] = String(strings.Clone(data))
	env["m"] = Map{data: IntOf(1)}
	env["text"] = String(strings.Repeat("αβγ€", 512))
	env["bad"] = String(strings.Repeat("é\xff", 1024))
	return env
}

// FuzzCompile: compiling arbitrary input never panics and returns either an
// expression or a *SyntaxError whose position lies within the input.
func FuzzCompile(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, src string) {
		costtest.Budget(t, []byte(src), 2*compileAllocPerByte, fuzzAllocFixed, func() {
			_, _ = Compile(src)
			_, _ = CompileTime(src)
		})
		for _, compile := range []func(string) (*Expr, error){Compile, CompileTime} {
			e, err := compile(src)
			if err != nil {
				var se *SyntaxError
				if !errors.As(err, &se) {
					t.Fatalf("error %T %v is not a *SyntaxError", err, err)
				}
				if se.Pos < 0 || se.Pos > len(src) || se.Line < 1 || se.Col < 1 {
					t.Fatalf("bad position %+v for %q", se, src)
				}
				continue
			}
			if e.Source() != src {
				t.Fatal("Source() changed")
			}
		}
	})
}

// FuzzEval: whatever compiles evaluates against a fixed environment without
// panicking, within the step limit, returning a bool or an *EvalError.
func FuzzEval(f *testing.F) {
	fuzzSeeds(f)
	env := fuzzEnv()
	f.Fuzz(func(t *testing.T, src string) {
		for _, compile := range []func(string) (*Expr, error){Compile, CompileTime} {
			e, err := compile(src)
			if err != nil {
				continue
			}
			start := time.Now()
			_, steps, err := e.evalSteps(env)
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("Eval of %q took %v", src, d)
			}
			if steps > MaxEvalSteps+MaxSourceLen { // the last charge may pass the limit by one operation
				t.Fatalf("Eval of %q took %d steps", src, steps)
			}
			costtest.Budget(t, []byte(src), 0, int64(evalAllocPerStep*steps+fuzzAllocFixed), func() {
				_, _ = e.Eval(env)
			})
			if err != nil {
				var ee *EvalError
				if !errors.As(err, &ee) {
					t.Fatalf("error %T %v is not an *EvalError", err, err)
				}
				if ee.Kind == Internal {
					t.Fatalf("evaluator panicked on %q: %v", src, err)
				}
			}
		}
	})
}
