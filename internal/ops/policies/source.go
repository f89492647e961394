package policies

import (
	"context"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/policy"
	"github.com/latchkey/latchkey/internal/store"
)

// Source gives the activity engine an organization's policies, compiled once and cached by
// (policy id, last update), and records evaluations. It is safe for concurrent use; every
// process keeps its own cache, which stays correct because the policies are read from the store
// on every decision and only their compiled form is reused.
type Source struct {
	mu       sync.Mutex
	compiled map[string]cachedPolicy
	sets     map[string]cachedSet // org id -> its compiled policies at a version
}

type cachedSet struct {
	version  string
	policies []policy.Policy
}

type cachedPolicy struct {
	updated time.Time
	p       policy.Policy
}

// NewSource returns an empty source.
func NewSource() *Source {
	return &Source{compiled: map[string]cachedPolicy{}, sets: map[string]cachedSet{}}
}

// Policies returns the organization's policies, compiled. One read of the organization's policy
// version decides whether the compiled set of an earlier call is still current.
func (s *Source) Policies(ctx context.Context, r store.Reader, orgID string) ([]policy.Policy, error) {
	version, err := policySetVersion(ctx, r, orgID)
	if err != nil || version == "" {
		return nil, err
	}
	s.mu.Lock()
	set, ok := s.sets[orgID]
	s.mu.Unlock()
	if ok && set.version == version {
		return set.policies, nil
	}
	ps, err := s.load(ctx, r, orgID)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if len(s.sets) > 100_000 {
		clear(s.sets)
	}
	s.sets[orgID] = cachedSet{version: version, policies: ps}
	s.mu.Unlock()
	return ps, nil
}

func (s *Source) load(ctx context.Context, r store.Reader, orgID string) ([]policy.Policy, error) {
	stored, err := ListPolicies(ctx, r, orgID)
	if err != nil || len(stored) == 0 {
		return nil, err
	}
	out := make([]policy.Policy, 0, len(stored))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range stored {
		if c, ok := s.compiled[p.ID]; ok && c.updated.Equal(p.UpdatedAt) {
			out = append(out, c.p)
			continue
		}
		cp, err := p.Compile()
		if err != nil {
			// Checked when written; a policy the language no longer accepts is skipped
			// rather than failing every activity of the organization.
			continue
		}
		if len(s.compiled) > 100_000 {
			clear(s.compiled)
		}
		s.compiled[p.ID] = cachedPolicy{updated: p.UpdatedAt, p: cp}
		out = append(out, cp)
	}
	return out, nil
}

// RecordEvaluation stores the per-policy outcomes of one decision.
func (s *Source) RecordEvaluation(
	ctx context.Context,
	tx store.Tx,
	orgID, activityID, voteID string,
	now time.Time,
	final policy.Outcome,
	per []policy.Evaluation,
) error {
	return SaveEvaluation(ctx, tx, NewEvaluation(id.New(), orgID, activityID, voteID, now, final, per))
}
