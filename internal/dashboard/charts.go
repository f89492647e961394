package dashboard

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/store"
)

// maxChartActivities bounds the activities one charts page reads: the newest of the range, a
// single query with a LIMIT that reads only their heads (times, status, type: never their
// JSON), so a page view costs the same however large the activities are. When the range holds
// more, the page says the charts cover the newest ones only.
const maxChartActivities = 5000

// chartRange is a charts page's time range: n buckets of step ending now.
type chartRange struct {
	Name, Label string
	Step        time.Duration
	N           int
	Format      string // x-axis label layout
}

var chartRanges = []chartRange{
	{"hour", "last hour, per minute", time.Minute, 60, "15:04"},
	{"day", "last 24 hours, per hour", time.Hour, 24, "15:04"},
	{"month", "last 30 days, per day", 24 * time.Hour, 30, "01-02"},
}

func findRange(name string) (chartRange, bool) {
	if name == "" {
		return chartRanges[0], true
	}
	for _, r := range chartRanges {
		if r.Name == name {
			return r, true
		}
	}
	return chartRange{}, false
}

// ---- SVG model: coordinates computed here, drawn by the "chart" template ----

const (
	chartW, chartH                     = 720, 220
	padLeft, padRight, padTop, padBott = 56, 10, 10, 26
)

type svgBar struct {
	X, Y, W, H float64
	Class, Tip string
}

type svgLine struct {
	Points, Class string
}

type svgTick struct {
	X, Y  float64
	Label string
}

type legendItem struct{ Class, Label string }

type chart struct {
	Title, Note    string
	W, H           int
	Left, Right    float64
	Bars           []svgBar
	Lines          []svgLine
	YTicks, XTicks []svgTick
	Legend         []legendItem
	Empty          bool
}

type series struct {
	Label, Class string
	Values       []float64
}

// niceMax rounds a chart's top up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// countMax is niceMax for counts: a top whose quarter ticks are whole numbers.
func countMax(v float64) float64 {
	top := niceMax(v)
	return math.Ceil(top/4) * 4
}

func newChart(title string, starts []time.Time, format string, top float64, yfmt func(float64) string) chart {
	c := chart{Title: title, W: chartW, H: chartH, Left: padLeft, Right: chartW - padRight}
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		c.YTicks = append(c.YTicks, svgTick{X: padLeft - 6, Y: yOf(v, top), Label: yfmt(v)})
	}
	n := len(starts)
	every := (n + 5) / 6
	for i := 0; i < n; i += every {
		c.XTicks = append(c.XTicks, svgTick{X: xOf(i, n) + slotW(n)/2, Y: chartH - 8, Label: starts[i].Format(format)})
	}
	return c
}

func slotW(n int) float64           { return float64(chartW-padLeft-padRight) / float64(n) }
func xOf(i, n int) float64          { return padLeft + float64(i)*slotW(n) }
func yOf(v, top float64) float64    { return padTop + (1-v/top)*float64(chartH-padTop-padBott) }
func round1(f float64) float64      { return math.Round(f*10) / 10 }
func countLabel(v float64) string   { return trimFloat(v) }
func percentLabel(v float64) string { return trimFloat(v) + "%" }

func trimFloat(v float64) string {
	if v == math.Trunc(v) || v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func msLabel(v float64) string { return trimFloat(v) + " ms" }

// stacked draws series as bars stacked per bucket.
func stacked(title string, starts []time.Time, format string, ss []series, yfmt func(float64) string) chart {
	n := len(starts)
	max := 0.0
	for i := range n {
		sum := 0.0
		for _, s := range ss {
			sum += s.Values[i]
		}
		max = math.Max(max, sum)
	}
	top := countMax(max)
	c := newChart(title, starts, format, top, yfmt)
	c.Empty = max == 0
	w := slotW(n)
	gap := math.Min(2, w/4)
	for i := range n {
		base := 0.0
		for _, s := range ss {
			v := s.Values[i]
			if v <= 0 {
				continue
			}
			y0, y1 := yOf(base, top), yOf(base+v, top)
			c.Bars = append(
				c.Bars,
				svgBar{
					X:     round1(xOf(i, n) + gap/2),
					Y:     round1(y1),
					W:     round1(w - gap),
					H:     round1(y0 - y1),
					Class: s.Class,
					Tip:   fmt.Sprintf("%s %s: %s", starts[i].Format("2006-01-02 15:04"), s.Label, yfmt(v)),
				},
			)
			base += v
		}
	}
	for _, s := range ss {
		c.Legend = append(c.Legend, legendItem{s.Class, s.Label})
	}
	return c
}

// lines draws series as polylines through the buckets' middles.
func lineChart(title string, starts []time.Time, format string, ss []series, yfmt func(float64) string) chart {
	n := len(starts)
	max := 0.0
	for _, s := range ss {
		for _, v := range s.Values {
			max = math.Max(max, v)
		}
	}
	top := niceMax(max)
	c := newChart(title, starts, format, top, yfmt)
	c.Empty = max == 0
	for _, s := range ss {
		var pts []string
		for i, v := range s.Values {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(i, n)+slotW(n)/2, yOf(v, top)))
		}
		c.Lines = append(c.Lines, svgLine{Points: strings.Join(pts, " "), Class: s.Class})
		c.Legend = append(c.Legend, legendItem{s.Class, s.Label})
	}
	return c
}

