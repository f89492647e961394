package activities

import (
	"encoding/json"
	"errors"
	"slices"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/ops/organizations"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Deps are the dependencies of the operations (none yet: they take what they need from the
// Exec).
type Deps struct{}

// Register adds the queries to reg and returns the record kinds the package keeps under an
// organization (they go when a sub-organization is deleted).
func Register(reg *activity.Registry, d Deps) (owned []string) {
	reg.Query(activity.QueryOp{Path: "get_activity", Execute: activity.Query(getActivity)})
	reg.Query(activity.QueryOp{Path: "list_activities", Execute: activity.Query(listActivities)})
	reg.Query(activity.QueryOp{Path: "list_app_proofs", Execute: activity.Query(listAppProofs)})
	return nil
}

func listAppProofs(q *activity.Read, in *wire.GetAppProofsRequest) (any, error) {
	a, err := q.R.GetActivity(q.Ctx, in.ActivityId)
	if errors.Is(err, store.ErrNotFound) || (err == nil && a.OrgID != q.OrgID) {
		return nil, apierr.NotFoundf("activity not found: %s", in.ActivityId)
	}
	if err != nil {
		return nil, apierr.Internalf(err, "reading activity")
	}
	var act struct {
		AppProofs []json.RawMessage `json:"appProofs"`
	}
	if err := json.Unmarshal(a.Data, &act); err != nil {
		return nil, apierr.Internalf(err, "decoding activity")
	}
	if act.AppProofs == nil {
		act.AppProofs = []json.RawMessage{}
	}
	return struct {
		AppProofs []json.RawMessage `json:"appProofs"`
	}{act.AppProofs}, nil
}

type activityResponse struct {
	Activity json.RawMessage `json:"activity"`
}

type activitiesResponse struct {
	Activities []json.RawMessage `json:"activities"`
}

func getActivity(q *activity.Read, in *wire.GetActivityRequest) (any, error) {
	a, err := q.R.GetActivity(q.Ctx, in.ActivityId)
	if errors.Is(err, store.ErrNotFound) || (err == nil && a.OrgID != q.OrgID) {
		return nil, apierr.NotFoundf("activity not found: %s", in.ActivityId)
	}
	if err != nil {
		return nil, apierr.Internalf(err, "reading activity")
	}
	return activityResponse{Activity: activity.RenderFor(a, q.Caller)}, nil
}

// Limits of list_activities.
const (
	// MaxPageBytes bounds the activity JSON one page of list_activities holds, beside its
	// limit (at most 100): the page ends before the activity that would take it over, and
	// always holds at least one, so paging on from its last activity makes progress. An answer
	// is therefore at most MaxPageBytes, or one activity when that one alone is larger (an
	// activity holds its request body of at most 2 MiB twice, re-encoded as its intent and
	// quoted as its first vote's message: up to about 12 times the body when every character
	// widens to a \u00XX escape). A page of 100 ordinary activities (2 to 5 KB each) is far
	// below it.
	MaxPageBytes = records.MaxPageBytes
	// MaxFilterByStatus bounds the values of filterByStatus. There are seven activity
	// statuses; each distinct value is one SQL parameter, and repeated values count once.
	MaxFilterByStatus = 32
	// MaxFilterByType bounds the values of filterByType: every activity type (162 today)
	// fits, and repeated values count once.
	MaxFilterByType = 256
)

func listActivities(q *activity.Read, in *wire.GetActivitiesRequest) (any, error) {
	// Counted before anything else is done with them (wire validation has checked each is a
	// known status or type).
	if len(in.FilterByStatus) > MaxFilterByStatus {
		return nil, apierr.Invalid("filterByStatus", "give at most %d statuses, got %d",
			MaxFilterByStatus, len(in.FilterByStatus))
	}
	if len(in.FilterByType) > MaxFilterByType {
		return nil, apierr.Invalid("filterByType", "give at most %d activity types, got %d",
			MaxFilterByType, len(in.FilterByType))
	}
	opts, err := organizations.ListOptions(in.PaginationOptions, "paginationOptions", true)
	if err != nil {
		return nil, err
	}
	f := store.ActivityFilter{Limit: opts.Limit, After: opts.After, Before: opts.Before, MaxBytes: MaxPageBytes,
		Statuses: distinct(in.FilterByStatus), Types: distinct(in.FilterByType)}
	as, err := q.R.ListActivities(q.Ctx, q.OrgID, f)
	if err != nil {
		return nil, apierr.Internalf(err, "listing activities")
	}
	out := activitiesResponse{Activities: make([]json.RawMessage, 0, len(as))}
	for _, a := range as {
		out.Activities = append(out.Activities, activity.RenderFor(a, q.Caller))
	}
	return out, nil
}

// distinct returns the values without repetitions, in their first order.
func distinct[T ~string](values []T) []string {
	out := make([]string, 0, len(values))
	for _, v := range values {
		if !slices.Contains(out, string(v)) {
			out = append(out, string(v))
		}
	}
	return out
}
