package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/store"
)

// maxFields bounds the rows an intent or result table shows (the raw JSON has the rest).
const maxFields = 200

// field is one leaf of a JSON document: its path (accounts[0].curve) and value.
type field struct{ Path, Value string }

// fields flattens a JSON document into its leaves, in document order for arrays and key order
// for objects. A document that is one object under one key (Turnkey's intents and results:
// {"createWalletIntent": {...}}) is unwrapped and the key returned as its name.
func fields(raw json.RawMessage) (name string, out []field, more bool) {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil || v == nil {
		return "", nil, false
	}
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for k, inner := range m {
			if _, ok := inner.(map[string]any); ok {
				name, v = k, inner
			}
		}
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		if len(out) >= maxFields {
			more = true
			return
		}
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if len(keys) == 0 {
				out = append(out, field{path, "{}"})
			}
			for _, k := range keys {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(p, x[k])
			}
		case []any:
			if len(x) == 0 {
				out = append(out, field{path, "[]"})
			}
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		case string:
			out = append(out, field{path, x})
		case nil:
			out = append(out, field{path, "null"})
		default:
			b, _ := json.Marshal(x)
			out = append(out, field{path, string(b)})
		}
	}
	walk("", v)
	return name, out, more
}

// vote is one row of an activity's votes table.
type vote struct {
	UserID, UserName, UserEmail, Selection, PublicKey, Scheme string
	At                                                        time.Time
}

func parseVotes(raw json.RawMessage) []vote {
	var ws []struct {
		UserID string `json:"userId"`
		User   struct {
			UserName  string `json:"userName"`
			UserEmail string `json:"userEmail"`
		} `json:"user"`
		Selection string `json:"selection"`
		PublicKey string `json:"publicKey"`
		Scheme    string `json:"scheme"`
		CreatedAt struct {
			Seconds string `json:"seconds"`
			Nanos   string `json:"nanos"`
		} `json:"createdAt"`
	}
	_ = json.Unmarshal(raw, &ws)
	var out []vote
	for _, w := range ws {
		v := vote{
			UserID:    w.UserID,
			UserName:  w.User.UserName,
			UserEmail: w.User.UserEmail,
			PublicKey: w.PublicKey,
			Scheme:    w.Scheme,
			Selection: strings.ToLower(strings.TrimPrefix(w.Selection, "VOTE_SELECTION_")),
		}
		if sec, err := strconv.ParseInt(w.CreatedAt.Seconds, 10, 64); err == nil {
			ns, _ := strconv.ParseInt(w.CreatedAt.Nanos, 10, 64)
			v.At = time.Unix(sec, ns).UTC()
		}
		out = append(out, v)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// failureMessage is the failure's message in an activity's JSON ("" without one).
func failureMessage(data []byte) string {
	var a struct {
		Failure *struct {
			Message string `json:"message"`
		} `json:"failure"`
	}
	if json.Unmarshal(data, &a) != nil || a.Failure == nil {
		return ""
	}
	return a.Failure.Message
}

type failedView struct {
	ID, Type, OrgID, OrgName, Message string
	CreatedAt                         time.Time
}

// failed serves /failed: the failed activities of every organization, newest first, a page at
// a time (?after=ID continues with older ones).
func (s *Server) failed(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	after := r.URL.Query().Get("after")
	if after != "" && !validID(after) {
		s.fail(w, r, http.StatusBadRequest, "after must be an activity id.")
		return
	}
	var list []failedView
	next := ""
	err := s.Store.View(ctx, func(rd store.Reader) error {
		f := store.ActivityFilter{Statuses: []string{store.ActivityStatusFailed}, Limit: pageSize + 1, After: after,
			MaxBytes: maxPageBytes}
		as, err := rd.ListActivities(ctx, "", f)
		if err != nil {
			return err
		}
		switch {
		case len(as) > pageSize:
			as, next = as[:pageSize], as[pageSize-1].ID
		case len(as) > 0:
			// The page may have ended on its bytes: is there an older failure?
			f.After, f.Limit = as[len(as)-1].ID, 1
			older, err := rd.ListActivityHeads(ctx, "", f)
			if err != nil {
				return err
			}
			if len(older) > 0 {
				next = f.After
			}
		}
		names := map[string]string{}
		for _, a := range as {
			name, ok := names[a.OrgID]
			if !ok {
				if o, err := directory.LoadOrganization(ctx, rd, a.OrgID); err == nil {
					name = o.Name
				}
				names[a.OrgID] = name
			}
			list = append(
				list,
				failedView{
					ID:        a.ID,
					Type:      a.Type,
					OrgID:     a.OrgID,
					OrgName:   name,
					Message:   failureMessage(a.Data),
					CreatedAt: a.CreatedAt,
				},
			)
		}
		return nil
	})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "failed", map[string]any{"Title": "Failed activities", "Failed": list, "Next": next})
}

// validID reports whether s looks like a Latchkey id (a UUID).
func validID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return false
		}
	}
	return true
}
