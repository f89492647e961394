package policies

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/policy"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Record kinds.
const (
	KindPolicy                 = "policy"
	KindPolicyEvaluation       = "policy_evaluation"
	KindSmartContractInterface = "smart_contract_interface"
)

// Lookup key names.
const (
	KeyPolicyName          = "policy.name"                      // unique: org/name
	KeyEvaluationActivity  = "policy_evaluation.activity"       // org/activityId
	KeyContractInterfaceAt = "smart_contract_interface.address" // unique: org/address (Ethereum lowercased)
)

// Policy is a stored policy. Absent expressions are "".
type Policy struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"orgId"`
	Name      string    `json:"name"`
	Effect    string    `json:"effect"` // EFFECT_ALLOW or EFFECT_DENY
	Condition string    `json:"condition"`
	Consensus string    `json:"consensus"`
	Notes     string    `json:"notes"`
	Time      string    `json:"time"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Compile compiles the policy for evaluation. Stored policies were checked when written, so an
// error here means the language grew stricter since.
func (p *Policy) Compile() (policy.Policy, error) {
	return policy.NewPolicy(p.ID, p.Effect, p.Condition, p.Consensus, p.Time)
}

// ToWire renders a policy.
func (p *Policy) ToWire() wire.Policy {
	return wire.Policy{PolicyId: p.ID, PolicyName: p.Name, Effect: wire.Effect(p.Effect), Condition: p.Condition,
		Consensus: p.Consensus, Notes: p.Notes, Time: p.Time,
		CreatedAt: directory.Timestamp(p.CreatedAt), UpdatedAt: directory.Timestamp(p.UpdatedAt)}
}

// LoadPolicy loads a policy of orgID.
func LoadPolicy(ctx context.Context, r store.Reader, orgID, id string) (*Policy, error) {
	p, err := load[Policy](ctx, r, KindPolicy, id, "policy")
	if err != nil {
		return nil, err
	}
	if p.OrgID != orgID {
		return nil, apierr.NotFoundf("policy not found: %s", id)
	}
	return p, nil
}

// ListPolicies lists an organization's policies, oldest first. This is the set the policy
// engine evaluates.
func ListPolicies(ctx context.Context, r store.Reader, orgID string) ([]*Policy, error) {
	return listAll[Policy](ctx, r, KindPolicy, orgID)
}

// SavePolicy writes a policy; names are unique per organization, and a second policy with the
// same name is refused with Turnkey's "policy label must be unique" (field names where the name
// came from in the request).
func SavePolicy(ctx context.Context, tx store.Tx, p *Policy, field string) error {
	if err := touchPolicySet(ctx, tx, p.OrgID, p.UpdatedAt); err != nil {
		return err
	}
	err := save(ctx, tx, KindPolicy, p.ID, p.OrgID, p.CreatedAt, p.UpdatedAt, p,
		store.Key{Name: KeyPolicyName, Value: p.OrgID + "/" + p.Name, Unique: true})
	if err != nil && apierr.From(err).Code == apierr.AlreadyExists {
		return apierr.Invalid(
			field,
			"policy label must be unique: a policy named %q already exists in this organization",
			p.Name,
		)
	}
	return err
}

// Evaluation is the stored record of one policy evaluation: one per vote on an activity (the
// initiator's submission is the first vote). The engine writes it with SaveEvaluation in the
// activity's transaction; get_policy_evaluations reads it back. Record kind
// "policy_evaluation", owned by the organization the activity runs in, found by the lookup key
// policy_evaluation.activity = "<orgId>/<activityId>". Its JSON:
//
//	{"id": uuid, "orgId": ..., "activityId": ..., "voteId": ...,
//	 "outcome": final v1Outcome (not on the wire),
//	 "policyEvaluations": [{"policyId": ..., "outcome": v1Outcome, "error": text when OUTCOME_ERROR (not on the wire)}],
//	 "createdAt": RFC 3339}
type Evaluation struct {
	ID         string          `json:"id"`
	OrgID      string          `json:"orgId"`
	ActivityID string          `json:"activityId"`
	VoteID     string          `json:"voteId"`
	Outcome    string          `json:"outcome,omitempty"`
	Policies   []PolicyOutcome `json:"policyEvaluations"`
	CreatedAt  time.Time       `json:"createdAt"`
}

// PolicyOutcome is one policy's outcome within an Evaluation.
type PolicyOutcome struct {
	PolicyID string `json:"policyId"`
	Outcome  string `json:"outcome"`
	Error    string `json:"error,omitempty"`
}

