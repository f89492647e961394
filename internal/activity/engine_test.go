package activity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/policy"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlite"
	"github.com/latchkey/latchkey/internal/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the engine's output")

// fakeKind is the record kind the fake operations write: one record per run of a handler, so a
// test can count runs and see whether a run's writes lasted.
const fakeKind = "fake_run"

// fakeRegistry serves a few swagger paths with fake handlers:
//
//	create_user_tag          root only; userTagName "fail" fails, "keep" fails keeping its
//	                         write, anything else writes a record and answers its name
//	delete_user_tags         any user of the organization
//	update_user_tag          root only, with a Prepare whose value Execute answers
//	create_private_key_tag   root only, redacting its name (a "secret")
func fakeRegistry() *Registry {
	reg := NewRegistry()
	write := func(x *Exec, what string) error {
		return x.Tx.Put(
			x.Ctx,
			store.Record{
				Kind:      fakeKind,
				ID:        id.New(),
				OrgID:     x.OrgID,
				Data:      []byte(`"` + what + `"`),
				CreatedAt: x.Now,
				UpdatedAt: x.Now,
			},
		)
	}
	reg.Submit(
		Operation{
			Path:   "create_user_tag",
			Access: AccessRoot,
			Execute: On(func(x *Exec, in *wire.CreateUserTagIntent) (any, error) {
				switch in.UserTagName {
				case "fail":
					if err := write(x, in.UserTagName); err != nil {
						return nil, err
					}
					return nil, apierr.Invalid("userTagName", "the handler refuses %q", in.UserTagName)
				case "keep":
					if err := write(x, in.UserTagName); err != nil {
						return nil, err
					}
					return nil, FailKeepingWrites(
						apierr.Invalid("userTagName", "the handler refuses %q", in.UserTagName),
					)
				}
				if err := write(x, in.UserTagName); err != nil {
					return nil, err
				}
				x.AfterCommit(func(ctx context.Context) { afterCommitted(x.ActivityID) })
				return map[string]any{"userTagId": "tag-" + in.UserTagName, "userIds": in.UserIds}, nil
			}),
		},
	)
	reg.Submit(
		Operation{
			Path:   "delete_user_tags",
			Access: AccessAnyUser,
			Execute: On(func(x *Exec, in *wire.DeleteUserTagsIntent) (any, error) {
				return map[string]any{"userTagIds": in.UserTagIds, "userIds": []string{}}, write(x, "delete")
			}),
		},
	)
	reg.Submit(Operation{Path: "update_user_tag", Access: AccessRoot,
		Prepare: On(func(x *Exec, in *wire.UpdateUserTagIntent) (any, error) {
			if in.UserTagId == "unprepared" {
				return nil, apierr.Invalid("userTagId", "cannot prepare %q", in.UserTagId)
			}
			return "prepared-" + in.UserTagId, nil
		}),
		Execute: On(func(x *Exec, in *wire.UpdateUserTagIntent) (any, error) {
			return map[string]any{"userTagId": x.Prepared}, write(x, "update")
		})})
	reg.Submit(Operation{Path: "create_private_key_tag", Access: AccessRoot,
		Redact: Redactor(func(in *wire.CreatePrivateKeyTagIntent) any {
			c := *in
			c.PrivateKeyTagName = "<redacted>"
			return &c
		}),
		Execute: On(func(x *Exec, in *wire.CreatePrivateKeyTagIntent) (any, error) {
			// The handler sees the name as submitted, also when it runs on approval.
			return map[string]any{
					"privateKeyTagId": in.PrivateKeyTagName,
					"privateKeyIds":   []string{},
				}, write(
					x,
					in.PrivateKeyTagName,
				)
		})})
	return reg
}

var (
	afterMu  sync.Mutex
	afterRan = map[string]int{}
)

func afterCommitted(activityID string) {
	afterMu.Lock()
	defer afterMu.Unlock()
	afterRan[activityID]++
}

func afterRuns(activityID string) int {
	afterMu.Lock()
	defer afterMu.Unlock()
	return afterRan[activityID]
}

// harness is an engine over SQLite in a temp dir serving fakeRegistry, with a clock that moves
// only when a test submits (so that every body, and fingerprint, is distinct).
type harness struct {
	t   testing.TB
	st  store.Store
	eng *Engine

	mu        sync.Mutex
	now       time.Time
	notified  [][]byte // what OnActivity was handed
	recorded  []string // "type status decision" per Recorded call
	committed int
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "latchkey.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mk, err := custody.ParseMasterKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	kr, err := custody.OpenKeyring(ctx, st, mk)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, st: st, now: time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)}
	h.eng = NewEngine(
		&Services{Store: st, Keyring: kr, Now: h.clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			OnActivity: func(ctx context.Context, tx store.Tx, org *directory.Organization, now time.Time, data []byte) error {
				h.mu.Lock()
				defer h.mu.Unlock()
				h.notified = append(h.notified, bytes.Clone(data))
				return nil
			},
			Committed: func() {
				h.mu.Lock()
				defer h.mu.Unlock()
				h.committed++
			},
			Recorded: func(typ, status, decision string) {
				h.mu.Lock()
				defer h.mu.Unlock()
				h.recorded = append(h.recorded, strings.TrimSpace(typ+" "+status+" "+decision))
			},
		},
		fakeRegistry(),
	)
	return h
}

