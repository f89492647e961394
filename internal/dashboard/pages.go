package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/authproxy"
	"github.com/latchkey/latchkey/internal/chain/address"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/notify"
	"github.com/latchkey/latchkey/internal/ops/otp"
	"github.com/latchkey/latchkey/internal/ops/policies"
	"github.com/latchkey/latchkey/internal/ops/wallets"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
)

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"short": func(s string) string {
		return strings.TrimPrefix(strings.TrimPrefix(s, "ACTIVITY_TYPE_"), "ACTIVITY_STATUS_")
	},
	"join":   strings.Join,
	"status": func(s string) string { return strings.ToLower(strings.TrimPrefix(s, "ACTIVITY_STATUS_")) },
}

// countKind is what the overview needs beyond the store interface (both stores have it).
type countKind interface {
	CountKind(ctx context.Context, kind string) (int, error)
}

// ---- view structs: only public fields ----

type orgView struct {
	ID, Name, ParentID string
	// SubOrgs is the number of sub-organizations, counted no further than maxCounted+1;
	// SubOrgsText shows it ("10000+" past maxCounted).
	SubOrgs     int
	SubOrgsText string
	CreatedAt   time.Time
}

// maxCounted bounds the sub-organizations a row of the organization tables counts: a count
// reads the index entries it counts, and a page shows up to 51 rows.
const maxCounted = 10000

type userView struct {
	ID, Name, Email, Phone string
	Root                   bool
	APIKeys                []keyView
	Authenticators         []authView
	CreatedAt              time.Time
}

type keyView struct {
	ID, Name, PublicKey, Type string
	Expires                   time.Time
}

type authView struct{ ID, Name, CredentialID, Attestation string }

type walletView struct {
	ID, Name  string
	Accounts  []accountView
	CreatedAt time.Time
}

type accountView struct{ Address, Path, Curve, Format string }

type pkView struct {
	ID, Name, Curve string
	Addresses       []string
}

type policyView struct{ ID, Name, Effect, Condition, Consensus string }

type tagView struct {
	ID, Name, Kind string
	Members        int
}

type activityView struct {
	ID, Type, Status string
	CreatedAt        time.Time
}

func toOrgView(ctx context.Context, r store.Reader, o *directory.Organization) orgView {
	n, _ := r.Count(ctx, directory.KindOrganization, o.ID, maxCounted+1)
	text := strconv.Itoa(n)
	if n > maxCounted {
		text = strconv.Itoa(maxCounted) + "+"
	}
	return orgView{ID: o.ID, Name: o.Name, ParentID: o.ParentID, SubOrgs: n, SubOrgsText: text, CreatedAt: o.CreatedAt}
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	counts := map[string]int{}
	if ck, ok := s.Store.(countKind); ok {
		for name, kind := range map[string]string{"Organizations": directory.KindOrganization, "Users": directory.KindUser,
			"Wallets": wallets.KindWallet, "PrivateKeys": wallets.KindPrivateKey} {
			n, err := ck.CountKind(ctx, kind)
			if err != nil {
				s.failErr(w, r, err)
				return
			}
			counts[name] = n
		}
	}
	hour := s.Now().Add(-time.Hour)
	err := s.Store.View(ctx, func(rd store.Reader) error {
		var err error
		if counts["LastHour"], err = rd.CountActivities(ctx, "", store.ActivityFilter{Since: hour}); err != nil {
			return err
		}
		counts["FailedLastHour"], err = rd.CountActivities(
			ctx,
			"",
			store.ActivityFilter{Since: hour, Statuses: []string{store.ActivityStatusFailed}},
		)
		return err
	})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	// The last hour at a glance: activities by status and API latency (the same charts as
	// /charts, the same bounded query).
	rg := chartRanges[0]
	end := s.Now().UTC().Truncate(rg.Step).Add(rg.Step)
	from := end.Add(-time.Duration(rg.N) * rg.Step)
	var acts []store.ActivityHead
	if err := s.Store.View(ctx, func(rd store.Reader) error {
		var err error
		acts, err = rd.ListActivityHeads(ctx, "", store.ActivityFilter{Since: from, Limit: maxChartActivities})
		return err
	}); err != nil {
		s.failErr(w, r, err)
		return
	}
	glance := []chart{activityCharts(acts, from, rg)[0], requestCharts(&s.Requests, from, rg)[2]}
	s.render(w, r, http.StatusOK, "overview", map[string]any{"Title": "Overview", "Counts": counts, "Charts": glance})
}