// NewEvaluation builds the record of policy.Decide's answer for one vote.
func NewEvaluation(
	id, orgID, activityID, voteID string,
	now time.Time,
	final policy.Outcome,
	per []policy.Evaluation,
) *Evaluation {
	e := &Evaluation{ID: id, OrgID: orgID, ActivityID: activityID, VoteID: voteID, Outcome: string(final),
		Policies: make([]PolicyOutcome, 0, len(per)), CreatedAt: now}
	for _, p := range per {
		e.Policies = append(e.Policies, PolicyOutcome{PolicyID: p.PolicyID, Outcome: string(p.Outcome), Error: p.Err})
	}
	return e
}

// SaveEvaluation records an evaluation. Evaluations are written once: saving the same id twice
// fails.
func SaveEvaluation(ctx context.Context, tx store.Tx, e *Evaluation) error {
	if e.ID == "" || e.OrgID == "" || e.ActivityID == "" || e.VoteID == "" {
		return apierr.Internalf(nil, "policy evaluation needs id, orgId, activityId and voteId")
	}
	if e.Policies == nil {
		e.Policies = []PolicyOutcome{}
	}
	data, err := json.Marshal(e)
	if err != nil {
		return apierr.Internalf(err, "encoding policy evaluation")
	}
	err = tx.Insert(
		ctx,
		store.Record{
			Kind:      KindPolicyEvaluation,
			ID:        e.ID,
			OrgID:     e.OrgID,
			Data:      data,
			CreatedAt: e.CreatedAt,
			UpdatedAt: e.CreatedAt,
		},
		store.Key{Name: KeyEvaluationActivity, Value: e.OrgID + "/" + e.ActivityID},
	)
	return storeErr(err, KindPolicyEvaluation)
}

// ActivityEvaluations lists the evaluations recorded for an activity of orgID, oldest first.
func ActivityEvaluations(ctx context.Context, r store.Reader, orgID, activityID string) ([]*Evaluation, error) {
	refs, err := r.Lookup(ctx, KeyEvaluationActivity, orgID+"/"+activityID)
	if err != nil {
		return nil, apierr.Internalf(err, "looking up policy evaluations")
	}
	out := make([]*Evaluation, 0, len(refs))
	for _, ref := range refs {
		if ref.Kind != KindPolicyEvaluation || ref.OrgID != orgID {
			continue
		}
		e, err := load[Evaluation](ctx, r, KindPolicyEvaluation, ref.ID, "policy evaluation")
		if err != nil {
			if apierr.From(err).Code == apierr.NotFound {
				continue
			}
			return nil, err
		}
		out = append(out, e)
	}
	sortByCreated(out, func(e *Evaluation) (time.Time, string) { return e.CreatedAt, e.ID })
	return out, nil
}

// ToWire renders an evaluation.
func (e *Evaluation) ToWire() wire.Externalactivityv1PolicyEvaluation {
	w := wire.Externalactivityv1PolicyEvaluation{
		Id:             e.ID,
		ActivityId:     e.ActivityID,
		OrganizationId: e.OrgID,
		VoteId:         e.VoteID,
		PolicyEvaluations: make(
			[]wire.Immutablecommonv1PolicyEvaluation,
			0,
			len(e.Policies),
		),
		CreatedAt: directory.Timestamp(e.CreatedAt),
	}
	for _, p := range e.Policies {
		w.PolicyEvaluations = append(
			w.PolicyEvaluations,
			wire.Immutablecommonv1PolicyEvaluation{PolicyId: p.PolicyID, Outcome: wire.Outcome(p.Outcome)},
		)
	}
	return w
}

// SmartContractInterface is an uploaded ABI (Ethereum) or Anchor IDL (Solana).
type SmartContractInterface struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"orgId"`
	Address   string    `json:"address"`   // Ethereum: 0x + 40 lowercase hex; Solana: base58 as given
	Interface string    `json:"interface"` // the JSON as uploaded
	Type      string    `json:"type"`      // SMART_CONTRACT_INTERFACE_TYPE_*
	Label     string    `json:"label"`
	Notes     string    `json:"notes"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ToWire renders a smart contract interface.
func (s *SmartContractInterface) ToWire() wire.Externaldatav1SmartContractInterface {
	return wire.Externaldatav1SmartContractInterface{OrganizationId: s.OrgID, SmartContractInterfaceId: s.ID,
		SmartContractAddress: s.Address, SmartContractInterface: s.Interface, Type: s.Type, Label: s.Label, Notes: s.Notes,
		CreatedAt: directory.Timestamp(s.CreatedAt), UpdatedAt: directory.Timestamp(s.UpdatedAt)}
}

// LoadSmartContractInterface loads a smart contract interface of orgID.
func LoadSmartContractInterface(
	ctx context.Context,
	r store.Reader,
	orgID, id string,
) (*SmartContractInterface, error) {
	s, err := load[SmartContractInterface](ctx, r, KindSmartContractInterface, id, "smart contract interface")
	if err != nil {
		return nil, err
	}
	if s.OrgID != orgID {
		return nil, apierr.NotFoundf("smart contract interface not found: %s", id)
	}
	return s, nil
}