func (h *harness) clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

func (h *harness) tick() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = h.now.Add(time.Millisecond)
	return h.now
}

// org creates an organization of roots root users (the root quorum, of the given threshold)
// and one non-root member, and returns their callers, the member last.
func (h *harness) org(roots, threshold int) []*directory.Caller {
	h.t.Helper()
	ctx := context.Background()
	now := h.clock()
	env := directory.Env{Now: now, Limits: directory.DefaultLimits}
	o := &directory.Organization{
		ID:        id.New(),
		Name:      "Acme",
		Features:  []directory.Feature{},
		CreatedAt: now,
		UpdatedAt: now,
	}
	var users []*directory.User
	err := h.st.Update(ctx, func(tx store.Tx) error {
		users = nil
		for i := range roots + 1 {
			u, err := directory.CreateUser(
				ctx,
				tx,
				env,
				o.ID,
				directory.UserSpec{Name: fmt.Sprintf("user%d", i), Field: "user"},
			)
			if err != nil {
				return err
			}
			users = append(users, u)
		}
		o.RootQuorum = directory.Quorum{Threshold: threshold}
		for _, u := range users[:roots] {
			o.RootQuorum.UserIDs = append(o.RootQuorum.UserIDs, u.ID)
		}
		return directory.SaveOrganization(ctx, tx, o)
	})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []*directory.Caller
	for i, u := range users {
		out = append(
			out,
			&directory.Caller{
				User:           u,
				Org:            o,
				Target:         o,
				CredentialID:   fmt.Sprintf("credential-%d", i),
				CredentialType: directory.CredentialAPIKeyP256,
				PublicKey: fmt.Sprintf(
					"02%064x",
					i,
				),
				Scheme:    "SIGNATURE_SCHEME_TK_API_P256",
				Signature: fmt.Sprintf("30060201%02x020101", i),
			},
		)
	}
	return out
}

// body is a submit body for c's organization stamped now.
func (h *harness) body(c *directory.Caller, typ string, params any) []byte {
	h.t.Helper()
	p, err := json.Marshal(params)
	if err != nil {
		h.t.Fatal(err)
	}
	return fmt.Appendf(
		nil,
		`{"parameters":%s,"organizationId":%q,"timestampMs":"%d","type":%q}`,
		p,
		c.Target.ID,
		h.tick().UnixMilli(),
		typ,
	)
}

// send submits raw to path as c and returns the activity JSON.
func (h *harness) send(c *directory.Caller, path string, raw []byte) ([]byte, error) {
	h.t.Helper()
	env, err := ParseEnvelope(raw)
	if err != nil {
		return nil, err
	}
	return h.eng.Submit(context.Background(), SubmitRequest{Path: path, Raw: raw, Env: env, Caller: c})
}

func (h *harness) submit(c *directory.Caller, path, typ string, params any) ([]byte, error) {
	h.t.Helper()
	return h.send(c, path, h.body(c, typ, params))
}

// vote approves (or rejects) the activity whose JSON is act, as c.
func (h *harness) vote(c *directory.Caller, act []byte, approve bool) ([]byte, error) {
	h.t.Helper()
	path, typ := "approve_activity", "ACTIVITY_TYPE_APPROVE_ACTIVITY"
	if !approve {
		path, typ = "reject_activity", "ACTIVITY_TYPE_REJECT_ACTIVITY"
	}
	return h.submit(c, path, typ, map[string]string{"fingerprint": decode(h.t, act).Fingerprint})
}

func (h *harness) tag(c *directory.Caller, name string) ([]byte, error) {
	h.t.Helper()
	return h.submit(
		c,
		"create_user_tag",
		"ACTIVITY_TYPE_CREATE_USER_TAG",
		map[string]any{"userTagName": name, "userIds": []string{}},
	)
}