// orgs lists top-level organizations, or those matching a search by id, name, user e-mail or
// wallet address.
func (s *Server) orgs(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	after, parent := r.URL.Query().Get("after"), r.URL.Query().Get("parent")
	var list []orgView
	var next string
	err := s.Store.View(ctx, func(rd store.Reader) error {
		if q != "" {
			ids, err := s.search(ctx, rd, q)
			if err != nil {
				return err
			}
			for _, id := range ids {
				if o, err := directory.LoadOrganization(ctx, rd, id); err == nil {
					list = append(list, toOrgView(ctx, rd, o))
				}
			}
			return nil
		}
		opts := store.ListOptions{Limit: pageSize + 1, After: after, MaxBytes: maxPageBytes}
		os, err := directory.ListSubOrganizations(ctx, rd, parent, opts)
		if err != nil {
			return err
		}
		switch {
		case len(os) > pageSize:
			os, next = os[:pageSize], os[pageSize-1].ID
		case len(os) > 0:
			// The page may have ended on its bytes: is there another organization?
			opts.After, opts.Limit, opts.MaxBytes = os[len(os)-1].ID, 1, 1
			if others, err := rd.List(ctx, directory.KindOrganization, parent, opts); err != nil {
				return err
			} else if len(others) > 0 {
				next = opts.After
			}
		}
		for _, o := range os {
			list = append(list, toOrgView(ctx, rd, o))
		}
		return nil
	})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.render(
		w,
		r,
		http.StatusOK,
		"orgs",
		map[string]any{"Title": "Organizations", "Orgs": list, "Query": q, "Next": next, "Parent": parent},
	)
}

// search finds organizations by id, name, a user's e-mail or a wallet account address.
func (s *Server) search(ctx context.Context, r store.Reader, q string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	if _, err := directory.LoadOrganization(ctx, r, q); err == nil {
		add(q)
	}
	for _, k := range []struct{ key, value, kind string }{
		{directory.KeyOrgName, strings.ToLower(q), directory.KindOrganization},
		{directory.KeyUserEmail, strings.ToLower(q), directory.KindUser},
		{directory.KeyUserEmailUnproven, strings.ToLower(q), directory.KindUser},
		{wallets.KeyAccountAddress, address.Normalize(q), wallets.KindAccount},
	} {
		refs, err := r.Lookup(ctx, k.key, k.value)
		if err != nil {
			return nil, apierr.Internalf(err, "searching")
		}
		for _, ref := range refs {
			if ref.Kind != k.kind {
				continue
			}
			if k.kind == directory.KindOrganization {
				add(ref.ID) // an organization record is owned by its parent
			} else {
				add(ref.OrgID)
			}
		}
	}
	if len(out) > pageSize {
		out = out[:pageSize]
	}
	return out, nil
}