// ListSmartContractInterfaces lists an organization's smart contract interfaces, oldest first.
func ListSmartContractInterfaces(ctx context.Context, r store.Reader, orgID string) ([]*SmartContractInterface, error) {
	return listAll[SmartContractInterface](ctx, r, KindSmartContractInterface, orgID)
}

// InterfaceForAddress returns the interface orgID uploaded for a contract address or program id
// (an Ethereum address in any case), or nil when there is none. The policy evaluator uses it to
// decode eth.tx.to's calldata and Solana instructions.
func InterfaceForAddress(ctx context.Context, r store.Reader, orgID, address string) (*SmartContractInterface, error) {
	if isEthereumAddress(address) {
		address = strings.ToLower(address)
	}
	refs, err := r.Lookup(ctx, KeyContractInterfaceAt, orgID+"/"+address)
	if err != nil {
		return nil, apierr.Internalf(err, "looking up smart contract interfaces")
	}
	for _, ref := range refs {
		if ref.Kind != KindSmartContractInterface {
			continue
		}
		s, err := LoadSmartContractInterface(ctx, r, orgID, ref.ID)
		if err != nil {
			if apierr.From(err).Code == apierr.NotFound {
				continue
			}
			return nil, err
		}
		return s, nil
	}
	return nil, nil
}

// SaveSmartContractInterface writes a smart contract interface; an organization has at most one
// per address, so the evaluator never has to choose between two ABIs.
func SaveSmartContractInterface(ctx context.Context, tx store.Tx, s *SmartContractInterface, field string) error {
	err := save(ctx, tx, KindSmartContractInterface, s.ID, s.OrgID, s.CreatedAt, s.UpdatedAt, s,
		store.Key{Name: KeyContractInterfaceAt, Value: s.OrgID + "/" + s.Address, Unique: true})
	if err != nil && apierr.From(err).Code == apierr.AlreadyExists {
		return apierr.New(
			apierr.AlreadyExists,
			"ALREADY_EXISTS",
			"%s: a smart contract interface for %s already exists in this organization; delete it first",
			field,
			s.Address,
		)
	}
	return err
}

// ---- loading and saving (the shape of directory's helpers) ----

func load[T any](ctx context.Context, r store.Reader, kind, id, what string) (*T, error) {
	return records.Load[T](ctx, r, kind, "", id, what)
}

func save(
	ctx context.Context,
	tx store.Tx,
	kind, id, orgID string,
	created, updated time.Time,
	v any,
	keys ...store.Key,
) error {
	return records.Save(ctx, tx, kind, id, orgID, created, updated, v, keys...)
}

func storeErr(err error, kind string) error { return records.Err(err, kind) }

func listAll[T any](ctx context.Context, r store.Reader, kind, orgID string) ([]*T, error) {
	return records.List[T](ctx, r, kind, orgID, store.ListOptions{})
}

// KindPolicySet is the record whose version changes with every change to an organization's
// policies, so a process can reuse its compiled policies until it does.
const KindPolicySet = "policy_set"

type policySet struct {
	Version string `json:"version"`
}

func touchPolicySet(ctx context.Context, tx store.Tx, orgID string, now time.Time) error {
	b, _ := json.Marshal(policySet{Version: id.New()})
	if err := tx.Put(ctx, store.Record{Kind: KindPolicySet, ID: orgID, OrgID: orgID, Data: b, CreatedAt: now, UpdatedAt: now}); err != nil {
		return apierr.Internalf(err, "recording the policy change")
	}
	return nil
}

// policySetVersion reads the organization's policy version ("" when it never had policies).
func policySetVersion(ctx context.Context, r store.Reader, orgID string) (string, error) {
	rec, err := r.Get(ctx, KindPolicySet, orgID)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", apierr.Internalf(err, "reading the policy version")
	}
	var ps policySet
	if err := json.Unmarshal(rec.Data, &ps); err != nil {
		return "", apierr.Internalf(err, "decoding the policy version")
	}
	return ps.Version, nil
}

func deleteRecord(ctx context.Context, tx store.Tx, kind, id string) error {
	return storeErr(tx.Delete(ctx, kind, id), kind)
}

func sortByCreated[T any](xs []*T, key func(*T) (time.Time, string)) {
	slices.SortFunc(xs, func(a, b *T) int {
		ta, ia := key(a)
		tb, ib := key(b)
		if c := ta.Compare(tb); c != 0 {
			return c
		}
		return strings.Compare(ia, ib)
	})
}
