package activity

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Exec is what a submit handler works with: one transaction, the caller, the activity being
// made.
type Exec struct {
	// Ctx is the context of the handler's call. It is a field, against the rule that contexts
	// are passed, because it is the handlers' API: every handler, SelfUser, PolicyEnv and Redact
	// function (On, User, Env...) takes an *Exec and no context, and the helpers they share read
	// x.Ctx. The engine passes its own context as a parameter, and sets Ctx only on the copy of
	// Exec it makes for one Prepare or one attempt of a transaction, which lives no longer.
	Ctx context.Context
	// Tx is the activity's transaction (nil in Prepare).
	Tx store.Tx
	// R reads: the transaction in Execute, committed data in Prepare.
	R          store.Reader
	Caller     *directory.Caller
	OrgID      string // the organization the activity runs in
	ActivityID string
	Type       string // the exact activity type submitted
	Now        time.Time
	Services   *Services
	// Prepared is what the operation's Prepare returned, if it has one.
	Prepared any
	// GenerateAppProofs is set when the request asked for app proofs.
	GenerateAppProofs bool
	appProofs         []json.RawMessage
	// mfa is the MFA policy that matched the initiator (set by decide); mfaDone the
	// authentication methods proven so far.
	mfa     *MFARequirement
	mfaDone []AuthMethod
	// after collects AfterCommit's work inside an engine transaction.
	after *afterCommit
}

// Shared reads records the activity does not write (the key it signs with, its wallet): in
// Execute, through the transaction without row locks (store.Tx.NoLock), so concurrent activities
// reading the same rows do not queue behind each other's commits on PostgreSQL; in Prepare, R.
func (x *Exec) Shared() store.Reader {
	if x.Tx != nil {
		return x.Tx.NoLock()
	}
	return x.R
}

// FailKeepingWrites wraps a handler's error when what the handler wrote before failing must
// last: the activity is then recorded FAILED in the handler's own transaction, which commits,
// instead of that transaction being undone. verify_otp counts a wrong code's attempt this way,
// in the same serialised transaction that checked the code, so concurrent guesses cannot all
// see the count before any of them is recorded.
func FailKeepingWrites(err error) error { return &keptFailure{err} }

type keptFailure struct{ err error }

func (k *keptFailure) Error() string { return k.err.Error() }
func (k *keptFailure) Unwrap() error { return k.err }

// AddressProof records an address-derivation app proof on the activity when the request asked
// for proofs (generateAppProofs): a payload naming the organization, wallet, path and address,
// signed with the server's app-proof key as @turnkey/crypto's verifyAppProofSignature checks.
func (x *Exec) AddressProof(walletID, path, address string) error {
	if !x.GenerateAppProofs || x.Services.Custodian == nil {
		return nil
	}
	payload, err := json.Marshal(map[string]any{
		"type":        "APP_PROOF_TYPE_ADDRESS_DERIVATION",
		"timestampMs": strconv.FormatInt(x.Now.UnixMilli(), 10),
		"addressDerivationProof": map[string]string{
			"organizationId": x.OrgID, "walletId": walletID, "derivationPath": path, "address": address,
		},
	})
	if err != nil {
		return err
	}
	pub, sig, err := x.Services.Custodian.AppProof(payload)
	if err != nil {
		return err
	}
	proof, err := json.Marshal(
		wire.AppProof{
			Scheme:       "SIGNATURE_SCHEME_EPHEMERAL_KEY_P256",
			PublicKey:    pub,
			ProofPayload: string(payload),
			Signature:    sig,
		},
	)
	if err != nil {
		return err
	}
	x.appProofs = append(x.appProofs, proof)
	return nil
}

// Read is what a query handler works with.
type Read struct {
	Ctx      context.Context
	R        store.Reader
	Caller   *directory.Caller
	OrgID    string // the organization the request names
	Now      time.Time
	Services *Services
}

// Access says who may submit an operation before policies exist (see Authorize).
type Access int

