package policy

import (
	"testing"
	"time"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestTimeExpressions(t *testing.T) {
	tests := []struct {
		name string
		src  string
		now  string
		want bool
	}{
		// One-shot windows: start-inclusive, end-exclusive.
		{
			"before window",
			"time.now >= Timestamp('2026-03-01T00:00:00Z') && time.now < Timestamp('2026-04-01T00:00:00Z')",
			"2026-02-28T23:59:59Z",
			false,
		},
		{
			"window start is inclusive",
			"time.now >= Timestamp('2026-03-01T00:00:00Z') && time.now < Timestamp('2026-04-01T00:00:00Z')",
			"2026-03-01T00:00:00Z",
			true,
		},
		{
			"window end is exclusive",
			"time.now >= Timestamp('2026-03-01T00:00:00Z') && time.now < Timestamp('2026-04-01T00:00:00Z')",
			"2026-04-01T00:00:00Z",
			false,
		},
		{"timestamp equality", "time.now == Timestamp('2026-03-01T00:00:00+00:00')", "2026-03-01T00:00:00Z", true},
		{"timestamp != ", "time.now != Timestamp('2026-03-01T00:00:00Z')", "2026-03-01T00:00:01Z", true},

		// Business hours in New York (EST in January, UTC-5).
		{"Monday 08:59 EST", "CronSpan('0 9 * * 1-5', '8h', 'America/New_York')", "2026-01-05T13:59:00Z", false},
		{"Monday 09:00 EST", "CronSpan('0 9 * * 1-5', '8h', 'America/New_York')", "2026-01-05T14:00:00Z", true},
		{"Monday 16:59 EST", "CronSpan('0 9 * * 1-5', '8h', 'America/New_York')", "2026-01-05T21:59:59Z", true},
		{"Monday 17:00 EST", "CronSpan('0 9 * * 1-5', '8h', 'America/New_York')", "2026-01-05T22:00:00Z", false},
		{"Sunday 10:00 EST", "CronSpan('0 9 * * 1-5', '8h', 'America/New_York')", "2026-01-04T15:00:00Z", false},
		// The same fire follows daylight saving: 09:00 EDT is 13:00 UTC.
		{"Monday 09:00 EDT", "CronSpan('0 9 * * 1-5', '8h', 'America/New_York')", "2026-03-09T13:00:00Z", true},
		{
			"Monday 08:30 EDT (13:30 UTC would be 08:30 EST)",
			"CronSpan('0 9 * * 1-5', '8h', 'America/New_York')",
			"2026-03-09T12:30:00Z",
			false,
		},

		// Overnight window across midnight, including the DST nights the docs
		// describe: ends 07:00 after spring-forward, 05:00 after fall-back.
		{"ordinary night 05:59", "CronSpan('0 22 * * *', '8h', 'America/New_York')", "2026-01-06T10:59:00Z", true},
		{"ordinary night 06:00", "CronSpan('0 22 * * *', '8h', 'America/New_York')", "2026-01-06T11:00:00Z", false},
		{
			"spring-forward night 06:30 EDT still open",
			"CronSpan('0 22 * * *', '8h', 'America/New_York')",
			"2026-03-08T10:30:00Z",
			true,
		},
		{
			"spring-forward night 07:00 EDT closed",
			"CronSpan('0 22 * * *', '8h', 'America/New_York')",
			"2026-03-08T11:00:00Z",
			false,
		},
		{
			"fall-back night 04:59 EST open",
			"CronSpan('0 22 * * *', '8h', 'America/New_York')",
			"2026-11-01T09:59:00Z",
			true,
		},
		{
			"fall-back night 05:00 EST closed",
			"CronSpan('0 22 * * *', '8h', 'America/New_York')",
			"2026-11-01T10:00:00Z",
			false,
		},

		// A fire inside the spring-forward gap (02:30 does not exist on
		// 2026-03-08) moves forward by the gap: 03:30 EDT = 07:30 UTC.
		{
			"gap fire: 03:29 EDT not yet",
			"CronSpan('30 2 * * *', '30m', 'America/New_York')",
			"2026-03-08T07:29:00Z",
			false,
		},
		{"gap fire: 03:30 EDT open", "CronSpan('30 2 * * *', '30m', 'America/New_York')", "2026-03-08T07:30:00Z", true},
		{
			"gap fire: 04:00 EDT closed",
			"CronSpan('30 2 * * *', '30m', 'America/New_York')",
			"2026-03-08T08:00:00Z",
			false,
		},
		// A fire at an ambiguous time (01:30 happens twice on 2026-11-01)
		// fires once, at the first (EDT) occurrence.
		{
			"ambiguous fire: first 01:30 (EDT) open",
			"CronSpan('30 1 * * *', '30m', 'America/New_York')",
			"2026-11-01T05:45:00Z",
			true,
		},
		{
			"ambiguous fire: second 01:30 (EST) not a fire",
			"CronSpan('30 1 * * *', '30m', 'America/New_York')",
			"2026-11-01T06:45:00Z",
			false,
		},

		// Day-of-month and day-of-week are OR'd when both are restricted.
		{"dom OR dow: the 1st (a Sunday)", "CronSpan('0 9 1 * 1', '1h', 'UTC')", "2026-03-01T09:30:00Z", true},
		{"dom OR dow: a Monday", "CronSpan('0 9 1 * 1', '1h', 'UTC')", "2026-03-02T09:30:00Z", true},
		{"dom OR dow: a Tuesday the 3rd", "CronSpan('0 9 1 * 1', '1h', 'UTC')", "2026-03-03T09:30:00Z", false},
		{"dom only", "CronSpan('0 0 15 * *', '1d', 'UTC')", "2026-03-15T23:59:00Z", true},
		{"dom only, other day", "CronSpan('0 0 15 * *', '1d', 'UTC')", "2026-03-16T00:00:00Z", false},
		{"month restricted", "CronSpan('0 0 * 12 *', '1d', 'UTC')", "2026-12-24T12:00:00Z", true},
		{"month restricted, other month", "CronSpan('0 0 * 12 *', '1d', 'UTC')", "2026-11-24T12:00:00Z", false},
		// A window reaching back across days: weekly 7d span.
		{"7-day span from Sunday covers Saturday", "CronSpan('0 0 * * 0', '7d', 'UTC')", "2026-03-14T23:59:00Z", true},
		{"long span across a month boundary", "CronSpan('0 12 28 2 *', '5d', 'UTC')", "2026-03-05T11:59:00Z", true},
		{"long span ended", "CronSpan('0 12 28 2 *', '5d', 'UTC')", "2026-03-05T12:00:00Z", false},
		{"every minute", "CronSpan('* * * * *', '1m', 'Asia/Kolkata')", "2026-07-01T03:17:42Z", true},
		{"lists and ranges", "CronSpan('15,45 8-9 * * *', '10m', 'UTC')", "2026-07-01T09:50:00Z", true},
		{"lists and ranges, gap", "CronSpan('15,45 8-9 * * *', '10m', 'UTC')", "2026-07-01T09:56:00Z", false},

		// Composition.
		{"negation", "!CronSpan('0 2 * * *', '1h', 'UTC')", "2026-07-01T02:30:00Z", false},
		{
			"bounded recurring span, inside",
			"CronSpan('0 9 * * 1-5', '8h', 'America/New_York') && time.now < Timestamp('2026-01-01T00:00:00Z')",
			"2025-12-31T15:00:00Z",
			true,
		},
		{
			"bounded recurring span, after the bound",
			"CronSpan('0 9 * * 1-5', '8h', 'America/New_York') && time.now < Timestamp('2026-01-01T00:00:00Z')",
			"2026-01-05T15:00:00Z",
			false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := CompileTime(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Eval(TimeEnv(mustTime(t, tt.now)))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("%s at %s = %v, want %v", tt.src, tt.now, got, tt.want)
			}
		})
	}
}

