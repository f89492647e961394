// Package records reads and writes the domain packages' typed records (JSON documents in the
// store) and turns store failures into API errors, so every domain speaks about its records
// the same way: a missing record is a 404 naming it, a taken unique key a 409, a store that is
// unreachable a 503 (apierr turns every store.IsUnavailable cause into one), anything else an
// internal error whose cause is never shown.
package records

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/store"
)

// Load reads the record (kind, id) into a new T. orgID, when not empty, must own the record
// (a record of another organization is reported as not found). what names it in errors.
func Load[T any](ctx context.Context, r store.Reader, kind, orgID, id, what string) (*T, error) {
	if id == "" {
		return nil, apierr.NotFoundf("%s not found", what)
	}
	rec, err := r.Get(ctx, kind, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && orgID != "" && rec.OrgID != orgID) {
		return nil, apierr.NotFoundf("%s not found: %s", what, id)
	}
	if err != nil {
		return nil, apierr.Internalf(err, "reading %s", what)
	}
	v := new(T)
	if err := json.Unmarshal(rec.Data, v); err != nil {
		return nil, apierr.Internalf(err, "decoding %s", what)
	}
	return v, nil
}

// Save writes v as the record (kind, id) owned by orgID, with its lookup keys.
func Save(
	ctx context.Context,
	tx store.Tx,
	kind, id, orgID string,
	created, updated time.Time,
	v any,
	keys ...store.Key,
) error {
	data, err := json.Marshal(v)
	if err != nil {
		return apierr.Internalf(err, "encoding %s", kind)
	}
	err = tx.Put(
		ctx,
		store.Record{Kind: kind, ID: id, OrgID: orgID, Data: data, CreatedAt: created, UpdatedAt: updated},
		keys...)
	return Err(err, kind)
}

// Delete removes the record (kind, id).
func Delete(ctx context.Context, tx store.Tx, kind, id string) error {
	return Err(tx.Delete(ctx, kind, id), kind)
}

// Err turns a store error about a record of kind into an API error.
func Err(err error, kind string) error {
	what := strings.ReplaceAll(kind, "_", " ")
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrAlreadyExists):
		return apierr.New(apierr.AlreadyExists, "ALREADY_EXISTS", "%s already exists", what)
	case errors.Is(err, store.ErrNotFound):
		return apierr.NotFoundf("%s not found", what)
	default:
		return apierr.Internalf(err, "writing %s", what)
	}
}

// MaxPageBytes bounds the stored JSON one page of a paginated list reads (list_secrets,
// list_suborgs and the like), beside the page's limit (at most 100): the page ends before the
// record that would take it over, always holds at least one, and the next page goes on from
// its last record (store.ListOptions.MaxBytes). A record may hold more than the list answers
// (a secret's sealed payload), so the bound is on what is read, not on what is answered.
// Ordinary records are under 2 KB: a page of 100 is a twentieth of it.
const MaxPageBytes = 4 << 20

// List reads the records of kind owned by orgID.
func List[T any](ctx context.Context, r store.Reader, kind, orgID string, opts store.ListOptions) ([]*T, error) {
	recs, err := r.List(ctx, kind, orgID, opts)
	if err != nil {
		return nil, apierr.Internalf(err, "listing %s", kind)
	}
	out := make([]*T, 0, len(recs))
	for _, rec := range recs {
		v := new(T)
		if err := json.Unmarshal(rec.Data, v); err != nil {
			return nil, apierr.Internalf(err, "decoding %s", kind)
		}
		out = append(out, v)
	}
	return out, nil
}

// LookupIDs returns the ids of the records of kind carrying the key (name, value), owned by
// orgID unless it is empty.
func LookupIDs(ctx context.Context, r store.Reader, name, value, kind, orgID string) ([]string, error) {
	refs, err := r.Lookup(ctx, name, value)
	if err != nil {
		return nil, apierr.Internalf(err, "looking up %s", kind)
	}
	var out []string
	for _, ref := range refs {
		if ref.Kind == kind && (orgID == "" || ref.OrgID == orgID) {
			out = append(out, ref.ID)
		}
	}
	return out, nil
}

// LookupAll loads the records of kind carrying the key, skipping any deleted meanwhile.
func LookupAll[T any](ctx context.Context, r store.Reader, name, value, kind, orgID string) ([]*T, error) {
	ids, err := LookupIDs(ctx, r, name, value, kind, orgID)
	if err != nil {
		return nil, err
	}
	out := make([]*T, 0, len(ids))
	for _, id := range ids {
		v, err := Load[T](ctx, r, kind, orgID, id, kind)
		if err != nil {
			if apierr.From(err).Code == apierr.NotFound {
				continue
			}
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