const (
	// AccessRoot: root users of the organization only.
	AccessRoot Access = iota
	// AccessSelf: root users, and any user acting on their own user (SelfUser).
	AccessSelf
	// AccessAnyUser: any user of the organization (e.g. approving an activity).
	AccessAnyUser
)

// Operation is one submit path's behaviour.
type Operation struct {
	Path string
	// Execute runs inside the activity's transaction and returns the result member's value. It
	// is made by On (one intent type), OnAny or Versions, typed on the intent versions it serves;
	// registration checks that they cover every activity type version of the path (typed.go).
	Execute ExecFn
	Access  Access
	// SelfUser returns the user an intent acts on, for AccessSelf (made by User or UserAny).
	SelfUser UserFn
	// ParentMayWrite lets a parent organization's users submit it for a sub-organization.
	ParentMayWrite bool
	// Redact, when set, returns the intent as it may be stored and echoed (secrets removed);
	// made by Redactor or RedactAny.
	Redact RedactFn
	// Prepare, when set, runs before the transaction over committed data (x.Tx is nil) and does
	// the expensive work that needs no write, such as signing, so that it runs in parallel
	// rather than inside the store's serial section. Execute then finds its value in
	// x.Prepared and must re-check, inside the transaction, whatever the work relied on.
	Prepare ExecFn
	// PolicyEnv, when set, adds the condition keywords this operation exposes to policies
	// (wallet, wallet_account, private_key, eth, solana, ...). It may read x.Prepared. Made by
	// Env or EnvAny.
	PolicyEnv EnvFn

	wire *wire.Op
}

// QueryOp is one query path's behaviour. req is a pointer to the path's wire request type,
// already decoded and validated.
type QueryOp struct {
	Path string
	// Execute is made by Query, typed on the path's request type (checked at registration).
	Execute QueryFn

	wire *wire.Op
}

// Registry holds the operations the engine serves.
type Registry struct {
	submit map[string]*Operation
	query  map[string]*QueryOp
	// why says, for a swagger path Latchkey does not serve, why (and what to use instead); the
	// "not supported" answer carries it.
	why map[string]string
}

// NotSupported records why path (a swagger operation with no registry entry) is not served.
func (r *Registry) NotSupported(path, reason string) { r.why[path] = reason }

// unsupported is the "not supported" answer for kind's path, with the recorded reason if any.
func (r *Registry) unsupported(kind, path string) error {
	e := apierr.Unsupported("/public/v1/" + kind + "/" + path)
	if why := r.why[path]; why != "" {
		e.Message += ": " + why
	}
	return e
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{submit: map[string]*Operation{}, query: map[string]*QueryOp{}, why: map[string]string{}}
}

// Submit registers a submit operation; its path must exist in the swagger.
func (r *Registry) Submit(op Operation) {
	w, ok := wire.Lookup(wire.Submit, op.Path)
	if !ok {
		panic(fmt.Sprintf("activity: submit path %q is not in the swagger", op.Path))
	}
	if _, dup := r.submit[op.Path]; dup {
		panic(fmt.Sprintf("activity: submit path %q registered twice", op.Path))
	}
	checkVersions(&op, w)
	op.wire = w
	r.submit[op.Path] = &op
}

// Query registers a query operation; its path must exist in the swagger.
func (r *Registry) Query(op QueryOp) {
	w, ok := wire.Lookup(wire.Query, op.Path)
	if !ok {
		panic(fmt.Sprintf("activity: query path %q is not in the swagger", op.Path))
	}
	if _, dup := r.query[op.Path]; dup {
		panic(fmt.Sprintf("activity: query path %q registered twice", op.Path))
	}
	checkRequest(&op, w)
	op.wire = w
	r.query[op.Path] = &op
}

// Implemented reports whether a path of kind is served.
func (r *Registry) Implemented(kind wire.OpKind, path string) bool {
	switch kind {
	case wire.Submit:
		return r.submit[path] != nil
	case wire.Query:
		return r.query[path] != nil
	}
	return false
}