func TestTimeNeedsNow(t *testing.T) {
	e, _ := CompileTime("CronSpan('0 9 * * *', '8h', 'UTC')")
	if ids := e.Identifiers(); len(ids) != 1 || ids[0] != "time" {
		t.Errorf("Identifiers = %v, want [time]", ids)
	}
	if _, err := e.Eval(ValueEnv{}); err == nil {
		t.Error("want MissingField without time.now")
	}
	if _, err := e.Eval(ValueEnv{"time": Map{"now": String("noon")}}); err == nil {
		t.Error("want TypeError when time.now is not a timestamp")
	}
	// FromGo(time.Time) is a Timestamp.
	if ok, err := e.Eval(MapEnv{"time": map[string]any{"now": mustTime(t, "2026-07-01T10:00:00Z")}}); !ok ||
		err != nil {
		t.Errorf("Eval = %v, %v", ok, err)
	}
}

// A brute-force check of CronSpan against minute-by-minute expansion of the
// schedule over a DST transition.
func TestCronSpanMatchesBruteForce(t *testing.T) {
	cs, _, msg := parseCronSpan("0,30 1-3 * * *", "45m", "America/New_York")
	if msg != "" {
		t.Fatal(msg)
	}
	loc := cs.loc
	start := mustTime(t, "2026-03-07T00:00:00Z")
	end := mustTime(t, "2026-03-10T00:00:00Z")
	// Enumerate fires by walking instants minute by minute and keeping local
	// times that match; skipped wall times are added where resolveWall puts
	// them, and repeated wall times only once.
	var fires []time.Time
	seen := map[string]bool{}
	for t0 := start.Add(-24 * time.Hour); t0.Before(end); t0 = t0.Add(time.Minute) {
		l := t0.In(loc)
		key := l.Format("2006-01-02 15:04")
		if cs.minute[l.Minute()] && cs.hour[l.Hour()] && !seen[key] {
			seen[key] = true
			fires = append(fires, t0)
		}
	}
	// 02:00 and 02:30 on 2026-03-08 do not exist; they fire at 03:00 and
	// 03:30 EDT, the same instants as the real 03:00 and 03:30 fires.
	for t0 := start; t0.Before(end); t0 = t0.Add(7 * time.Minute) {
		want := false
		for _, f := range fires {
			if !f.After(t0) && t0.Before(f.Add(cs.dur)) {
				want = true
			}
		}
		if got := cs.active(t0); got != want {
			t.Fatalf("active(%s) = %v, want %v", t0.In(loc), got, want)
		}
	}
}
