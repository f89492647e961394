package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		pos  string // the error points at the first occurrence of this text...
		nth  int    // ...or, when pos is "", at this byte offset
		msg  string // substring of the message
	}{
		{"extra argument", "[1].any(x, x == 1, 2)", ", 2", 0, "expected ')' but found ','"},
		{"unclosed paren", "(1 == 1", "", 7, "expected ')' but found end of input"},
		{"unclosed list", "1 in [1, 2", "", 10, "expected ']' but found end of input"},
		{"trailing operator", "true &&", "", 7, "expected an operand but found end of input"},
		{"single ampersand", "true & false", "&", 0, "did you mean '&&'"},
		{"single pipe", "true | false", "|", 0, "did you mean '||'"},
		{"assignment", "wallet.id = 'x'", "=", 0, "did you mean '=='"},
		{"double quotes", `wallet.id == "x"`, `"`, 0, "single quotes"},
		{"unterminated string", "wallet.id == 'x", "'x", 0, "unterminated string"},
		{"bad number", "1abc == 1", "abc", 0, "invalid character 'a' in integer literal"},
		{"bad character", "wallet.id == 'x' # comment", "#", 0, "unexpected character '#'"},
		{"unknown method", "approvers.size() > 1", "size", 0, "unknown method 'size'"},
		{"missing predicate variable", "approvers.any(u.id == 'x')", ".id", 0, "expected ',' but found '.'"},
		{"chained comparison", "1 < 2 < 3", "< 3", 0, "do not chain"},
		{"junk after expression", "true false", "false", 0, "unexpected 'false' after end of expression"},
		{"empty", "", "", 0, "empty expression"},
		{"blank", "   ", "", 0, "empty expression"},
		{"field after dot missing", "wallet. == 1", "==", 0, "expected an identifier but found '=='"},
		{"in without operand", "in [1]", "in", 0, "expected an operand but found 'in'"},
		{"keyword as variable", "[1].all(true, true)", "true,", 0, "cannot use 'true' as a variable name"},
		{"unknown function", "Foo('x')", "Foo", 0, "unknown function 'Foo'"},
		{"slice missing bound", "'abc'[..2] == 'ab'", "..", 0, "expected an operand but found '..'"},
		{"second line", "true &&\n  wallet.id == 'x' &&\n  )", ")", 0, "expected an operand but found ')'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(tt.src)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Compile(%q) = %v, want a *SyntaxError", tt.src, err)
			}
			want := tt.nth
			if tt.pos != "" {
				want = strings.Index(tt.src, tt.pos)
			}
			if se.Pos != want {
				t.Errorf("Pos = %d, want %d (%v)", se.Pos, want, err)
			}
			if !strings.Contains(se.Msg, tt.msg) {
				t.Errorf("Msg = %q, want it to contain %q", se.Msg, tt.msg)
			}
		})
	}
}

func TestSyntaxErrorLineCol(t *testing.T) {
	_, err := Compile("approvers.any(u, u.id == 'x', 1)")
	if err == nil || err.Error() != "1:29: expected ')' but found ','" {
		t.Errorf("err = %v", err)
	}
	_, err = Compile("true &&\n  wallet.id == 'é' &&\n  )")
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 3 || se.Col != 3 {
		t.Errorf("err = %#v", err)
	}
	_, err = Compile("'é' == 'é' == 'x'")
	if !errors.As(err, &se) || se.Line != 1 || se.Col != 12 || se.Pos != 13 {
		t.Errorf("columns count characters: err = %#v", err)
	}
}