func (s *Server) org(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	data := map[string]any{}
	err := s.Store.View(ctx, func(rd store.Reader) error {
		o, err := directory.LoadOrganization(ctx, rd, id)
		if err != nil {
			return err
		}
		data["Org"] = toOrgView(ctx, rd, o)
		data["Title"] = o.Name
		users, err := records.List[directory.User](ctx, rd, directory.KindUser, id, table(pageSize))
		if err != nil {
			return err
		}
		if data["UsersMore"], err = more(ctx, rd, directory.KindUser, id, len(users)); err != nil {
			return err
		}
		var uv []userView
		for _, u := range users {
			v := userView{
				ID:        u.ID,
				Name:      u.Name,
				Email:     u.Email,
				Phone:     u.PhoneNumber,
				Root:      o.IsRoot(u.ID),
				CreatedAt: u.CreatedAt,
			}
			ks, err := directory.UserAPIKeys(ctx, rd, u.ID)
			if err != nil {
				return err
			}
			for _, k := range ks {
				v.APIKeys = append(
					v.APIKeys,
					keyView{
						ID:        k.ID,
						Name:      k.Name,
						PublicKey: k.PublicKey,
						Type:      k.CredentialType,
						Expires:   k.ExpiresAt,
					},
				)
			}
			as, err := directory.UserAuthenticators(ctx, rd, u.ID)
			if err != nil {
				return err
			}
			for _, a := range as {
				v.Authenticators = append(
					v.Authenticators,
					authView{ID: a.ID, Name: a.Name, CredentialID: a.CredentialID, Attestation: a.AttestationType},
				)
			}
			uv = append(uv, v)
		}
		data["Users"] = uv
		ws, err := records.List[wallets.Wallet](ctx, rd, wallets.KindWallet, id, table(pageSize))
		if err != nil {
			return err
		}
		accts, err := records.List[wallets.Account](ctx, rd, wallets.KindAccount, id, table(10*pageSize))
		if err != nil {
			return err
		}
		byWallet := map[string][]accountView{}
		for _, a := range accts {
			byWallet[a.WalletID] = append(
				byWallet[a.WalletID],
				accountView{Address: a.Address, Path: a.Path, Curve: a.Curve, Format: a.AddressFormat},
			)
		}
		var wv []walletView
		for _, wl := range ws {
			wv = append(wv, walletView{ID: wl.ID, Name: wl.Name, Accounts: byWallet[wl.ID], CreatedAt: wl.CreatedAt})
		}
		data["Wallets"] = wv
		pks, err := records.List[wallets.PrivateKey](ctx, rd, wallets.KindPrivateKey, id, table(pageSize))
		if err != nil {
			return err
		}
		var pv []pkView
		for _, k := range pks {
			v := pkView{ID: k.ID, Name: k.Name, Curve: k.Curve}
			for _, a := range k.Addresses {
				v.Addresses = append(v.Addresses, a.Address)
			}
			pv = append(pv, v)
		}
		data["PrivateKeys"] = pv
		ps, err := records.List[policies.Policy](ctx, rd, policies.KindPolicy, id, table(pageSize))
		if err != nil {
			return err
		}
		if data["PoliciesMore"], err = more(ctx, rd, policies.KindPolicy, id, len(ps)); err != nil {
			return err
		}
		var polv []policyView
		for _, p := range ps {
			polv = append(
				polv,
				policyView{ID: p.ID, Name: p.Name, Effect: p.Effect, Condition: p.Condition, Consensus: p.Consensus},
			)
		}
		data["Policies"] = polv
		var tags []tagView
		uts, err := records.List[directory.UserTag](ctx, rd, directory.KindUserTag, id, table(pageSize))
		if err != nil {
			return err
		}
		for _, t := range uts {
			tags = append(tags, tagView{ID: t.ID, Name: t.Name, Kind: "user", Members: len(t.UserIDs)})
		}
		pts, err := records.List[wallets.PrivateKeyTag](ctx, rd, wallets.KindPrivateKeyTag, id, table(pageSize))
		if err != nil {
			return err
		}
		for _, t := range pts {
			tags = append(tags, tagView{ID: t.ID, Name: t.Name, Kind: "private key", Members: len(t.KeyIDs)})
		}
		data["Tags"] = tags
		subs, err := directory.ListSubOrganizations(ctx, rd, id, store.ListOptions{Limit: pageSize})
		if err != nil {
			return err
		}
		var sv []orgView
		for _, so := range subs {
			sv = append(sv, toOrgView(ctx, rd, so))
		}
		data["SubOrgs"] = sv
		return nil
	})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	if c, err := s.Proxy.Get(ctx, id); err == nil {
		data["ProxyEnabled"], data["ProxyConfigID"] = c.Settings.Enabled, c.ID
	}
	s.render(w, r, http.StatusOK, "org", data)
}

// table is the page of one table of an organization's page: its first limit records, within
// maxTableBytes.
func table(limit int) store.ListOptions {
	return store.ListOptions{Limit: limit, MaxBytes: maxTableBytes}
}

// more reports whether orgID holds more than shown records of kind (a table ended on its
// count or its bytes); it counts no further than it needs to.
func more(ctx context.Context, rd store.Reader, kind, orgID string, shown int) (bool, error) {
	n, err := rd.Count(ctx, kind, orgID, shown+1)
	if err != nil {
		return false, apierr.Internalf(err, "counting %s", kind)
	}
	return n > shown, nil
}

