package activities

import (
	"encoding/json"
	"errors"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/ops/organizations"
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

func listActivities(q *activity.Read, in *wire.GetActivitiesRequest) (any, error) {
	opts, err := organizations.ListOptions(in.PaginationOptions, "paginationOptions", true)
	if err != nil {
		return nil, err
	}
	f := store.ActivityFilter{Limit: opts.Limit, After: opts.After, Before: opts.Before}
	for _, s := range in.FilterByStatus {
		f.Statuses = append(f.Statuses, string(s))
	}
	for _, t := range in.FilterByType {
		f.Types = append(f.Types, string(t))
	}
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