// Type errors the checker can prove from literals are compile errors.
func TestCompileTypeErrors(t *testing.T) {
	tests := []struct {
		src, at, msg string
	}{
		{"'a' == true", "==", "cannot compare string with bool"},
		{"1 == 'abc'", "==", "cannot compare int with string"},
		{"'a' < 'b'", "<", "cannot compare string with string using '<'"},
		{"true > false", ">", "cannot compare bool with bool"},
		{"[1] == [1]", "==", "cannot compare list with list"},
		{"1 && true", "1", "operand of '&&' must be bool, found int"},
		{"1 || true", "1", "operand of '||' must be bool, found int"},
		{"true && (1 || true)", "1", "operand of '||' must be bool, found int"},
		{"1 == '+1'", "==", "cannot compare int with string"},
		{"true || 'x'", "'x'", "operand of '||' must be bool, found string"},
		{"!1", "1", "operand of '!' must be bool"},
		{"-'a' == 1", "'a'", "operand of '-' must be int"},
		{"1", "1", "expression must be bool, found int"},
		{"'x'", "'x'", "expression must be bool, found string"},
		{"[1,2].count()", "[", "expression must be bool, found int"},
		{"1 in 'abc'", "'abc'", "right operand of 'in' must be a list"},
		{"'a' in [1, 'b']", "1", "cannot compare string with int in 'in'"},
		{"[1].all(x, 1)", "1)", "predicate of 'all' must be bool"},
		{"'abc'.count() == 3", "count", "string has no method 'count'"},
		{"'abc'.len == 3", "len", "string has no field 'len'"},
		{"'abc'['x'] == 'a'", "'x'", "index of string must be int"},
		{"[1][true] == 1", "true", "index of list must be int"},
		{"'abc'[0..'x'] == 'a'", "'x'", "slice bound must be int"},
		{"true[0]", "[", "cannot index bool"},
		{"1 == 340282366920938463463374607431768211456340282366920938463463374607431768211456", "3", "out of range"},
	}
	for _, tt := range tests {
		_, err := Compile(tt.src)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Compile(%q) = %v, want a *SyntaxError", tt.src, err)
			continue
		}
		if want := strings.Index(tt.src, tt.at); se.Pos != want || !strings.Contains(se.Msg, tt.msg) {
			t.Errorf("Compile(%q) = %v (pos %d), want %q at %d", tt.src, err, se.Pos, tt.msg, want)
		}
	}
	// The quoted-decimal leniency is a compile-time fact too.
	for _, ok := range []string{"1 == '1'", "'10' > 9", "eth.tx.chain_id in ['1', 10]", "-1 == '-1'"} {
		if _, err := Compile(ok); err != nil {
			t.Errorf("Compile(%q): %v", ok, err)
		}
	}
}

func TestLimits(t *testing.T) {
	long := "true" + strings.Repeat(" ", MaxSourceLen)
	if _, err := Compile(long); err == nil || !strings.Contains(err.Error(), "longer than the limit") {
		t.Errorf("long source: %v", err)
	}
	deepParens := strings.Repeat("(", MaxDepth+1) + "true" + strings.Repeat(")", MaxDepth+1)
	if _, err := Compile(deepParens); err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Errorf("deep parentheses: %v", err)
	}
	deepNot := strings.Repeat("!", MaxDepth+1) + "true"
	if _, err := Compile(deepNot); err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Errorf("deep '!': %v", err)
	}
	deepList := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1) + ".count() == 1"
	if _, err := Compile(deepList); err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Errorf("deep lists: %v", err)
	}
	longChain := "wallet" + strings.Repeat(".x", MaxDepth+1) + " == 1"
	if _, err := Compile(longChain); err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Errorf("long postfix chain: %v", err)
	}
	bigList := "1 in [" + strings.Repeat("1,", MaxListLiteral) + "1]"
	if _, err := Compile(bigList); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("big list: %v", err)
	}
	okList := "1 in [" + strings.Repeat("1,", MaxListLiteral-1) + "1]"
	if _, err := Compile(okList); err != nil {
		t.Errorf("list at the limit: %v", err)
	}
	// Long flat conjunctions are not "deep".
	flat := strings.Repeat("true && ", 500) + "true"
	if _, err := Compile(flat); err != nil {
		t.Errorf("flat conjunction: %v", err)
	}
	nested := strings.Repeat("(", MaxDepth-1) + "true" + strings.Repeat(")", MaxDepth-1)
	if _, err := Compile(nested); err != nil {
		t.Errorf("nesting at the limit: %v", err)
	}
}

