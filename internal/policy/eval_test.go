package policy

import (
	"errors"
	"math/big"
	"strings"
	"testing"
)

// testEnv is a condition environment with a bit of everything.
func testEnv() ValueEnv {
	u256max, _ := new(
		big.Int,
	).SetString("115792089237316195423570985008687907853269984665640564039457584007913129639935", 10)
	return ValueEnv{
		"activity": ActivityView("ACTIVITY_TYPE_SIGN_TRANSACTION_V2", Map{"type": String("TRANSACTION_TYPE_ETHEREUM")}),
		"eth": FromGo(map[string]any{
			"tx": map[string]any{
				"to":       "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48",
				"data":     "0xa9059cbb000000000000000000000000742d35cc6634c0532925a3b844bc454e4438f44e",
				"value":    u256max,
				"chain_id": 1,
				"nonce":    uint64(7),
				"contract_call_args": map[string]any{
					"calls": []any{[]any{"0xaaa", 0}, []any{"0xbbb", 5}},
				},
			},
			"eip_712": map[string]any{
				"message": map[string]any{
					"permitted": []any{
						map[string]any{"token": "0xA0b8", "amount": 10, "spenders": []any{"s1", "s2"}},
						map[string]any{"token": "0xA0b8", "amount": 20, "spenders": []any{"s1"}},
					},
				},
			},
		}),
		"wallet": FromGo(map[string]any{"id": "w1", "imported": false, "exported": true, "label": "hot"}),
		"approvers": FromGo(
			[]any{
				map[string]any{"id": "u1", "tags": []any{"t1", "t2"}},
				map[string]any{"id": "u2", "tags": []any{"t2"}},
				map[string]any{"id": "u3", "tags": []any{}},
			},
		),
		"nums":    FromGo([]any{1, 2, 3}),
		"nothing": Null{},
		"greek":   String("αβγδ"),
	}
}

func TestEval(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want bool
	}{
		{"literal true", "true", true},
		{"and without short-circuit still computes false", "false && true", false},
		{"or", "false || true", true},
		{"not", "!false", true},
		{"not binds tighter than ==", "!false == true", true},
		{"int compare", "1 < 2 && 2 <= 2 && 3 > 2 && 3 >= 3 && 1 != 2", true},
		{"negative literal", "-5 < 0 && -5 == -5", true},
		{"string equality", "'a' != 'b' && 'a' == 'a'", true},
		{"in list literal", "1 in [1, 2, 3]", true},
		{"not in list literal", "4 in [1, 2, 3]", false},
		{"string in list", "activity.kind in ['SIGN_TRANSACTION', 'SIGN_RAW_PAYLOAD']", true},
		{"in env list", "'t1' in approvers[0].tags", true},
		{"empty list literal", "[].count() == 0", true},
		{"index list literal", "[1,2,3][0] == 1", true},
		{"index string", "'abc'[0] == 'a'", true},
		{"slice list count", "[1,2,3][0..2].count() == 2", true},
		{"slice string", "'abc'[0..2] == 'ab'", true},
		{"empty slice", "'abc'[1..1] == ''", true},
		{"full slice", "'abc'[0..3] == 'abc'", true},
		{"calldata selector counts the 0x", "eth.tx.data[0..10] == '0xa9059cbb'", true},
		{"calldata argument", "eth.tx.data[34..74] == '742d35cc6634c0532925a3b844bc454e4438f44e'", true},
		{"strings index by character", "greek[1] == 'β' && greek[1..3] == 'βγ'", true},
		{"all", "[1,1,1].all(x, x == 1)", true},
		{"all false", "[1,2,1].all(x, x == 1)", false},
		{"any", "[1,2,3].any(x, x == 1)", true},
		{"any none", "[1,2,3].any(x, x == 4)", false},
		{"all of empty list", "[].all(x, x == 1)", true},
		{"any of empty list", "[].any(x, x == 1)", false},
		{"contains", "[1,2,3].contains(1)", true},
		{"contains on env list", "approvers[1].tags.contains('t2')", true},
		{"filter count", "approvers.filter(u, u.tags.contains('t2')).count() >= 2", true},
		{"filter count exact", "approvers.filter(u, u.tags.contains('t1')).count() == 1", true},
		{"count without parentheses (leniency)", "approvers.count == 3", true},
		{
			"nested all over map of lists (example 14 shape)",
			"eth.eip_712.message['permitted'].all(p, p['token'] == '0xA0b8' && p['spenders'].all(s, s in ['s1', 's2']))",
			true,
		},
		{"nested any reads outer variable", "approvers.all(u, approvers.any(v, v.id == u.id))", true},
		{"inner variable shadows outer", "[1,2].all(x, [3].all(x, x == 3))", true},
		{"map bracket and index chain", "eth.eip_712.message['permitted'][1]['amount'] == 20", true},
		{"tuple args", "eth.tx.contract_call_args['calls'].all(c, c[0] in ['0xaaa', '0xbbb'] && c[1] >= 0)", true},
		{
			"u256 value",
			"eth.tx.value == 115792089237316195423570985008687907853269984665640564039457584007913129639935",
			true,
		},
		{"u256 greater than i128", "eth.tx.value > 170141183460469231731687303715884105728", true},
		{"big literal vs small", "170141183460469231731687303715884105728 > 1", true},
		{"uint64 from Go", "eth.tx.nonce == 7", true},
		{"number vs quoted decimal (leniency)", "eth.tx.chain_id == '1'", true},
		{"quoted decimal vs number ordering", "'2' > eth.tx.chain_id", true},
		{"quoted decimal in list", "eth.tx.chain_id in ['1', '10']", true},
		{
			"hex is compared as given, not lowercased",
			"eth.tx.to == '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48'",
			false,
		},
		{"bool field", "wallet.exported == true && !wallet.imported", true},
		{"bool in && directly", "wallet.exported && true", true},
		{"parentheses", "(1 == 1 || 1 == 2) && (2 == 2)", true},
		{"multi-line", "activity.action == 'SIGN'\n  && wallet.id == 'w1'", true},
		{"predicate variable may be named like a keyword", "[1].all(activity, activity == 1)", true},
		{"activity params", "activity.params.type == 'TRANSACTION_TYPE_ETHEREUM'", true},
	}
	env := testEnv()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Compile(tt.src)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			got, err := e.Eval(env)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if got != tt.want {
				t.Errorf("Eval(%q) = %v, want %v", tt.src, got, tt.want)
			}
		})
	}
}

func TestEvalErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		kind ErrorKind
		path string
	}{
		{"absent top-level keyword", "private_key.id == 'k'", MissingField, "private_key"},
		{"absent field", "wallet.color == 'red'", MissingField, "wallet.color"},
		{"absent map key", "eth.tx.contract_call_args['wad'] < 1", MissingField, "eth.tx.contract_call_args['wad']"},
		{
			"missing field even when the other side of || is true",
			"true || wallet.color == 'red'",
			MissingField,
			"wallet.color",
		},
		{
			"missing field on the left of a true ||",
			"private_key.id == 'k' || wallet.id == 'w1'",
			MissingField,
			"private_key",
		},
		{"missing field under a false &&", "false && private_key.id == 'k'", MissingField, "private_key"},
		{"missing field inside a predicate", "approvers.any(u, u.email == 'a@b.c')", MissingField, "u.email"},
		{"null is absent", "nothing == 1", MissingField, "nothing"},
		{"string vs bool", "wallet.label == true", TypeError, "wallet.label == true"},
		{"non-decimal string vs int", "eth.tx.chain_id == 'mainnet'", TypeError, "eth.tx.chain_id == 'mainnet'"},
		{"ordering strings", "wallet.label < 'z'", TypeError, "wallet.label < 'z'"},
		{
			"list equality",
			"approvers[0].tags == approvers[1].tags",
			TypeError,
			"approvers[0].tags == approvers[1].tags",
		},
		{"&& on a string", "wallet.label && true", TypeError, "wallet.label"},
		{"not a bool result", "wallet.label", TypeError, "wallet.label"},
		{"index out of range", "nums[3] == 1", IndexOutOfRange, "nums[3]"},
		{"negative index", "nums[-1] == 1", IndexOutOfRange, "nums[-1]"},
		{
			"huge index",
			"nums[340282366920938463463374607431768211456] == 1",
			IndexOutOfRange,
			"nums[340282366920938463463374607431768211456]",
		},
		{"slice past the end", "eth.tx.data[0..1000] == '0x'", IndexOutOfRange, "eth.tx.data[0..1000]"},
		{"slice reversed", "'abc'[2..1] == ''", IndexOutOfRange, "'abc'[2..1]"},
		{"string index out of range", "greek[4] == 'x'", IndexOutOfRange, "greek[4]"},
		{"index a bool", "wallet.imported[0] == 1", TypeError, "wallet.imported[0]"},
		{"field of a string", "wallet.label.x == 1", TypeError, "wallet.label.x"},
		{"count of a map", "wallet.count() == 1", TypeError, "wallet.count()"},
		{"all over a map", "wallet.all(x, true)", TypeError, "wallet.all(x, true)"},
		{"non-bool predicate", "nums.all(x, x)", TypeError, "x"},
		{"in a non-list", "1 in wallet.label", TypeError, "wallet.label"},
		{"mixed-type list in 'in'", "wallet.label in [1, 'hot']", TypeError, "wallet.label in [1, 'hot']"},
		{"map key must be a string", "wallet[0] == 1", TypeError, "wallet[0]"},
	}
	env := testEnv()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Compile(tt.src)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			got, err := e.Eval(env)
			var ee *EvalError
			if !errors.As(err, &ee) {
				t.Fatalf("Eval = %v, %v; want an *EvalError", got, err)
			}
			if ee.Kind != tt.kind || ee.Path != tt.path {
				t.Errorf("Eval error = {%s %q %q}, want {%s %q}", ee.Kind, ee.Path, ee.Msg, tt.kind, tt.path)
			}
			if !strings.HasPrefix(ee.Error(), string(tt.kind)) {
				t.Errorf("Error() = %q", ee.Error())
			}
		})
	}
}

