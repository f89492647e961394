package dashboard

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
)

// Audit actions. The failures (outcome "failure") are the refused sign-ins.
const (
	ActionOperatorCreated = "operator created"
	ActionSignIn          = "sign-in"
	ActionSignInFailed    = "sign-in failed"
	ActionLockedOut       = "sign-in locked out"
	ActionSignOut         = "sign-out"
	ActionProxySettings   = "auth proxy settings"
)

// auditActions are offered by the audit log's action filter (any action can be typed).
var auditActions = []string{
	ActionOperatorCreated,
	ActionSignIn,
	ActionSignInFailed,
	ActionLockedOut,
	ActionSignOut,
	ActionProxySettings,
	"proxy enabled",
	"proxy updated",
	"proxy disabled",
	"access granted",
	"access revoked",
	"keyring rotated",
}

// Outcome is "failure" for refused sign-ins and lockouts, "success" for the rest.
func (a *Audit) Outcome() string {
	if a.Action == ActionSignInFailed || a.Action == ActionLockedOut {
		return "failure"
	}
	return "success"
}

// WriteAudit records a change made outside the dashboard (the latchkey command); Operator
// names who made it ("(command line)" when nobody signed in). At defaults to now.
func WriteAudit(ctx context.Context, st store.Store, a Audit) error {
	if a.At.IsZero() {
		a.At = time.Now().UTC()
	}
	if a.Operator == "" {
		a.Operator = "(command line)"
	}
	return writeAudit(ctx, st, a)
}

const (
	// auditScanPage is how many records a page of the audit log reads at most looking for
	// matches of its filters; auditScanExport bounds an export the same way.
	auditScanPage   = 5000
	auditScanExport = 1_000_000
	auditChunk      = 500
)

// auditFilter is the audit log's filters, from the query string.
type auditFilter struct {
	Operator, Action, Outcome, From, To string
	from, to                            time.Time // to is exclusive: the day after To
}

func parseAuditFilter(q url.Values) (auditFilter, error) {
	f := auditFilter{Operator: strings.TrimSpace(q.Get("operator")), Action: strings.TrimSpace(q.Get("action")),
		Outcome: q.Get("outcome"), From: strings.TrimSpace(q.Get("from")), To: strings.TrimSpace(q.Get("to"))}
	if len(f.Operator) > 254 || len(f.Action) > 100 {
		return f, errors.New("operator and action are at most 254 and 100 characters")
	}
	switch f.Outcome {
	case "", "success", "failure":
	default:
		return f, fmt.Errorf("outcome must be success or failure, not %q", f.Outcome)
	}
	var err error
	if f.From != "" {
		if f.from, err = time.Parse("2006-01-02", f.From); err != nil {
			return f, fmt.Errorf("from must be a date, YYYY-MM-DD, not %q", f.From)
		}
	}
	if f.To != "" {
		if f.to, err = time.Parse("2006-01-02", f.To); err != nil {
			return f, fmt.Errorf("to must be a date, YYYY-MM-DD, not %q", f.To)
		}
		f.to = f.to.AddDate(0, 0, 1)
	}
	if !f.from.IsZero() && !f.to.IsZero() && !f.from.Before(f.to) {
		return f, errors.New("from must not be after to")
	}
	if after := q.Get("after"); after != "" && !validID(after) {
		return f, errors.New("after must be an audit record id")
	}
	return f, nil
}

func (f auditFilter) match(a *Audit) bool {
	return (f.Operator == "" || strings.EqualFold(a.Operator, f.Operator)) &&
		(f.Action == "" || strings.EqualFold(a.Action, f.Action)) &&
		(f.Outcome == "" || a.Outcome() == f.Outcome) &&
		(f.from.IsZero() || !a.At.Before(f.from)) &&
		(f.to.IsZero() || a.At.Before(f.to))
}

// Query is the filters as a query string (for links: pages, exports).
func (f auditFilter) Query() string {
	v := url.Values{}
	for k, s := range map[string]string{"operator": f.Operator, "action": f.Action, "outcome": f.Outcome, "from": f.From, "to": f.To} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v.Encode()
}