// stored is the newest stored activity of c's organization with fingerprint fp (a FAILED
// activity does not hold its fingerprint: the store finds it by listing only).
func (h *harness) stored(c *directory.Caller, fp string) store.Activity {
	h.t.Helper()
	var as []store.Activity
	err := h.st.View(context.Background(), func(r store.Reader) error {
		var err error
		as, err = r.ListActivities(context.Background(), c.Target.ID, store.ActivityFilter{})
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, a := range as {
		if a.Fingerprint == fp {
			return a
		}
	}
	h.t.Fatalf("no activity with fingerprint %s", fp)
	return store.Activity{}
}

// runs is the names the fake handlers' lasting writes carry, in organization c's.
func (h *harness) runs(c *directory.Caller) []string {
	h.t.Helper()
	var out []string
	err := h.st.View(context.Background(), func(r store.Reader) error {
		recs, err := r.List(context.Background(), fakeKind, c.Target.ID, store.ListOptions{})
		for _, rec := range recs {
			out = append(out, strings.Trim(string(rec.Data), `"`))
		}
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

func decode(t testing.TB, data []byte) Wire {
	t.Helper()
	var w Wire
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatalf("activity %s: %v", data, err)
	}
	return w
}

func wantStatus(t testing.TB, data []byte, status string) Wire {
	t.Helper()
	w := decode(t, data)
	if w.Status != status {
		t.Fatalf("status %s, want %s: %s", w.Status, status, data)
	}
	return w
}

func wantCode(t testing.TB, err error, code apierr.Code, contains string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v %q", code, contains)
	}
	ae := apierr.From(err)
	if ae.Code != code || !strings.Contains(ae.Message, contains) {
		t.Fatalf("error %v (%v), want %v containing %q", err, ae.Code, code, contains)
	}
}

func TestSubmitCompletes(t *testing.T) {
	h := newHarness(t)
	cs := h.org(1, 1)
	root := cs[0]
	data, err := h.tag(root, "a")
	if err != nil {
		t.Fatal(err)
	}
	w := wantStatus(t, data, StatusCompleted)
	if got := string(w.Result); got != `{"createUserTagResult":{"userIds":[],"userTagId":"tag-a"}}` {
		t.Errorf("result %s", got)
	}
	if len(w.Votes) != 1 || w.Votes[0].UserId != root.User.ID || w.Votes[0].Selection != "VOTE_SELECTION_APPROVED" ||
		w.CanApprove ||
		w.CanReject {
		t.Errorf("votes %+v canApprove %v canReject %v", w.Votes, w.CanApprove, w.CanReject)
	}
	if got := h.stored(root, w.Fingerprint); !bytes.Equal(got.Data, data) || got.Status != StatusCompleted ||
		got.Type != "ACTIVITY_TYPE_CREATE_USER_TAG" {
		t.Errorf("stored %s %s %s, answered %s", got.Status, got.Type, got.Data, data)
	}
	if got := h.runs(root); len(got) != 1 {
		t.Errorf("handler writes %v", got)
	}
	if n := afterRuns(w.ID); n != 1 {
		t.Errorf("AfterCommit ran %d times", n)
	}
	if len(h.notified) != 1 || !bytes.Equal(h.notified[0], data) || h.committed != 1 {
		t.Errorf("notified %q, committed %d", h.notified, h.committed)
	}
	if want := []string{"ACTIVITY_TYPE_CREATE_USER_TAG " + StatusCompleted}; fmt.Sprint(
		h.recorded,
	) != fmt.Sprint(
		want,
	) {
		t.Errorf("recorded %q, want %q", h.recorded, want)
	}

	// The same bytes again: the activity that holds them, the handler not run again.
	again, err := h.send(root, "create_user_tag", []byte(w.Votes[0].Message))
	if err != nil || !bytes.Equal(again, data) {
		t.Fatalf("resubmission: %v %s", err, again)
	}
	if got := h.runs(root); len(got) != 1 {
		t.Errorf("after the resubmission, handler writes %v", got)
	}
}

func TestSubmitRefusesBadRequests(t *testing.T) {
	h := newHarness(t)
	root := h.org(1, 1)[0]
	tag := map[string]any{"userTagName": "a", "userIds": []string{}}
	stale := fmt.Appendf(
		nil,
		`{"parameters":{"userTagName":"a","userIds":[]},"organizationId":%q,"timestampMs":"%d","type":"ACTIVITY_TYPE_CREATE_USER_TAG"}`,
		root.Target.ID,
		h.clock().Add(-2*time.Hour).UnixMilli(),
	)
	future := fmt.Appendf(
		nil,
		`{"parameters":{"userTagName":"a","userIds":[]},"organizationId":%q,"timestampMs":"%d","type":"ACTIVITY_TYPE_CREATE_USER_TAG"}`,
		root.Target.ID,
		h.clock().Add(time.Hour).UnixMilli(),
	)
	tests := []struct {
		name     string
		path     string
		raw      []byte
		code     apierr.Code
		contains string
	}{
		{
			"a type of another path",
			"create_user_tag",
			h.body(root, "ACTIVITY_TYPE_DELETE_USER_TAGS", tag),
			apierr.InvalidArgument,
			"type",
		},
		{"a stale timestamp", "create_user_tag", stale, apierr.InvalidArgument, "stale"},
		{"a timestamp from the future", "create_user_tag", future, apierr.InvalidArgument, "future"},
		{
			"parameters of the wrong shape",
			"create_user_tag",
			h.body(root, "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "a", "userIds": "u"}),
			apierr.InvalidArgument,
			"parameters.userIds",
		},
		{
			"a path not in the swagger",
			"create_nothing",
			h.body(root, "ACTIVITY_TYPE_CREATE_USER_TAG", tag),
			apierr.NotFound,
			"unknown operation",
		},
		{
			"a path the registry does not serve",
			"create_users",
			h.body(root, "ACTIVITY_TYPE_CREATE_USERS_V3", map[string]any{"users": []any{}}),
			apierr.Unimplemented,
			"create_users",
		},
		{
			"a vote without fingerprint",
			"approve_activity",
			h.body(root, "ACTIVITY_TYPE_APPROVE_ACTIVITY", map[string]any{}),
			apierr.InvalidArgument,
			"parameters.fingerprint",
		},
		{
			"a vote of the wrong type",
			"approve_activity",
			h.body(root, "ACTIVITY_TYPE_REJECT_ACTIVITY", map[string]any{"fingerprint": "sha256:00"}),
			apierr.InvalidArgument,
			"type",
		},
		{
			"a vote on an unknown fingerprint",
			"approve_activity",
			h.body(root, "ACTIVITY_TYPE_APPROVE_ACTIVITY", map[string]any{"fingerprint": "sha256:00"}),
			apierr.NotFound,
			"No activity found with fingerprint",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.send(root, tc.path, tc.raw)
			wantCode(t, err, tc.code, tc.contains)
		})
	}
	if got := h.runs(root); len(got) != 0 || len(h.recorded) != 0 {
		t.Errorf("refused requests ran handlers %v or recorded activities %v", got, h.recorded)
	}
}

// TestSubmitFailures: a refusal or a handler failure answers with its error and records a
// FAILED activity carrying it; the handler's writes are undone unless it kept them.
func TestSubmitFailures(t *testing.T) {
	tests := []struct {
		name     string
		member   bool // submit as the organization's non-root member
		path     string
		typ      string
		params   any
		code     apierr.Code
		contains string
		runs     int // the handler's writes that last
	}{
		{
			"a member submitting a root operation",
			true,
			"create_user_tag",
			"ACTIVITY_TYPE_CREATE_USER_TAG",
			map[string]any{"userTagName": "a", "userIds": []string{}},
			apierr.PermissionDenied,
			msgDeniedImplicit,
			0,
		},
		{
			"a handler failure",
			false,
			"create_user_tag",
			"ACTIVITY_TYPE_CREATE_USER_TAG",
			map[string]any{"userTagName": "fail", "userIds": []string{}},
			apierr.InvalidArgument,
			`refuses "fail"`,
			0,
		},
		{
			"a handler failure keeping its writes",
			false,
			"create_user_tag",
			"ACTIVITY_TYPE_CREATE_USER_TAG",
			map[string]any{"userTagName": "keep", "userIds": []string{}},
			apierr.InvalidArgument,
			`refuses "keep"`,
			1,
		},
		{
			"a Prepare failure",
			false,
			"update_user_tag",
			"ACTIVITY_TYPE_UPDATE_USER_TAG",
			map[string]any{"userTagId": "unprepared", "addUserIds": []string{}, "removeUserIds": []string{}},
			apierr.InvalidArgument,
			`cannot prepare "unprepared"`,
			0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			cs := h.org(1, 1)
			c := cs[0]
			if tc.member {
				c = cs[1]
			}
			raw := h.body(c, tc.typ, tc.params)
			_, err := h.send(c, tc.path, raw)
			wantCode(t, err, tc.code, tc.contains)
			a := h.stored(c, Fingerprint(raw))
			w := wantStatus(t, a.Data, StatusFailed)
			if a.Status != StatusFailed || w.Failure == nil || !strings.Contains(w.Failure.Message, tc.contains) ||
				string(w.Result) != "{}" {
				t.Errorf("stored %s: %s", a.Status, a.Data)
			}
			if got := h.runs(c); len(got) != tc.runs {
				t.Errorf("handler writes %v, want %d", got, tc.runs)
			}
			if len(h.notified) != 1 || !bytes.Equal(h.notified[0], a.Data) || len(h.recorded) != 1 ||
				!strings.Contains(h.recorded[0], StatusFailed) {
				t.Errorf("notified %q, recorded %q", h.notified, h.recorded)
			}
			// A failed activity does not hold its fingerprint: the same bytes run again.
			if _, err := h.send(c, tc.path, raw); err == nil {
				t.Error("the failed request's bytes succeeded when sent again")
			}
		})
	}
}

func TestSubmitPrepareAndAnyUser(t *testing.T) {
	h := newHarness(t)
	cs := h.org(1, 1)
	data, err := h.submit(
		cs[0],
		"update_user_tag",
		"ACTIVITY_TYPE_UPDATE_USER_TAG",
		map[string]any{"userTagId": "t1", "addUserIds": []string{}, "removeUserIds": []string{}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if w := wantStatus(t, data, StatusCompleted); string(
		w.Result,
	) != `{"updateUserTagResult":{"userTagId":"prepared-t1"}}` {
		t.Errorf("result %s", w.Result)
	}
	data, err = h.submit(
		cs[1],
		"delete_user_tags",
		"ACTIVITY_TYPE_DELETE_USER_TAGS",
		map[string]any{"userTagIds": []string{"t1"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, data, StatusCompleted)
}

// step is one request of a consensus scenario: who (an index into the organization's callers,
// the member last), what ("submit", "approve", "reject", "resubmit": the first submission's
// bytes again), and the status the answer must carry.
type step struct {
	who    int
	what   string
	status string
	votes  int // the votes the answer carries
}

func TestConsensus(t *testing.T) {
	tests := []struct {
		name      string
		roots     int
		threshold int
		tagName   string
		steps     []step
		runs      int // handler runs that last
	}{
		{"two of two", 2, 2, "a", []step{
			{0, "submit", StatusConsensusNeeded, 1},
			{1, "approve", StatusCompleted, 2},
		}, 1},
		{"the initiator approving again changes nothing", 2, 2, "a", []step{
			{0, "submit", StatusConsensusNeeded, 1},
			{0, "approve", StatusConsensusNeeded, 1},
			{1, "approve", StatusCompleted, 2},
		}, 1},
		{"three of three, a voter voting twice", 3, 3, "a", []step{
			{0, "submit", StatusConsensusNeeded, 1},
			{1, "approve", StatusConsensusNeeded, 2},
			{1, "approve", StatusConsensusNeeded, 2},
			{1, "reject", StatusConsensusNeeded, 2},
			{2, "approve", StatusCompleted, 3},
			{2, "approve", StatusCompleted, 3},
		}, 1},
		{"a non-root approval does not count towards the root quorum", 2, 2, "a", []step{
			{0, "submit", StatusConsensusNeeded, 1},
			{2, "approve", StatusConsensusNeeded, 2},
			{1, "approve", StatusCompleted, 3},
		}, 1},
		{"a rejection ends it", 3, 2, "a", []step{
			{0, "submit", StatusConsensusNeeded, 1},
			{1, "reject", StatusRejected, 2},
			{2, "approve", StatusRejected, 2},
			{2, "resubmit", StatusRejected, 2},
		}, 0},
		{"an identical submission by another root is an approval", 2, 2, "a", []step{
			{0, "submit", StatusConsensusNeeded, 1},
			{1, "resubmit", StatusCompleted, 2},
			{0, "resubmit", StatusCompleted, 2},
		}, 1},
		{"a handler failing on approval fails the activity", 2, 2, "fail", []step{
			{0, "submit", StatusConsensusNeeded, 1},
			{1, "approve", StatusFailed, 2},
		}, 0},
		{"one of two roots runs at once", 2, 1, "a", []step{
			{0, "submit", StatusCompleted, 1},
		}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			cs := h.org(tc.roots, tc.threshold)
			var first, data []byte
			for i, s := range tc.steps {
				var err error
				c := cs[s.who]
				switch s.what {
				case "submit":
					first = h.body(
						c,
						"ACTIVITY_TYPE_CREATE_USER_TAG",
						map[string]any{"userTagName": tc.tagName, "userIds": []string{}},
					)
					data, err = h.send(c, "create_user_tag", first)
				case "resubmit":
					data, err = h.send(c, "create_user_tag", first)
				case "approve", "reject":
					data, err = h.vote(c, data, s.what == "approve")
				}
				if err != nil {
					t.Fatalf("step %d (%d %s): %v", i, s.who, s.what, err)
				}
				w := wantStatus(t, data, s.status)
				if len(w.Votes) != s.votes {
					t.Fatalf("step %d: %d votes, want %d: %s", i, len(w.Votes), s.votes, data)
				}
				// What the store holds is what was answered, but for canApprove/canReject.
				stored := decode(t, h.stored(c, Fingerprint(first)).Data)
				stored.CanApprove, stored.CanReject = w.CanApprove, w.CanReject
				if b, _ := json.Marshal(&stored); !bytes.Equal(b, data) {
					t.Fatalf("step %d: answered\n%s\nstored\n%s", i, data, b)
				}
				voted := false
				for _, v := range w.Votes {
					voted = voted || v.UserId == c.User.ID
				}
				if can := s.status == StatusConsensusNeeded && !voted; w.CanApprove != can || w.CanReject != can {
					t.Fatalf("step %d: canApprove %v canReject %v, want %v", i, w.CanApprove, w.CanReject, can)
				}
			}
			if got := h.runs(cs[0]); len(got) != tc.runs {
				t.Errorf("handler writes %v, want %d", got, tc.runs)
			}
		})
	}
}

// TestConsensusRendersPerCaller: an activity waiting for approvals offers them to the users of
// its organization who have not voted.
func TestConsensusRendersPerCaller(t *testing.T) {
	h := newHarness(t)
	cs := h.org(2, 2)
	data, err := h.tag(cs[0], "a")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true, true} {
		w := decode(t, RenderFor(store.Activity{Status: StatusConsensusNeeded, Data: data}, cs[i]))
		if w.CanApprove != want || w.CanReject != want {
			t.Errorf("caller %d: canApprove %v canReject %v, want %v", i, w.CanApprove, w.CanReject, want)
		}
	}
	parent := *cs[1]
	parent.ParentAccess = true
	if w := decode(t, RenderFor(store.Activity{Status: StatusConsensusNeeded, Data: data}, &parent)); w.CanApprove {
		t.Error("a parent organization's user may approve")
	}
	_, err = h.vote(&parent, data, true)
	wantCode(t, err, apierr.PermissionDenied, "parent organization cannot vote")
	other := h.org(1, 1)[0]
	_, err = h.vote(other, data, true)
	if err == nil {
		t.Error("another organization's user voted")
	}
}

// TestConsensusRedacted: an operation that redacts its intent stores and echoes it redacted, and
// runs on approval with the intent as submitted.
func TestConsensusRedacted(t *testing.T) {
	h := newHarness(t)
	cs := h.org(2, 2)
	data, err := h.submit(
		cs[0],
		"create_private_key_tag",
		"ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG",
		map[string]any{"privateKeyTagName": "secret", "privateKeyIds": []string{}},
	)
	if err != nil {
		t.Fatal(err)
	}
	w := wantStatus(t, data, StatusConsensusNeeded)
	if bytes.Contains(data, []byte("secret")) || !bytes.Contains(w.Intent, []byte(`\u003credacted\u003e`)) {
		t.Fatalf("the secret is stored: %s", data)
	}
	data, err = h.vote(cs[1], data, true)
	if err != nil {
		t.Fatal(err)
	}
	w = wantStatus(t, data, StatusCompleted)
	if string(w.Result) != `{"createPrivateKeyTagResult":{"privateKeyIds":[],"privateKeyTagId":"secret"}}` {
		t.Errorf("result %s", w.Result)
	}
	if got := h.runs(cs[0]); fmt.Sprint(got) != "[secret]" {
		t.Errorf("handler writes %v", got)
	}
}

// TestConcurrentApprovalsRunOnce: approvals racing on one activity run it exactly once.
func TestConcurrentApprovalsRunOnce(t *testing.T) {
	h := newHarness(t)
	cs := h.org(4, 2)
	data, err := h.tag(cs[0], "a")
	if err != nil {
		t.Fatal(err)
	}
	bodies := make([][]byte, 3)
	for i := range bodies {
		bodies[i] = h.body(
			cs[i+1],
			"ACTIVITY_TYPE_APPROVE_ACTIVITY",
			map[string]string{"fingerprint": decode(t, data).Fingerprint},
		)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(bodies))
	for i := range bodies {
		wg.Go(func() {
			env, err := ParseEnvelope(bodies[i])
			if err == nil {
				_, err = h.eng.Submit(
					context.Background(),
					SubmitRequest{Path: "approve_activity", Raw: bodies[i], Env: env, Caller: cs[i+1]},
				)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := h.runs(cs[0]); len(got) != 1 {
		t.Errorf("handler writes %v, want 1", got)
	}
	wantStatus(t, h.stored(cs[0], decode(t, data).Fingerprint).Data, StatusCompleted)
}

var (
	uuidRE        = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	fingerprintRE = regexp.MustCompile(`sha256:[0-9a-f]{64}`)
)

// normalize names the random ids (and the fingerprints, which cover them) of an activity JSON by
// order of appearance, so that a run compares with a golden file.
func normalize(data []byte) []byte {
	seen := map[string]string{}
	name := func(prefix string) func([]byte) []byte {
		return func(b []byte) []byte {
			if n, ok := seen[string(b)]; ok {
				return []byte(n)
			}
			n := fmt.Sprintf("%s-%d", prefix, len(seen)+1)
			seen[string(b)] = n
			return []byte(n)
		}
	}
	data = uuidRE.ReplaceAllFunc(data, name("id"))
	return fingerprintRE.ReplaceAllFunc(data, name("fingerprint"))
}

// TestActivityJSONGolden holds the exact activity JSON the engine writes and answers for the
// statuses an activity can end in (go test -update rewrites the files).
func TestActivityJSONGolden(t *testing.T) {
	tests := []struct {
		name    string
		quorum1 bool                                            // one root suffices
		run     func(h *harness, cs []*directory.Caller) []byte // returns the stored activity
	}{
		{"completed", true, func(h *harness, cs []*directory.Caller) []byte {
			data, err := h.tag(cs[0], "a<b>&\u2028")
			if err != nil {
				h.t.Fatal(err)
			}
			return data
		}},
		{"denied", true, func(h *harness, cs []*directory.Caller) []byte {
			member := cs[len(cs)-1]
			raw := h.body(
				member,
				"ACTIVITY_TYPE_CREATE_USER_TAG",
				map[string]any{"userTagName": "a", "userIds": []string{}},
			)
			if _, err := h.send(member, "create_user_tag", raw); err == nil {
				h.t.Fatal("a member created a tag")
			}
			return h.stored(member, Fingerprint(raw)).Data
		}},
		{"handler_failed", true, func(h *harness, cs []*directory.Caller) []byte {
			raw := h.body(
				cs[0],
				"ACTIVITY_TYPE_CREATE_USER_TAG",
				map[string]any{"userTagName": "fail", "userIds": []string{}},
			)
			if _, err := h.send(cs[0], "create_user_tag", raw); err == nil {
				h.t.Fatal("the handler did not fail")
			}
			return h.stored(cs[0], Fingerprint(raw)).Data
		}},
		{"consensus_needed", false, func(h *harness, cs []*directory.Caller) []byte {
			data, err := h.submit(
				cs[0],
				"create_private_key_tag",
				"ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG",
				map[string]any{"privateKeyTagName": "secret", "privateKeyIds": []string{}},
			)
			if err != nil {
				h.t.Fatal(err)
			}
			return data
		}},
		{"approved", false, func(h *harness, cs []*directory.Caller) []byte {
			data, err := h.tag(cs[0], "a")
			if err == nil {
				data, err = h.vote(cs[1], data, true)
			}
			if err != nil {
				h.t.Fatal(err)
			}
			return data
		}},
		{"rejected", false, func(h *harness, cs []*directory.Caller) []byte {
			data, err := h.tag(cs[0], "a")
			if err == nil {
				data, err = h.vote(cs[1], data, false)
			}
			if err != nil {
				h.t.Fatal(err)
			}
			return data
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			cs := h.org(2, 2) // two roots, both needed; the member last
			if tc.quorum1 {
				cs = h.org(1, 1)
			}
			got := normalize(tc.run(h, cs))
			file := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(file, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, bytes.TrimSuffix(want, []byte("\n"))) {
				t.Errorf("activity JSON\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// BenchmarkSubmit is one submission that completes at once, through the engine alone: decode,
// decide, run the handler and write the activity in one SQLite transaction.
func BenchmarkSubmit(b *testing.B) {
	h := newHarness(b)
	root := h.org(1, 1)[0]
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := h.tag(root, strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// fakePolicies serves the same policies to every organization and keeps the evaluations the
// engine records.
type fakePolicies struct {
	mu       sync.Mutex
	policies []policy.Policy
	records  []string // "outcome vote" per recorded evaluation
}

func (f *fakePolicies) Policies(context.Context, store.Reader, string) ([]policy.Policy, error) {
	return f.policies, nil
}

func (f *fakePolicies) RecordEvaluation(
	_ context.Context,
	_ store.Tx,
	_, _, _ string,
	_ time.Time,
	final policy.Outcome,
	_ []policy.Evaluation,
) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.records = append(f.records, string(final))
	return nil
}

// TestPolicies: when the root quorum does not decide, policies do; their evaluations are
// recorded, with the FAILED activity when they deny.
func TestPolicies(t *testing.T) {
	mustPolicy := func(effect, condition, consensus string) policy.Policy {
		p, err := policy.NewPolicy(id.New(), effect, condition, consensus, "")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	needTwo := mustPolicy(
		policy.EffectAllow,
		"activity.type == 'ACTIVITY_TYPE_CREATE_USER_TAG'",
		"approvers.count() >= 2",
	)
	denyTags := mustPolicy(policy.EffectDeny, "activity.type == 'ACTIVITY_TYPE_CREATE_USER_TAG'", "")
	tests := []struct {
		name     string
		policies []policy.Policy
		steps    []step
		recorded string // what Recorded was told of the submission
		records  string // the final outcomes recorded, in order
	}{
		{"two approvers", []policy.Policy{needTwo}, []step{
			{2, "submit", StatusConsensusNeeded, 1},
			{0, "approve", StatusCompleted, 2},
		}, StatusConsensusNeeded + " consensus", "[OUTCOME_REQUIRES_CONSENSUS OUTCOME_ALLOW]"},
		{"an explicit deny wins over a root's approval", []policy.Policy{needTwo, denyTags}, []step{
			{0, "submit", StatusFailed, 1},
		}, StatusFailed + " deny", "[OUTCOME_DENY_EXPLICIT]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			ps := &fakePolicies{policies: tc.policies}
			h.eng.svc.Policies = ps
			cs := h.org(2, 2)
			var data []byte
			for i, s := range tc.steps {
				var err error
				c := cs[s.who]
				switch s.what {
				case "submit":
					raw := h.body(
						c,
						"ACTIVITY_TYPE_CREATE_USER_TAG",
						map[string]any{"userTagName": "a", "userIds": []string{}},
					)
					if data, err = h.send(c, "create_user_tag", raw); s.status == StatusFailed {
						wantCode(t, err, apierr.PermissionDenied, msgDeniedExplicit)
						data, err = h.stored(c, Fingerprint(raw)).Data, nil
					}
				case "approve":
					data, err = h.vote(c, data, true)
				}
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if w := wantStatus(t, data, s.status); len(w.Votes) != s.votes {
					t.Fatalf("step %d: %d votes, want %d", i, len(w.Votes), s.votes)
				}
			}
			if want := "ACTIVITY_TYPE_CREATE_USER_TAG " + tc.recorded; len(h.recorded) != 1 || h.recorded[0] != want {
				t.Errorf("recorded %q, want %q", h.recorded, want)
			}
			if got := fmt.Sprint(ps.records); got != tc.records {
				t.Errorf("evaluations %s, want %s", got, tc.records)
			}
		})
	}
}

// TestAuthenticatorsNeeded: an MFA policy makes the initiator prove a passkey after their API
// key; only they can approve, each approval proving the method it is stamped with.
func TestAuthenticatorsNeeded(t *testing.T) {
	h := newHarness(t)
	h.eng.svc.MFA = func(_ context.Context, _ store.Reader, _, _ string, _ policy.Env) (*MFARequirement, error) {
		return &MFARequirement{
			PolicyID: "mfa",
			Steps:    [][]AuthMethod{{{Type: MethodAPIKey}}, {{Type: MethodPasskey}}},
		}, nil
	}
	cs := h.org(2, 1)
	root := cs[0]
	data, err := h.tag(root, "a")
	if err != nil {
		t.Fatal(err)
	}
	w := wantStatus(t, data, StatusAuthenticatorsNeeded)
	for i, want := range []bool{true, false, false} {
		if r := decode(t, RenderFor(store.Activity{Status: StatusAuthenticatorsNeeded, Data: data}, cs[i])); r.CanApprove != want {
			t.Errorf("caller %d: canApprove %v, want %v", i, r.CanApprove, want)
		}
	}
	status := func() *MFAState {
		var st *MFAState
		err := h.st.View(context.Background(), func(r store.Reader) error {
			var err error
			st, err = MFAStatusOf(context.Background(), r, root.Target.ID, w.ID)
			return err
		})
		if err != nil || st == nil {
			t.Fatalf("MFA status %v %v", st, err)
		}
		return st
	}
	if st := status(); st.Satisfied || len(st.Done) != 1 || st.UserID != root.User.ID {
		t.Errorf("MFA status %+v", st)
	}
	_, err = h.vote(cs[1], data, true)
	wantCode(t, err, apierr.FailedPrecondition, "only the initiator")
	// The API key again proves nothing more.
	data, err = h.vote(root, data, true)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, data, StatusAuthenticatorsNeeded)
	passkey := *root
	passkey.CredentialType, passkey.CredentialID = directory.CredentialWebAuthn, "passkey"
	data, err = h.vote(&passkey, data, true)
	if err != nil {
		t.Fatal(err)
	}
	if w := wantStatus(t, data, StatusCompleted); len(w.Votes) != 3 {
		t.Errorf("%d votes: %s", len(w.Votes), data)
	}
	if got := h.runs(root); len(got) != 1 {
		t.Errorf("handler writes %v", got)
	}
}