func TestTimeLanguageIsSeparate(t *testing.T) {
	for _, src := range []string{
		"time.now > Timestamp('2025-01-01T00:00:00Z')",
		"CronSpan('0 9 * * 1-5', '8h', 'America/New_York')",
		"activity.kind == 'X' && time.now > 1",
	} {
		if _, err := Compile(src); err == nil || !strings.Contains(err.Error(), "time field") {
			t.Errorf("Compile(%q) = %v, want a time-field-only error", src, err)
		}
	}
	for _, tt := range []struct{ src, msg string }{
		{"activity.kind == 'SIGN_TRANSACTION'", "unknown identifier 'activity'"},
		{"time.then > Timestamp('2025-01-01T00:00:00Z')", "expected 'time.now'"},
		{"time.now.x == 1", "has no fields"},
		{"time.now == 1", "cannot compare timestamp with int"},
		{"Timestamp('2025-01-01T00:00:00-05:00') < time.now", "zero UTC offset"},
		{"Timestamp('yesterday') < time.now", "invalid RFC 3339"},
		{"Timestamp(time.now) < time.now", "string literal arguments"},
		{"Timestamp('a', 'b') < time.now", "takes 1 argument"},
		{"CronSpan('0 9 * *', '8h', 'UTC')", "must have 5 fields"},
		{"CronSpan('*/5 * * * *', '8h', 'UTC')", "invalid minute field"},
		{"CronSpan('0 9 * * MON', '8h', 'UTC')", "invalid day-of-week field"},
		{"CronSpan('0 9 * * 7', '8h', 'UTC')", "out of range 0-6"},
		{"CronSpan('0 24 * * *', '8h', 'UTC')", "out of range 0-23"},
		{"CronSpan('0 9 0 * *', '8h', 'UTC')", "out of range 1-31"},
		{"CronSpan('0 9 * 5-3 *', '8h', 'UTC')", "out of range 1-12"},
		{"CronSpan('@daily', '8h', 'UTC')", "must have 5 fields"},
		{"CronSpan('0 9 * * *', '8h30s', 'UTC')", "invalid duration"},
		{"CronSpan('0 9 * * *', '1.5h', 'UTC')", "invalid duration"},
		{"CronSpan('0 9 * * *', '0h', 'UTC')", "greater than zero"},
		{"CronSpan('0 9 * * *', '7d1m', 'UTC')", "at most 7d"},
		{"CronSpan('0 9 * * *', '8h1d', 'UTC')", "invalid duration"},
		{"CronSpan('0 9 * * *', '', 'UTC')", "invalid duration"},
		{"CronSpan('0 9 * * *', '8h', 'Mars/Olympus')", "unknown IANA time zone"},
		{"CronSpan('0 9 * * *', '8h', 'Local')", "invalid IANA time zone"},
		{"CronSpan('0 9 * * *', '8h')", "expected ','"},
	} {
		_, err := CompileTime(tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("CompileTime(%q) = %v, want %q", tt.src, err, tt.msg)
		}
	}
	for _, src := range []string{
		"time.now >= Timestamp('2026-03-01T00:00:00Z')",
		"time.now >= Timestamp('2026-03-01T00:00:00z')",
		"time.now >= Timestamp('2026-03-01T00:00:00+00:00')",
		"time.now >= Timestamp('2026-03-01T00:00:00-00:00')",
		"time.now >= Timestamp('2026-03-01T00:00:00.123Z')",
		"!CronSpan('0 2 * * *', '1h', 'UTC')",
		"CronSpan('0,30 9-17 1,15 * *', '1d12h', 'Europe/Berlin') || CronSpan('0 0 * * 0', '7d', 'UTC')",
		"CronSpan('0 9 * * 1-5', '90m', 'America/New_York')",
		"[1].all(time, time == 1) || time.now > Timestamp('2026-03-01T00:00:00Z')",
	} {
		if _, err := CompileTime(src); err != nil {
			t.Errorf("CompileTime(%q): %v", src, err)
		}
	}
}