func (s *Server) activities(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	status, typ, before := r.URL.Query().Get("status"), r.URL.Query().Get("type"), r.URL.Query().Get("before")
	f := store.ActivityFilter{Limit: pageSize + 1, Before: before}
	if status != "" {
		if !slices.Contains(activityStatuses, status) {
			s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Unknown status %q.", status))
			return
		}
		f.Statuses = []string{status}
	}
	if typ != "" {
		full, ok := fullType(typ)
		if !ok {
			s.fail(
				w,
				r,
				http.StatusBadRequest,
				fmt.Sprintf("%q is not an activity type: give CREATE_WALLET or ACTIVITY_TYPE_CREATE_WALLET.", typ),
			)
			return
		}
		f.Types = []string{full}
	}
	if before != "" && !validID(before) {
		s.fail(w, r, http.StatusBadRequest, "before must be an activity id.")
		return
	}
	var list []activityView
	var next, name string
	err := s.Store.View(ctx, func(rd store.Reader) error {
		o, err := directory.LoadOrganization(ctx, rd, id)
		if err != nil {
			return err
		}
		name = o.Name
		as, err := rd.ListActivityHeads(ctx, id, f)
		if err != nil {
			return err
		}
		if len(as) > pageSize {
			as, next = as[:pageSize], as[pageSize-1].ID
		}
		for _, a := range as {
			list = append(list, activityView{ID: a.ID, Type: a.Type, Status: a.Status, CreatedAt: a.CreatedAt})
		}
		return nil
	})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.render(
		w,
		r,
		http.StatusOK,
		"activities",
		map[string]any{"Title": "Activities of " + name, "OrgID": id, "OrgName": name,
			"Activities": list, "Status": status, "Type": typ, "Next": next,
			"Statuses": activityStatuses},
	)
}

var activityStatuses = []string{
	"ACTIVITY_STATUS_COMPLETED",
	"ACTIVITY_STATUS_FAILED",
	"ACTIVITY_STATUS_CONSENSUS_NEEDED",
	"ACTIVITY_STATUS_REJECTED",
	"ACTIVITY_STATUS_AUTHENTICATORS_NEEDED",
}

// fullType reads an activity type filter as the table shows it (CREATE_WALLET, any letter case)
// or in full (ACTIVITY_TYPE_CREATE_WALLET).
func fullType(t string) (string, bool) {
	t = strings.ToUpper(strings.TrimSpace(t))
	if len(t) > 100 || t == "" {
		return "", false
	}
	for _, c := range t {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return "", false
		}
	}
	if !strings.HasPrefix(t, "ACTIVITY_TYPE_") {
		t = "ACTIVITY_TYPE_" + t
	}
	return t, true
}

