// Package policy implements Turnkey's policy language: a lexer, a
// recursive-descent parser with a static checker, an evaluator, the activity
// classification (kind, resource, action) policies read, and Decide, which
// turns the per-policy results into the final outcome of an activity.
//
// It is a pure library: no I/O, no store, no HTTP, no logging. The activity
// engine compiles each policy's condition, consensus and time once (Compile,
// CompileTime), caches the *Expr, builds an Env per request (values can be
// Lazy, so eth.tx is parsed only when a policy reads it) and calls Decide.
// The root-quorum bypass and root-quorum-only activities (RootQuorumOnly) are
// the engine's job, before Decide.
//
// Sources: docs/api-notes.md §4 and tkhq/docs
// features/policies/language.mdx, time-based-policies.mdx and examples/.
//
// # Grammar
//
// In EBNF; whitespace (space, tab, CR, LF) separates tokens.
//
//	expr     = and { "||" and } .
//	and      = cmp { "&&" cmp } .
//	cmp      = unary [ ( "==" | "!=" | "<" | "<=" | ">" | ">=" | "in" ) unary ] .
//	unary    = ( "!" | "-" ) unary | postfix .
//	postfix  = primary { "." ident [ "(" args ")" ] | "[" expr [ ".." expr ] "]" } .
//	args     = ident "," expr            (* all, any, filter: variable, predicate *)
//	         | expr                      (* contains *)
//	         | .                         (* count *)
//	primary  = int | string | "true" | "false" | ident | list | "(" expr ")"
//	         | "Timestamp" "(" string ")"                        (* time field only *)
//	         | "CronSpan" "(" string "," string "," string ")"   (* time field only *) .
//	list     = "[" [ expr { "," expr } ] "]" .
//	ident    = letter { letter | digit } .       (* letter includes "_" *)
//	int      = digit { digit } .
//	string   = "'" { any character except "'" } "'" .
//
// Precedence, loosest first: ||, &&, comparisons and in, unary ! and -,
// postfix. Comparisons do not chain (a < b < c is a syntax error). The
// methods are all(v, pred), any(v, pred), filter(v, pred), contains(x) and
// count(); "true", "false" and "in" are reserved.
//
// # Types and semantics
//
// Values are bool, int (arbitrary precision; literals up to u256 magnitude),
// string, list, struct/map (string keys; x.f and x['f'] both read it),
// timestamp (time field only) and null. The language is strongly typed:
//   - && || ! take bools; both sides of && and || are always evaluated (no
//     short-circuit), as are all elements in all/any/filter/in, so touching
//     an absent field anywhere makes the whole expression an error
//     (MissingField), even in `true || wallet.id == 'x'`;
//   - == and != compare bool, int, string or timestamp with the same type;
//     < <= > >= compare ints or timestamps; anything else is a TypeError;
//     lists and maps are not comparable;
//   - x in list and list.contains(x) use == on each element;
//   - x[i] indexes lists (element) and strings (one character); m['k'] reads
//     a map key; x[a..b] slices lists and strings with 0 <= a <= b <= len,
//     end exclusive. Strings index by character (Unicode code point); hex
//     calldata is ASCII, so eth.tx.data[0..10] is the 0x-prefixed selector
//     (the 0x counts). Out-of-range indices and bounds are IndexOutOfRange;
//   - all/any/filter bind their variable (shadowing keywords and outer
//     variables) in the predicate, which must produce bool. all of an empty
//     list is true, any is false;
//   - reading an absent identifier, field or key, or a null value, is a
//     MissingField error; an Env's Lazy value that fails is an EnvError.
//
// Type errors the checker can prove from literals alone are compile errors
// (*SyntaxError): 'a' == true, 1 && true, an expression whose result is a
// literal non-bool, and so on. Identifiers are not checked at compile time in
// conditions and consensus (the keyword set differs per field and grows;
// unknown ones are MissingField at evaluation). Expr.Identifiers lists the
// free identifiers an expression reads.
//
// # The time field
//
// CompileTime accepts the same grammar plus Timestamp('<rfc3339>'),
// CronSpan('<cron>', '<duration>', '<tz>') and the keyword time.now, and no
// other free identifier. Compile rejects all three. Their arguments must be
// string literals and are validated at compile time:
//   - Timestamp: RFC 3339 whose offset is zero (Z, z, +00:00, -00:00);
//   - cron: exactly five fields (minute hour day-of-month month
//     day-of-week, day-of-week 0-6 with 0 = Sunday) of numbers, ranges a-b,
//     comma lists, or *; no steps, names, macros or seconds. When neither
//     day-of-month nor day-of-week is *, a day matches if either does (OR);
//   - duration: whole-number days, hours, minutes in that order ("8h",
//     "90m", "1d12h"), greater than zero and at most 7d;
//   - tz: an IANA name (tzdata is embedded; "Local" is rejected).
//
// CronSpan is true when time.now lies in [fire, fire+duration) for some fire
// of the schedule, fires being wall-clock times in tz. The duration is
// elapsed time, so across DST the local end time shifts (the docs' 22:00+8h
// window ends 07:00 after spring-forward and 05:00 after fall-back). Choices
// the docs leave open: a fire at a wall time skipped by a DST jump happens at
// the wall time shifted forward by the gap (02:30 on a New York
// spring-forward day fires at 03:30 EDT); a wall time that occurs twice fires
// once, at its first occurrence. time.now comes from the Env (TimeEnv);
// without it a time expression is a MissingField error.
//
// # Leniencies seen in the docs
//
//   - `.count` without parentheses on a list is count() (solana.mdx). On a
//     map, .count is an ordinary field.
//   - An int compared (== != < <= > >=, in, contains) with a string holding
//     a decimal integer ('1', '-5') compares numerically
//     (eth.eip_7702_authorization.chain_id == '1', eth.tx.chain_id == '8453').
//     Any other string against an int is a TypeError.
//   - Strings are compared exactly as given: hex is never lowercased, even
//     where the docs say EIP-712 hex "must be lowercase".
//   - Unquoted placeholders (o.address == <BITCOIN_ADDRESS>) are syntax
//     errors until filled in; they are placeholders, not syntax.
//   - ! is accepted in every field (the docs document it for time).
//   - Unary minus on ints is accepted; the docs' int is i128.
//   - Strings have no escape sequences (none are documented), so a string
//     literal cannot contain a single quote.
//   - Struct literals ({ id: 'abc' } in the docs' type table) are not
//     expressions.
//
// # Limits
//
// MaxSourceLen (16 KiB) per expression, MaxDepth (64) nesting of
// parentheses, lists, calls, unary operators and postfix chains,
// MaxListLiteral (1024) elements per list literal, integer literals up to u256
// magnitude, and MaxEvalSteps (about a million steps) per evaluation, past
// which evaluation fails with LimitExceeded. A step is a node visit (so each
// predicate call and each element compared by in/contains is one), and string
// work is charged in the same budget, one step per EvalBytesPerStep (64) bytes:
// comparing strings of equal length, hashing a field name or map key, scanning
// a string the first time it is indexed or sliced by character (4 bytes per
// byte when it is not ASCII; later indices are O(1): the evaluator keeps the
// last few scanned strings), and converting a slice of invalid UTF-8. A CronSpan is computed once per evaluation and
// charged 2,048 steps. Chains of && and || are n-ary and do not count as
// nesting.
//
// # Activities
//
// Classify maps an ACTIVITY_TYPE_* to kind (type without prefix and _Vn),
// resource and action, from language.mdx's table; rows the docs omit are
// chosen by analogy and marked "inferred" in classify.go. Root-quorum-only
// activities have no kind, resource or action. ActivityView builds the
// `activity` keyword value.
//
// # Decide
//
// Per policy: a false time gives OUTCOME_TIME_INACTIVE; a false condition
// (absent = true) gives OUTCOME_DENY_IMPLICIT; then the consensus (absent =
// satisfied): a DENY policy whose consensus holds gives DENY_EXPLICIT (the
// docs use a deny's consensus to select whom it denies), otherwise
// DENY_IMPLICIT; an ALLOW policy gives ALLOW, or REQUIRES_CONSENSUS while its
// consensus is unmet. Final: any DENY_EXPLICIT wins, then ALLOW, then
// REQUIRES_CONSENSUS, else DENY_IMPLICIT.
//
// A policy whose evaluation errors is recorded as OUTCOME_ERROR (with the
// message) and does not apply; the reference leaves this open (its question
// 2). The consequence is that an erroring DENY policy does not deny, so deny
// policies should not read fields that may be absent; the docs advise
// splitting such policies.
package policy