// ---- the data ----

var chartStatuses = []struct{ Status, Label, Class string }{
	{"ACTIVITY_STATUS_COMPLETED", "completed", "s-completed"},
	{"ACTIVITY_STATUS_FAILED", "failed", "s-failed"},
	{"ACTIVITY_STATUS_REJECTED", "rejected", "s-rejected"},
	{"ACTIVITY_STATUS_CONSENSUS_NEEDED", "consensus needed", "s-pending"},
	{"ACTIVITY_STATUS_AUTHENTICATORS_NEEDED", "authenticators needed", "s-pending2"},
}

// signing reports whether an activity type produces signatures.
func signing(typ string) bool { return strings.HasPrefix(typ, "ACTIVITY_TYPE_SIGN_") }

const topTypes = 6

// activityCharts buckets activities (newest first, all created at or after from) into the range.
func activityCharts(acts []store.ActivityHead, from time.Time, rg chartRange) []chart {
	starts := make([]time.Time, rg.N)
	for i := range starts {
		starts[i] = from.Add(time.Duration(i) * rg.Step)
	}
	bucket := func(t time.Time) int {
		i := int(t.Sub(from) / rg.Step)
		if i < 0 || i >= rg.N {
			return -1
		}
		return i
	}
	byStatus := map[string][]float64{}
	byType := map[string][]float64{}
	typeTotal := map[string]int{}
	total, failed, signed := make([]float64, rg.N), make([]float64, rg.N), make([]float64, rg.N)
	other := make([]float64, rg.N)
	for _, a := range acts {
		i := bucket(a.CreatedAt)
		if i < 0 {
			continue
		}
		if byStatus[a.Status] == nil {
			byStatus[a.Status] = make([]float64, rg.N)
		}
		byStatus[a.Status][i]++
		if byType[a.Type] == nil {
			byType[a.Type] = make([]float64, rg.N)
		}
		byType[a.Type][i]++
		typeTotal[a.Type]++
		total[i]++
		if a.Status == store.ActivityStatusFailed {
			failed[i]++
		}
		if signing(a.Type) && a.Status == "ACTIVITY_STATUS_COMPLETED" {
			signed[i]++
		}
	}
	var statusSeries []series
	known := map[string]bool{}
	for _, st := range chartStatuses {
		known[st.Status] = true
		if v := byStatus[st.Status]; v != nil {
			statusSeries = append(statusSeries, series{st.Label, st.Class, v})
		}
	}
	for st, v := range byStatus {
		if !known[st] {
			for i := range v {
				other[i] += v[i]
			}
		}
	}
	if sum(other) > 0 {
		statusSeries = append(statusSeries, series{"other", "s-other", other})
	}
	if len(statusSeries) == 0 {
		statusSeries = []series{{"completed", "s-completed", make([]float64, rg.N)}}
	}
	types := make([]string, 0, len(typeTotal))
	for t := range typeTotal {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool {
		if typeTotal[types[i]] != typeTotal[types[j]] {
			return typeTotal[types[i]] > typeTotal[types[j]]
		}
		return types[i] < types[j]
	})
	var typeSeries []series
	rest := make([]float64, rg.N)
	for k, t := range types {
		if k < topTypes {
			typeSeries = append(typeSeries, series{shortType(t), fmt.Sprintf("c%d", k), byType[t]})
			continue
		}
		for i, v := range byType[t] {
			rest[i] += v
		}
	}
	if sum(rest) > 0 {
		typeSeries = append(typeSeries, series{"other types", "c-other", rest})
	}
	if len(typeSeries) == 0 {
		typeSeries = []series{{"none", "c0", make([]float64, rg.N)}}
	}
	rate := make([]float64, rg.N)
	errRate := make([]float64, rg.N)
	secs := rg.Step.Seconds()
	for i := range rg.N {
		rate[i] = signed[i] / secs
		if total[i] > 0 {
			errRate[i] = 100 * failed[i] / total[i]
		}
	}
	return []chart{
		stacked("Activities by status", starts, rg.Format, statusSeries, countLabel),
		stacked("Activities by type", starts, rg.Format, typeSeries, countLabel),
		lineChart(
			"Signatures per second (completed signing activities)",
			starts,
			rg.Format,
			[]series{{"signatures/s", "l-sign", rate}},
			trimFloat,
		),
		lineChart(
			"Activity failure rate",
			starts,
			rg.Format,
			[]series{{"failed activities", "l-err", errRate}},
			percentLabel,
		),
	}
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

func shortType(t string) string { return strings.TrimPrefix(t, "ACTIVITY_TYPE_") }

// requestCharts draws the process's request ring over the range (at most its 24 hours).
func requestCharts(q *Requests, from time.Time, rg chartRange) []chart {
	pts := q.window(from, rg.Step, rg.N)
	starts := make([]time.Time, len(pts))
	count, errRate, bad := make([]float64, len(pts)), make([]float64, len(pts)), make([]float64, len(pts))
	p50, p95, p99 := make([]float64, len(pts)), make([]float64, len(pts)), make([]float64, len(pts))
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for i, p := range pts {
		starts[i] = p.Start
		count[i] = float64(p.Count)
		if p.Count > 0 {
			errRate[i] = 100 * float64(p.Errs) / float64(p.Count)
			bad[i] = 100 * float64(p.Bad) / float64(p.Count)
		}
		p50[i], p95[i], p99[i] = ms(p.P50), ms(p.P95), ms(p.P99)
	}
	return []chart{
		stacked("API requests", starts, rg.Format, []series{{"requests", "c0", count}}, countLabel),
		lineChart(
			"API error rate",
			starts,
			rg.Format,
			[]series{{"server errors (5xx)", "l-err", errRate}, {"refused (4xx)", "l-warn", bad}},
			percentLabel,
		),
		lineChart(
			"API request latency",
			starts,
			rg.Format,
			[]series{{"p50", "l-p50", p50}, {"p95", "l-p95", p95}, {"p99", "l-p99", p99}},
			msLabel,
		),
	}
}

// charts serves /charts: the whole server's, or one organization's with ?org=.
func (s *Server) charts(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	rg, ok := findRange(q.Get("range"))
	if !ok {
		s.fail(
			w,
			r,
			http.StatusBadRequest,
			"Unknown range "+fmt.Sprintf("%q", q.Get("range"))+": use hour, day or month.",
		)
		return
	}
	orgID := q.Get("org")
	now := s.Now().UTC()
	// The range ends with the bucket holding now; buckets start on whole steps (days in UTC).
	end := now.Truncate(rg.Step).Add(rg.Step)
	from := end.Add(-time.Duration(rg.N) * rg.Step)
	var acts []store.ActivityHead
	orgName := ""
	err := s.Store.View(ctx, func(rd store.Reader) error {
		if orgID != "" {
			o, err := directory.LoadOrganization(ctx, rd, orgID)
			if err != nil {
				return err
			}
			orgName = o.Name
		}
		var err error
		acts, err = rd.ListActivityHeads(ctx, orgID, store.ActivityFilter{Since: from, Limit: maxChartActivities})
		return err
	})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	cs := activityCharts(acts, from, rg)
	if len(acts) == maxChartActivities {
		cs[0].Note = fmt.Sprintf("The range holds more than %d activities: the charts count the newest %d (from %s).",
			maxChartActivities, maxChartActivities, acts[len(acts)-1].CreatedAt.UTC().Format("2006-01-02 15:04Z"))
	}
	data := map[string]any{
		"Title":   "Charts",
		"Range":   rg,
		"Ranges":  chartRanges,
		"Charts":  cs,
		"OrgID":   orgID,
		"OrgName": orgName,
		"Count":   len(acts),
	}
	if orgID == "" {
		data["RequestCharts"] = requestCharts(&s.Requests, from, rg)
		data["RequestsSince"] = s.Requests.Since()
	} else {
		data["Title"] = "Charts of " + orgName
		switch q := s.OrgRequests.For(orgID); {
		case rg.Step != time.Minute:
			data["OrgRequestsNote"] = "This process keeps each organization's API requests for the last hour: choose the hour range to chart them."
		case q == nil:
			data["OrgRequestsNote"] = "This process has served no API request of this organization in the last hour."
		default:
			data["RequestCharts"] = requestCharts(q, from, rg)
			data["RequestsSince"] = q.Since()
		}
	}
	s.render(w, r, http.StatusOK, "charts", data)
}