// scanAudit calls fn with the records matching f, newest first, from the one after `after`,
// reading at most budget records; fn returns false to stop. It returns the id of the last
// record read and whether the log was read to its end (or to the filter's first day).
func (s *Server) scanAudit(
	ctx context.Context,
	f auditFilter,
	after string,
	budget int,
	fn func(*Audit) bool,
) (last string, done bool, err error) {
	last = after
	for read := 0; read < budget; {
		var chunk []*Audit
		want := min(auditChunk, budget-read)
		err = s.Store.View(ctx, func(rd store.Reader) error {
			var err error
			chunk, err = records.List[Audit](
				ctx,
				rd,
				KindAudit,
				"",
				store.ListOptions{Limit: want, After: last, Desc: true},
			)
			return err
		})
		if errors.Is(err, store.ErrNotFound) {
			return last, true, nil
		}
		if err != nil {
			return last, false, err
		}
		for _, a := range chunk {
			read++
			last = a.ID
			if !f.from.IsZero() && a.At.Before(f.from) {
				return last, true, nil // newest first: everything further is older still
			}
			if f.match(a) && !fn(a) {
				return last, false, nil
			}
		}
		if len(chunk) < want {
			return last, true, nil
		}
	}
	return last, false, nil
}

func (s *Server) audit(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	f, err := parseAuditFilter(r.URL.Query())
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "Bad filter: "+err.Error()+".")
		return
	}
	var list []*Audit
	last, done, err := s.scanAudit(ctx, f, r.URL.Query().Get("after"), auditScanPage, func(a *Audit) bool {
		list = append(list, a)
		return len(list) <= pageSize
	})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	next, partial := "", false
	switch {
	case len(list) > pageSize:
		list, next = list[:pageSize], list[pageSize-1].ID
	case !done:
		next, partial = last, true // the page's reading budget ran out: continue from there
	}
	var ops []string
	_ = s.Store.View(ctx, func(rd store.Reader) error {
		os, err := records.List[Operator](ctx, rd, KindOperator, "", store.ListOptions{Limit: 200})
		for _, o := range os {
			ops = append(ops, o.Email)
		}
		return err
	})
	q := f.Query() // url.Values.Encode'd, so safe as a URL's query (template.URL below)
	amp := ""
	if q != "" {
		amp = q + "&"
	}
	s.render(
		w,
		r,
		http.StatusOK,
		"audit",
		map[string]any{"Title": "Audit log", "Audit": list, "Next": next, "Partial": partial, "Scanned": auditScanPage,
			"F": f, "Query": q, "QueryAmp": template.URL(amp), "Operators": ops, "Actions": auditActions},
	)
}

// auditExport serves /audit/export?format=csv|json with the log's filters, as a download.
func (s *Server) auditExport(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	f, err := parseAuditFilter(r.URL.Query())
	format := r.URL.Query().Get("format")
	if err == nil && format != "csv" && format != "json" {
		err = fmt.Errorf("format must be csv or json, not %q", format)
	}
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "Bad export: "+err.Error()+".")
		return
	}
	name := "latchkey-audit-" + s.Now().UTC().Format("20060102T150405Z") + "." + format
	h := w.Header()
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	var write func(*Audit) error
	var finish func() error
	switch format {
	case "csv":
		h.Set("Content-Type", "text/csv; charset=utf-8")
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"id", "at", "operator", "action", "outcome", "target", "detail"})
		write = func(a *Audit) error {
			return cw.Write(
				[]string{
					a.ID,
					a.At.UTC().Format(time.RFC3339Nano),
					cell(a.Operator),
					cell(a.Action),
					a.Outcome(),
					cell(a.Target),
					cell(a.Detail),
				},
			)
		}
		finish = func() error { cw.Flush(); return cw.Error() }
	default:
		h.Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("[\n"))
		first := true
		write = func(a *Audit) error {
			b, err := json.Marshal(struct {
				*Audit
				Outcome string `json:"outcome"`
			}{a, a.Outcome()})
			if err != nil {
				return err
			}
			if !first {
				_, _ = w.Write([]byte(",\n"))
			}
			first = false
			_, err = w.Write(b)
			return err
		}
		finish = func() error { _, err := w.Write([]byte("\n]\n")); return err }
	}
	var werr error
	if _, _, err := s.scanAudit(ctx, f, "", auditScanExport, func(a *Audit) bool {
		werr = write(a)
		return werr == nil
	}); err != nil || werr != nil {
		// The status is sent; a broken download is all that can be said (and the log).
		s.Log.Error("dashboard: exporting the audit log", "err", errors.Join(err, werr))
		return
	}
	_ = finish()
}

// cell keeps a spreadsheet from reading a CSV cell as a formula.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
