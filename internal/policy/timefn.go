package policy

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // CronSpan time zones must not depend on the host's zoneinfo
)

// maxCronSpan is the longest CronSpan duration the docs allow.
const maxCronSpan = 7 * 24 * time.Hour

// cronSpan is a compiled CronSpan(cron, duration, tz).
type cronSpan struct {
	minute  [60]bool
	hour    [24]bool
	dom     [32]bool // 1..31
	month   [13]bool // 1..12
	dow     [7]bool  // 0 = Sunday
	domStar bool
	dowStar bool
	dur     time.Duration
	loc     *time.Location
}

// parseCronSpan validates the three arguments; on failure it returns the
// index of the offending argument and a message.
func parseCronSpan(cron, dur, tz string) (*cronSpan, int, string) {
	cs := &cronSpan{}
	if msg := cs.parseCron(cron); msg != "" {
		return nil, 0, msg
	}
	d, msg := parseSpanDuration(dur)
	if msg != "" {
		return nil, 1, msg
	}
	cs.dur = d
	loc, msg := loadZone(tz)
	if msg != "" {
		return nil, 2, msg
	}
	cs.loc = loc
	return cs, 0, ""
}

func (cs *cronSpan) parseCron(s string) string {
	fields := strings.Fields(s)
	if len(fields) != 5 {
		return fmt.Sprintf(
			"cron expression '%s' must have 5 fields (minute hour day-of-month month day-of-week), found %d",
			abbreviate(s),
			len(fields),
		)
	}
	type spec struct {
		name     string
		lo, hi   int
		set      []bool
		starFlag *bool
	}
	specs := []spec{
		{"minute", 0, 59, cs.minute[:], nil},
		{"hour", 0, 23, cs.hour[:], nil},
		{"day-of-month", 1, 31, cs.dom[:], &cs.domStar},
		{"month", 1, 12, cs.month[:], nil},
		{"day-of-week", 0, 6, cs.dow[:], &cs.dowStar},
	}
	for i, sp := range specs {
		f := fields[i]
		if f == "*" {
			for v := sp.lo; v <= sp.hi; v++ {
				sp.set[v] = true
			}
			if sp.starFlag != nil {
				*sp.starFlag = true
			}
			continue
		}
		for _, part := range strings.Split(f, ",") {
			lo, hi := part, part
			if k := strings.IndexByte(part, '-'); k >= 0 {
				lo, hi = part[:k], part[k+1:]
			}
			a, ok1 := cronNumber(lo)
			b, ok2 := cronNumber(hi)
			if !ok1 || !ok2 {
				return fmt.Sprintf(
					"invalid %s field '%s' in cron expression (only numbers, ranges a-b, lists and * are supported)",
					sp.name,
					abbreviate(f),
				)
			}
			if a < sp.lo || b > sp.hi || a > b {
				return fmt.Sprintf(
					"%s field '%s' out of range %d-%d in cron expression",
					sp.name,
					abbreviate(f),
					sp.lo,
					sp.hi,
				)
			}
			for v := a; v <= b; v++ {
				sp.set[v] = true
			}
		}
	}
	return ""
}