func pretty(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

func (s *Server) activity(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var a store.Activity
	var evals []*policies.Evaluation
	err := s.Store.View(ctx, func(rd store.Reader) error {
		var err error
		if a, err = rd.GetActivity(ctx, r.PathValue("id")); err != nil {
			return err
		}
		evals, err = policies.ActivityEvaluations(ctx, rd, a.OrgID, a.ID)
		return err
	})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	var parts struct {
		Intent  json.RawMessage `json:"intent"`
		Result  json.RawMessage `json:"result"`
		Votes   json.RawMessage `json:"votes"`
		Failure json.RawMessage `json:"failure"`
	}
	_ = json.Unmarshal(a.Data, &parts)
	var ev []string
	for _, e := range evals {
		b, _ := json.Marshal(e.ToWire())
		ev = append(ev, pretty(b))
	}
	data := map[string]any{
		"Title":          "Activity " + a.ID,
		"A":              activityView{ID: a.ID, Type: a.Type, Status: a.Status, CreatedAt: a.CreatedAt},
		"OrgID":          a.OrgID,
		"Intent":         pretty(parts.Intent),
		"Result":         pretty(parts.Result),
		"VotesJSON":      pretty(parts.Votes),
		"Failure":        pretty(parts.Failure),
		"FailureMessage": failureMessage(a.Data),
		"Evaluations":    ev,
	}
	data["IntentName"], data["IntentFields"], data["IntentMore"] = fields(parts.Intent)
	data["ResultName"], data["ResultFields"], data["ResultMore"] = fields(parts.Result)
	votes := parseVotes(parts.Votes)
	data["Votes"] = votes
	if len(votes) > 0 {
		// The submitter's own approval is the activity's first vote.
		data["Initiator"] = votes[0]
	}
	s.render(w, r, http.StatusOK, "activity", data)
}

// ---- the auth proxy settings ----

func (s *Server) proxyData(ctx context.Context, orgID string) (map[string]any, error) {
	var o *directory.Organization
	if err := s.Store.View(ctx, func(rd store.Reader) error {
		var err error
		o, err = directory.LoadOrganization(ctx, rd, orgID)
		return err
	}); err != nil {
		return nil, err
	}
	data := map[string]any{
		"Title":     "Auth proxy of " + o.Name,
		"OrgID":     o.ID,
		"OrgName":   o.Name,
		"Providers": authproxy.Providers,
		"TopLevel":  o.ParentID == "",
	}
	settings := authproxy.DefaultSettings()
	settings.Enabled = false
	c, err := s.Proxy.Get(ctx, orgID)
	switch {
	case err == nil:
		settings, data["ConfigID"] = c.Settings, c.ID
	case apierr.From(err).Code != apierr.NotFound:
		return nil, err
	}
	data["S"] = settings
	data["Origins"] = strings.Join(settings.AllowedOrigins, "\n")
	var ids []string
	for p, id := range settings.OAuthClientIDs {
		ids = append(ids, p+"="+id)
	}
	data["ClientIDs"] = strings.Join(ids, "\n")
	data["Enabled"] = map[string]bool{}
	for _, p := range settings.EnabledProviders {
		data["Enabled"].(map[string]bool)[p] = true
	}
	data["EmailPreview"], data["SMSPreview"] = previews(settings, o.Name)
	return data, nil
}

// previews renders the one-time-code messages as the proxy would send them: like the proxy
// (authproxy's otpInit), an empty app name is the organization's name.
func previews(st authproxy.Settings, orgName string) (string, string) {
	app := st.Email.AppName
	if app == "" {
		app = orgName
	}
	code := strings.Repeat("7", st.OTPLength)
	values, _ := notify.ParseTemplateVariables(st.Email.TemplateVariables)
	email := ""
	if m, err := notify.RenderOTPEmail(notify.OTPEmail{To: "user@example.com", AppName: app, LogoURL: st.Email.LogoURL, Code: code,
		ExpiryMinutes: int((otp.DefaultCodeSeconds + 59) / 60), SenderName: st.Email.SenderName, ReplyTo: st.Email.ReplyTo, TemplateValues: values}); err == nil {
		email = "Subject: " + m.Subject + "\n\n" + m.Text
	} else {
		email = "(the e-mail cannot be rendered: " + err.Error() + ")"
	}
	smsApp := st.SMS.AppName
	if smsApp == "" {
		smsApp = app
	}
	sms := ""
	if m, err := notify.RenderOTPSMSTemplate(st.SMS.Template, smsApp, code); err == nil {
		sms = m.Body
	} else {
		sms = "(the text cannot be rendered: " + err.Error() + ")"
	}
	return email, sms
}

func (s *Server) proxyPage(w http.ResponseWriter, r *http.Request) {
	data, err := s.proxyData(r.Context(), r.PathValue("id"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	if r.URL.Query().Get("saved") == "1" {
		data["Notice"] = "Saved. The running proxy uses the new settings now."
	}
	s.render(w, r, http.StatusOK, "proxy", data)
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' || r == ',' }) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func (s *Server) proxySave(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	orgID := r.PathValue("id")
	f := r.PostForm
	var st authproxy.Settings
	if c, err := s.Proxy.Get(ctx, orgID); err == nil {
		st = c.Settings
	} else {
		st = authproxy.DefaultSettings()
	}
	action := f.Get("action")
	st.Enabled = f.Get("enabled") == "on"
	st.AllowedOrigins = lines(f.Get("allowedOrigins"))
	var err error
	if st.SessionExpirationSeconds, err = strconv.ParseInt(strings.TrimSpace(f.Get("sessionExpirationSeconds")), 10, 64); err != nil {
		st.SessionExpirationSeconds = -1 // Normalize names the field
	}
	if st.OTPLength, err = strconv.Atoi(strings.TrimSpace(f.Get("otpLength"))); err != nil {
		st.OTPLength = -1
	}
	st.OTPAlphanumeric = f.Get("otpAlphanumeric") == "on"
	st.EnabledProviders = f["providers"]
	st.Email = authproxy.EmailCustomization{
		AppName:           f.Get("emailAppName"),
		LogoURL:           f.Get("emailLogoUrl"),
		SenderName:        f.Get("emailSenderName"),
		ReplyTo:           f.Get("emailReplyTo"),
		TemplateVariables: f.Get("emailTemplateVariables"),
	}
	st.SMS = authproxy.SMSCustomization{AppName: f.Get("smsAppName"), Template: f.Get("smsTemplate")}
	st.OAuthClientIDs = map[string]string{}
	for _, l := range lines(f.Get("oauthClientIds")) {
		p, id, _ := strings.Cut(l, "=")
		st.OAuthClientIDs[strings.TrimSpace(p)] = strings.TrimSpace(id)
	}
	st.OAuthRedirectURL = strings.TrimSpace(f.Get("oauthRedirectUrl"))
	norm, err := st.Normalize()
	if err == nil {
		switch {
		case action == "disable":
			_, err = s.Proxy.Disable(ctx, orgID)
		case norm.Enabled:
			if _, gerr := s.Proxy.Get(ctx, orgID); gerr != nil {
				_, err = s.Proxy.Enable(ctx, orgID, norm)
			} else {
				_, err = s.Proxy.Update(ctx, orgID, norm)
			}
		default:
			if _, gerr := s.Proxy.Get(ctx, orgID); gerr == nil {
				if _, err = s.Proxy.Update(ctx, orgID, norm); err == nil {
					_, err = s.Proxy.Disable(ctx, orgID)
				}
			}
		}
	}
	if err != nil {
		data, derr := s.proxyData(ctx, orgID)
		if derr != nil {
			s.failErr(w, r, derr)
			return
		}
		data["Error"] = apierr.From(err).Message
		s.render(w, r, http.StatusBadRequest, "proxy", data)
		return
	}
	detail, _ := json.Marshal(norm)
	if aerr := writeAudit(ctx, s.Store, Audit{Operator: current(r).operator, Action: "auth proxy settings", Target: orgID, Detail: string(detail), At: s.Now()}); aerr != nil {
		s.failErr(w, r, aerr)
		return
	}
	http.Redirect(w, r, "/orgs/"+orgID+"/proxy?saved=1", http.StatusSeeOther)
}

// ---- server pages ----

type keyRow struct{ Name, Label, Value string }

func (s *Server) keys(w http.ResponseWriter, r *http.Request) {
	var m map[string]json.RawMessage
	if s.Keys != nil {
		b, _ := json.Marshal(s.Keys())
		_ = json.Unmarshal(b, &m)
	}
	rows := make([]keyRow, 0, len(m))
	var rotations []custody.Rotation
	for k, raw := range m {
		var v string
		switch {
		case k == "rotations":
			_ = json.Unmarshal(raw, &rotations)
		case json.Unmarshal(raw, &v) == nil:
			rows = append(rows, keyRow{Name: k, Label: label(k), Value: v})
		}
	}
	slices.SortFunc(rows, func(a, b keyRow) int { return strings.Compare(a.Label, b.Label) })
	data := map[string]any{"Title": "Server keys", "Keys": rows, "Rotations": rotations}
	if s.Keyring != nil {
		// A scan of every record: this page is opened by an operator, not polled.
		st, err := s.Keyring(r.Context())
		if err != nil {
			s.Log.Error("dashboard: keys: the keyring status", "err", err)
			data["KeyringError"] = "The keyring's status could not be read (see the server log)."
		} else {
			data["Keyring"] = st
		}
	}
	s.render(w, r, http.StatusOK, "keys", data)
}

var acronyms = map[string]string{
	"otp":  "OTP",
	"api":  "API",
	"tls":  "TLS",
	"jwks": "JWKS",
	"jwt":  "JWT",
	"url":  "URL",
	"id":   "id",
}

// label makes a JSON field name readable: otpPublicKey is "OTP public key".
func label(name string) string {
	var words []string
	rs := []rune(name)
	start := 0
	for i := 1; i <= len(rs); i++ {
		boundary := i == len(rs) ||
			(unicode.IsUpper(rs[i]) && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1]))))
		if boundary {
			words = append(words, string(rs[start:i]))
			start = i
		}
	}
	for i, w := range words {
		switch {
		case acronyms[strings.ToLower(w)] != "":
			words[i] = acronyms[strings.ToLower(w)]
		case len(w) > 1 && strings.ToUpper(w) == w:
			// an acronym already
		case i == 0:
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		default:
			words[i] = strings.ToLower(w)
		}
	}
	return strings.Join(words, " ")
}