func TestLazyValues(t *testing.T) {
	calls := 0
	env := ValueEnv{
		"eth": Map{"tx": Lazy(func() (Value, error) {
			calls++
			return FromGo(map[string]any{"to": "0xabc"}), nil
		})},
		"solana": Map{"tx": Lazy(func() (Value, error) {
			return nil, errors.New("not a solana transaction")
		})},
	}
	e, _ := Compile("eth.tx.to == '0xabc' && eth.tx.to != '0xdef'")
	for i := 0; i < 3; i++ {
		if ok, err := e.Eval(env); !ok || err != nil {
			t.Fatalf("Eval = %v, %v", ok, err)
		}
	}
	if calls != 1 {
		t.Errorf("lazy value computed %d times, want 1", calls)
	}
	e, _ = Compile("solana.tx.transfers.count() == 0")
	_, err := e.Eval(env)
	var ee *EvalError
	if !errors.As(err, &ee) || ee.Kind != EnvError || ee.Path != "solana.tx" ||
		!strings.Contains(err.Error(), "not a solana transaction") {
		t.Errorf("Eval error = %v", err)
	}
	// A policy that never touches a lazy value never computes it.
	e, _ = Compile("true")
	if _, err := e.Eval(env); err != nil {
		t.Fatal(err)
	}
}

func TestEvalStepLimit(t *testing.T) {
	big := make(List, 200)
	for i := range big {
		big[i] = IntOf(int64(i))
	}
	env := ValueEnv{"xs": big}
	// 200^3 = 8e6 predicate calls: over MaxEvalSteps.
	e, err := Compile("xs.all(a, xs.all(b, xs.all(c, a >= 0)))")
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Eval(env)
	var ee *EvalError
	if !errors.As(err, &ee) || ee.Kind != LimitExceeded {
		t.Fatalf("Eval error = %v, want LimitExceeded", err)
	}
}

func TestNilEnv(t *testing.T) {
	e, _ := Compile("wallet.id == 'x'")
	if _, err := e.Eval(nil); err == nil {
		t.Fatal("want MissingField with a nil env")
	}
	e, _ = Compile("1 == 1")
	if ok, err := e.Eval(nil); !ok || err != nil {
		t.Fatalf("Eval = %v, %v", ok, err)
	}
}

func TestFromGo(t *testing.T) {
	b, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	tests := []struct {
		in   any
		want string
	}{
		{nil, "null"},
		{true, "true"},
		{"x", "'x'"},
		{int8(-3), "-3"},
		{uint64(18446744073709551615), "18446744073709551615"},
		{b, "123456789012345678901234567890"},
		{*b, "123456789012345678901234567890"},
		{float64(42), "42"},
		{1.5, "'1.5'"},
		{[]string{"a"}, "['a']"},
		{[]int{1, 2}, "[1, 2]"},
		{map[string]int{"a": 1}, "{a: 1}"},
		{map[int]int{1: 1}, "null"},
		{struct{}{}, "null"},
	}
	for _, tt := range tests {
		if got := Format(FromGo(tt.in)); got != tt.want {
			t.Errorf("FromGo(%#v) = %s, want %s", tt.in, got, tt.want)
		}
	}
	round := ToGo(FromGo(map[string]any{"a": []any{true, "s", 3}}))
	if m := round.(map[string]any); m["a"].([]any)[2].(*big.Int).Int64() != 3 {
		t.Errorf("ToGo round trip = %#v", round)
	}
}

func TestIdentifiers(t *testing.T) {
	e, _ := Compile("approvers.any(u, u.id == 'x') && wallet.id == 'w' && approvers.count() > 0")
	got := strings.Join(e.Identifiers(), ",")
	if got != "approvers,wallet" {
		t.Errorf("Identifiers = %s", got)
	}
}