func cronNumber(s string) (int, bool) {
	if s == "" || len(s) > 2 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// parseSpanDuration parses whole-number days, hours and minutes, in that
// order, each at most once: "8h", "90m", "1d12h".
func parseSpanDuration(s string) (time.Duration, string) {
	bad := fmt.Sprintf("invalid duration '%s' (use whole-number d, h and m, e.g. '8h', '90m', '1d12h')", abbreviate(s))
	var total time.Duration
	rest := s
	units := []struct {
		suffix byte
		unit   time.Duration
	}{{'d', 24 * time.Hour}, {'h', time.Hour}, {'m', time.Minute}}
	next := 0
	if rest == "" {
		return 0, bad
	}
	for rest != "" {
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j == 0 || j == len(rest) || j > 6 {
			return 0, bad
		}
		n, _ := strconv.Atoi(rest[:j])
		u := -1
		for k := next; k < len(units); k++ {
			if units[k].suffix == rest[j] {
				u = k
				break
			}
		}
		if u < 0 {
			return 0, bad
		}
		total += time.Duration(n) * units[u].unit
		next = u + 1
		rest = rest[j+1:]
	}
	if total <= 0 || total > maxCronSpan {
		return 0, fmt.Sprintf("duration '%s' must be greater than zero and at most 7d", abbreviate(s))
	}
	return total, ""
}

var zoneCache sync.Map // name -> *time.Location

func loadZone(name string) (*time.Location, string) {
	if name == "" || name == "Local" || len(name) > 64 {
		return nil, fmt.Sprintf("invalid IANA time zone '%s'", abbreviate(name))
	}
	if l, ok := zoneCache.Load(name); ok {
		return l.(*time.Location), ""
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Sprintf("unknown IANA time zone '%s'", abbreviate(name))
	}
	zoneCache.Store(name, loc)
	return loc, ""
}

func (cs *cronSpan) dayMatches(y int, m time.Month, d int) bool {
	if !cs.month[m] {
		return false
	}
	wd := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday()
	domOK, dowOK := cs.dom[d], cs.dow[wd]
	switch {
	case cs.domStar && cs.dowStar:
		return true
	case cs.domStar:
		return dowOK
	case cs.dowStar:
		return domOK
	}
	return domOK || dowOK // both restricted: OR, as documented
}

// active reports whether now lies in [f, f+dur) for some fire instant f.
//
// Fires are local wall times in the zone. A wall time skipped by a
// daylight-saving jump (e.g. 02:30 on a spring-forward day) fires at the
// instant the wall clock would show if the jump had not happened, i.e. moved
// forward by the gap (03:30 EDT). A wall time that occurs twice (fall-back)
// fires once, at its first occurrence.
func (cs *cronSpan) active(now time.Time) bool {
	start := now.Add(-cs.dur)
	// Wall-clock seconds (local time read as if it were UTC) bound which
	// candidate fires are worth resolving; 3h covers any offset change.
	nowW := wallSeconds(now.In(cs.loc))
	startW := wallSeconds(start.In(cs.loc))
	const margin = 3 * 3600
	nl := now.In(cs.loc)
	for back := 0; back <= 9; back++ {
		day := time.Date(nl.Year(), nl.Month(), nl.Day()-back, 0, 0, 0, 0, time.UTC)
		dayW := day.Unix()
		if dayW+86400 < startW-margin {
			break
		}
		y, m, d := day.Date()
		if !cs.dayMatches(y, m, d) {
			continue
		}
		for h := 23; h >= 0; h-- {
			if !cs.hour[h] {
				continue
			}
			hourW := dayW + int64(h)*3600
			if hourW > nowW+margin || hourW+3600 < startW-margin {
				continue
			}
			for mi := 59; mi >= 0; mi-- {
				if !cs.minute[mi] {
					continue
				}
				w := hourW + int64(mi)*60
				if w > nowW+margin || w < startW-margin {
					continue
				}
				f := resolveWall(w, cs.loc)
				if !f.After(now) && now.Before(f.Add(cs.dur)) {
					return true
				}
			}
		}
	}
	return false
}

func wallSeconds(t time.Time) int64 {
	_, off := t.Zone()
	return t.Unix() + int64(off)
}

// resolveWall maps wall-clock seconds in loc to an instant (see active).
func resolveWall(w int64, loc *time.Location) time.Time {
	_, offBefore := time.Unix(w-86400, 0).In(loc).Zone()
	_, offAfter := time.Unix(w+86400, 0).In(loc).Zone()
	best := time.Time{}
	for _, off := range []int{offBefore, offAfter} {
		t := time.Unix(w-int64(off), 0).In(loc)
		if _, o := t.Zone(); o == off && (best.IsZero() || t.Before(best)) {
			best = t
		}
	}
	if best.IsZero() {
		best = time.Unix(w-int64(offBefore), 0).In(loc)
	}
	return best
}
