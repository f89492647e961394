package sqlcore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/store"
)

// fakeConn answers every query with rows (each a list of column values) or err, and keeps the
// queries it was asked.
type fakeConn struct {
	rows    [][]any
	err     error
	queries []string
}

func (c *fakeConn) Query(_ context.Context, query string, _ []any, row func(scan func(dest ...any) error) error) error {
	c.queries = append(c.queries, query)
	if c.err != nil {
		return c.err
	}
	for _, r := range c.rows {
		err := row(func(dest ...any) error {
			for i, d := range dest {
				switch d := d.(type) {
				case *string:
					*d = r[i].(string)
				case *int:
					*d = r[i].(int)
				case *int64:
					*d = r[i].(int64)
				case *[]byte:
					*d = r[i].([]byte)
				case **string:
					if r[i] != nil {
						s := r[i].(string)
						*d = &s
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func TestReader(t *testing.T) {
	ctx := context.Background()
	broken := errors.New("connection reset")
	for _, tc := range []struct {
		name string
		conn *fakeConn
		read func(*Reader) error
		want string // in the error; "" for none
		is   error
	}{
		{"get", &fakeConn{rows: [][]any{{"user", "u1", "o1", []byte("{}"), int64(1), int64(2)}}}, func(r *Reader) error {
			rec, err := r.Get(ctx, "user", "u1")
			if err == nil && (rec.ID != "u1" || rec.OrgID != "o1" || rec.UpdatedAt.UnixNano() != 2) {
				return errors.New("wrong record")
			}
			return err
		}, "", nil},
		{"get none", &fakeConn{}, func(r *Reader) error { _, err := r.Get(ctx, "user", "u1"); return err }, "record user/u1", store.ErrNotFound},
		{"get broken", &fakeConn{err: broken}, func(r *Reader) error { _, err := r.Get(ctx, "user", "u1"); return err }, "fake: get record user/u1", broken},
		{"activity none", &fakeConn{}, func(r *Reader) error { _, err := r.GetActivity(ctx, "a1"); return err }, "activity a1", store.ErrNotFound},
		{"no fingerprint", &fakeConn{}, func(r *Reader) error { _, err := r.GetActivityByFingerprint(ctx, ""); return err }, "empty fingerprint", store.ErrNotFound},
		{"activity without fingerprint", &fakeConn{rows: [][]any{{"a1", "o1", nil, "S", "T", int64(1), int64(1), []byte("{}")}}}, func(r *Reader) error {
			a, err := r.GetActivity(ctx, "a1")
			if err == nil && (a.ID != "a1" || a.Fingerprint != "") {
				return errors.New("wrong activity")
			}
			return err
		}, "", nil},
		{"count", &fakeConn{rows: [][]any{{7}}}, func(r *Reader) error {
			n, err := r.Count(ctx, "user", "o1", 0)
			if err == nil && n != 7 {
				return errors.New("wrong count")
			}
			return err
		}, "", nil},
		{"lookup broken", &fakeConn{err: broken}, func(r *Reader) error { _, err := r.Lookup(ctx, "user.email", "x"); return err }, "fake: lookup user.email", broken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reader{
				Conn:      tc.conn,
				Driver:    "fake",
				Ph:        Question,
				Queries:   Queries(Question),
				GetSuffix: " FOR UPDATE",
				NoLimit:   -1,
			}
			err := tc.read(r)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.is)):
				t.Fatalf("err = %v, want %q wrapping %v", err, tc.want, tc.is)
			}
			if strings.HasPrefix(tc.name, "get") &&
				(len(tc.conn.queries) != 1 || !strings.HasSuffix(tc.conn.queries[0], " FOR UPDATE")) {
				t.Fatalf("queries %q: want the Get query with its suffix", tc.conn.queries)
			}
		})
	}
}

// Live reads only while its Check passes.
func TestLiveChecksFirst(t *testing.T) {
	ctx := context.Background()
	conn := &fakeConn{}
	done := errors.New("transaction done")
	l := Live{
		R:     &Reader{Conn: conn, Driver: "fake", Ph: Question, Queries: Queries(Question)},
		Check: func(context.Context) error { return done },
	}
	reads := map[string]func() error{
		"Get":                      func() error { _, err := l.Get(ctx, "k", "i"); return err },
		"List":                     func() error { _, err := l.List(ctx, "k", "o", store.ListOptions{}); return err },
		"Count":                    func() error { _, err := l.Count(ctx, "k", "o", 0); return err },
		"Lookup":                   func() error { _, err := l.Lookup(ctx, "n", "v"); return err },
		"GetActivity":              func() error { _, err := l.GetActivity(ctx, "a"); return err },
		"GetActivityByFingerprint": func() error { _, err := l.GetActivityByFingerprint(ctx, "f"); return err },
		"ListActivities":           func() error { _, err := l.ListActivities(ctx, "o", store.ActivityFilter{}); return err },
		"CountActivities":          func() error { _, err := l.CountActivities(ctx, "o", store.ActivityFilter{}); return err },
	}
	for name, read := range reads {
		if err := read(); !errors.Is(err, done) {
			t.Errorf("%s: err = %v, want the Check's", name, err)
		}
	}
	if len(conn.queries) != 0 {
		t.Errorf("queries ran after a failed Check: %q", conn.queries)
	}
}
