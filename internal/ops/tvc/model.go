package tvc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Record kinds and lookup keys.
const (
	KindOperator    = "tvc_operator"
	KindOperatorSet = "tvc_operator_set"
	KindApp         = "tvc_app"
	KindDeployment  = "tvc_deployment"
	// KindDeploymentSpec holds what a deployment was created with and answers whole (its pivot
	// container, up to 1 MiB of arguments, and its manifest), apart from the deployment's own
	// record, under the deployment's id: what reads only a deployment's state (get_app_status,
	// approvals' bookkeeping, delete, restore) does not read it.
	KindDeploymentSpec = "tvc_deployment_spec"

	// KeyAppName holds orgID + "/" + name: app names are unique in an organization.
	KeyAppName = "tvc_app.name"
	// KeyDeploymentApp holds the app id: an app's deployments.
	KeyDeploymentApp = "tvc_deployment.app"
	// KeyManifest holds the manifest id: the deployment a manifest belongs to.
	KeyManifest = "tvc_deployment.manifest"
	// KeyNonce holds appID + "/" + nonce: manifest nonces are unique within an app.
	KeyNonce = "tvc_deployment.nonce"
)

// OwnedKinds are the record kinds an organization owns here.
var OwnedKinds = []string{KindOperator, KindOperatorSet, KindApp, KindDeployment, KindDeploymentSpec}

// PublicDomainSuffix ends every app's publicDomain. Latchkey serves no ingress, so the domain
// sits under the reserved .invalid top-level domain (RFC 2606): it never resolves, and nobody can
// take it for a live endpoint.
const PublicDomainSuffix = ".tvc.latchkey.invalid"

// ManifestFormat names the manifest document Latchkey derives for a deployment.
const ManifestFormat = "latchkey.tvc.manifest.v1"

// Operator is one TVC operator.
type Operator struct {
	ID        string `json:"id"`
	OrgID     string `json:"orgId"`
	Name      string `json:"name"`
	PublicKey string `json:"publicKey"` // lowercase hex, as given
	// WalletID is set for an operator made by create_tvc_operator, whose keys are accounts of
	// that wallet; such an operator stays until its wallet does not.
	WalletID  string    `json:"walletId,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// OperatorSet is a named set of operators with a threshold.
type OperatorSet struct {
	ID          string    `json:"id"`
	OrgID       string    `json:"orgId"`
	Name        string    `json:"name"`
	OperatorIDs []string  `json:"operatorIds"`
	Threshold   int64     `json:"threshold"`
	CreatedAt   time.Time `json:"createdAt"`
}

// App is one TVC app.
type App struct {
	ID                         string `json:"id"`
	OrgID                      string `json:"orgId"`
	Name                       string `json:"name"`
	QuorumPublicKey            string `json:"quorumPublicKey"`
	ManifestSetID              string `json:"manifestSetId"`
	ShareSetID                 string `json:"shareSetId"`
	EnableEgress               bool   `json:"enableEgress"`
	EnableDebugModeDeployments bool   `json:"enableDebugModeDeployments"`
	LiveDeploymentID           string `json:"liveDeploymentId,omitempty"`
	Deployments                int    `json:"deployments"` // ever created, for MaxDeploymentsPerApp
	// SpecBytes is the stored size of the specs of the deployments created since specs were
	// kept apart (KindDeploymentSpec), for MaxDeploymentSpecBytesPerApp.
	SpecBytes int       `json:"specBytes,omitempty"`
	MaxNonce  int64     `json:"maxNonce"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Approval is one operator's approval of a deployment's manifest.
type Approval struct {
	ID         string    `json:"id"`
	OperatorID string    `json:"operatorId"`
	Signature  string    `json:"signature"` // lowercase hex
	CreatedAt  time.Time `json:"createdAt"`
}

// Deployment is one deployment of an app: its state. What it was created with is its
// DeploymentSpec (loadSpec).
type Deployment struct {
	ID            string `json:"id"`
	OrgID         string `json:"orgId"`
	AppID         string `json:"appId"`
	ManifestSetID string `json:"manifestSetId"`
	ShareSetID    string `json:"shareSetId"`
	ManifestID    string `json:"manifestId"`
	// SpecApart says the spec is a KindDeploymentSpec record. A deployment created before
	// specs were kept apart holds its own, in Manifest and Pivot.
	SpecApart      bool                   `json:"specApart,omitempty"`
	Manifest       []byte                 `json:"manifest,omitempty"`
	Pivot          *wire.TvcContainerSpec `json:"pivot,omitempty"`
	QOSVersion     string                 `json:"qosVersion"`
	ExpectedDigest string                 `json:"expectedDigest"`
	Nonce          int64                  `json:"nonce"`
	DebugMode      bool                   `json:"debugMode"`
	Replicas       int64                  `json:"replicas"`
	Approvals      []Approval             `json:"approvals"`
	Deleted        bool                   `json:"deleted"`
	CreatedAt      time.Time              `json:"createdAt"`
	UpdatedAt      time.Time              `json:"updatedAt"`
}

// DeploymentSpec is what a deployment was created with and what get_tvc_deployment and
// list_tvc_app_deployments answer of it, stored under the deployment's id.
type DeploymentSpec struct {
	ID       string                `json:"id"` // the deployment's
	OrgID    string                `json:"orgId"`
	Manifest []byte                `json:"manifest"` // the exact bytes operators sign
	Pivot    wire.TvcContainerSpec `json:"pivot"`
}

// Manifest is the document Latchkey records for a deployment: everything an enclave would be
// booted from, in a fixed field order. Its exact bytes are what operators approve.
type Manifest struct {
	Format         string          `json:"format"`
	OrganizationID string          `json:"organizationId"`
	AppID          string          `json:"appId"`
	AppName        string          `json:"appName"`
	DeploymentID   string          `json:"deploymentId"`
	Nonce          int64           `json:"nonce"`
	QuorumKey      string          `json:"quorumPublicKey"`
	QOSVersion     string          `json:"qosVersion"`
	Pivot          ManifestPivot   `json:"pivot"`
	ManifestSet    ManifestQuorum  `json:"manifestSet"`
	ShareSet       ManifestQuorum  `json:"shareSet"`
	Runtime        ManifestRuntime `json:"runtime"`
}

// ManifestPivot is the pivot binary of a manifest.
type ManifestPivot struct {
	ImageURL      string   `json:"imageUrl"`
	Path          string   `json:"path"`
	Args          []string `json:"args"`
	Digest        string   `json:"sha256"`
	HasPullSecret bool     `json:"hasPullSecret"`
}

// ManifestQuorum is an operator set as a manifest names it.
type ManifestQuorum struct {
	ID        string           `json:"id"`
	Threshold int64            `json:"threshold"`
	Members   []ManifestMember `json:"members"`
}

// ManifestMember is one operator of a ManifestQuorum.
type ManifestMember struct {
	OperatorID string `json:"operatorId"`
	Name       string `json:"name"`
	PublicKey  string `json:"publicKey"`
}

// ManifestRuntime is how the pivot would be run.
type ManifestRuntime struct {
	HealthCheckType   string `json:"healthCheckType"`
	HealthCheckPort   int64  `json:"healthCheckPort"`
	PublicIngressPort int64  `json:"publicIngressPort"`
	Replicas          int64  `json:"replicas"`
	DebugMode         bool   `json:"debugMode"`
	EnableEgress      bool   `json:"enableEgress"`
}

func loadApp(ctx context.Context, r store.Reader, orgID, id string) (*App, error) {
	return records.Load[App](ctx, r, KindApp, orgID, id, "TVC app")
}

func loadDeployment(ctx context.Context, r store.Reader, orgID, id string) (*Deployment, error) {
	return records.Load[Deployment](ctx, r, KindDeployment, orgID, id, "TVC deployment")
}

func loadSet(ctx context.Context, r store.Reader, orgID, id string) (*OperatorSet, error) {
	return records.Load[OperatorSet](ctx, r, KindOperatorSet, orgID, id, "TVC operator set")
}

func loadOperator(ctx context.Context, r store.Reader, orgID, id string) (*Operator, error) {
	return records.Load[Operator](ctx, r, KindOperator, orgID, id, "TVC operator")
}

func saveApp(ctx context.Context, tx store.Tx, a *App) error {
	return records.Save(ctx, tx, KindApp, a.ID, a.OrgID, a.CreatedAt, a.UpdatedAt, a,
		store.Key{Name: KeyAppName, Value: a.OrgID + "/" + a.Name, Unique: true})
}

func saveDeployment(ctx context.Context, tx store.Tx, d *Deployment) error {
	return records.Save(ctx, tx, KindDeployment, d.ID, d.OrgID, d.CreatedAt, d.UpdatedAt, d,
		store.Key{Name: KeyDeploymentApp, Value: d.AppID},
		store.Key{Name: KeyManifest, Value: d.ManifestID, Unique: true},
		store.Key{Name: KeyNonce, Value: d.AppID + "/" + itoa(d.Nonce), Unique: true})
}

// saveSpec writes a deployment's spec; it is never changed afterwards.
func saveSpec(ctx context.Context, tx store.Tx, d *Deployment, s *DeploymentSpec) error {
	return records.Save(ctx, tx, KindDeploymentSpec, s.ID, s.OrgID, d.CreatedAt, d.CreatedAt, s)
}

// loadSpec reads a deployment's spec: its own record, or the deployment's fields for a
// deployment created before specs were kept apart.
func loadSpec(ctx context.Context, r store.Reader, d *Deployment) (*DeploymentSpec, error) {
	if !d.SpecApart {
		s := &DeploymentSpec{ID: d.ID, OrgID: d.OrgID, Manifest: d.Manifest}
		if d.Pivot != nil {
			s.Pivot = *d.Pivot
		}
		return s, nil
	}
	s, err := records.Load[DeploymentSpec](ctx, r, KindDeploymentSpec, d.OrgID, d.ID, "TVC deployment spec")
	if err != nil {
		return nil, apierr.Internalf(err, "deployment %s has no spec", d.ID)
	}
	return s, nil
}

// appDeployments loads an app's deployments, oldest first.
func appDeployments(ctx context.Context, r store.Reader, orgID, appID string) ([]*Deployment, error) {
	ds, err := records.LookupAll[Deployment](ctx, r, KeyDeploymentApp, appID, KindDeployment, orgID)
	if err != nil {
		return nil, err
	}
	sortDeployments(ds)
	return ds, nil
}

// renderer renders records, loading each operator and set once.
type renderer struct {
	ctx   context.Context
	r     store.Reader
	orgID string
	ops   map[string]wire.TvcOperator
	sets  map[string]wire.TvcOperatorSet
}

func newRenderer(ctx context.Context, r store.Reader, orgID string) *renderer {
	return &renderer{
		ctx:   ctx,
		r:     r,
		orgID: orgID,
		ops:   map[string]wire.TvcOperator{},
		sets:  map[string]wire.TvcOperatorSet{},
	}
}

func (o *Operator) toWire() wire.TvcOperator {
	t := directory.Timestamp(o.CreatedAt)
	return wire.TvcOperator{Id: o.ID, Name: o.Name, PublicKey: o.PublicKey, CreatedAt: t, UpdatedAt: t}
}

func (rn *renderer) operator(id string) (wire.TvcOperator, error) {
	if w, ok := rn.ops[id]; ok {
		return w, nil
	}
	o, err := loadOperator(rn.ctx, rn.r, rn.orgID, id)
	if err != nil {
		return wire.TvcOperator{}, err
	}
	rn.ops[id] = o.toWire()
	return rn.ops[id], nil
}

func (rn *renderer) set(id string) (wire.TvcOperatorSet, error) {
	if w, ok := rn.sets[id]; ok {
		return w, nil
	}
	s, err := loadSet(rn.ctx, rn.r, rn.orgID, id)
	if err != nil {
		return wire.TvcOperatorSet{}, err
	}
	t := directory.Timestamp(s.CreatedAt)
	w := wire.TvcOperatorSet{Id: s.ID, Name: s.Name, OrganizationId: s.OrgID, Threshold: s.Threshold,
		Operators: make([]wire.TvcOperator, 0, len(s.OperatorIDs)), CreatedAt: t, UpdatedAt: t}
	for _, oid := range s.OperatorIDs {
		o, err := rn.operator(oid)
		if err != nil {
			return wire.TvcOperatorSet{}, err
		}
		w.Operators = append(w.Operators, o)
	}
	rn.sets[id] = w
	return w, nil
}

func (rn *renderer) app(a *App) (wire.TvcApp, error) {
	ms, err := rn.set(a.ManifestSetID)
	if err != nil {
		return wire.TvcApp{}, err
	}
	ss, err := rn.set(a.ShareSetID)
	if err != nil {
		return wire.TvcApp{}, err
	}
	return wire.TvcApp{Id: a.ID, OrganizationId: a.OrgID, Name: a.Name, QuorumPublicKey: a.QuorumPublicKey,
		ManifestSet: ms, ShareSet: ss, EnableEgress: a.EnableEgress,
		CreatedAt: directory.Timestamp(a.CreatedAt), UpdatedAt: directory.Timestamp(a.UpdatedAt),
		LiveDeploymentId: a.LiveDeploymentID, PublicDomain: "app-" + a.ID + PublicDomainSuffix,
		EnableDebugModeDeployments: a.EnableDebugModeDeployments}, nil
}

func (rn *renderer) deployment(d *Deployment) (wire.TvcDeployment, error) {
	spec, err := loadSpec(rn.ctx, rn.r, d)
	if err != nil {
		return wire.TvcDeployment{}, err
	}
	ms, err := rn.set(d.ManifestSetID)
	if err != nil {
		return wire.TvcDeployment{}, err
	}
	ss, err := rn.set(d.ShareSetID)
	if err != nil {
		return wire.TvcDeployment{}, err
	}
	created := directory.Timestamp(d.CreatedAt)
	w := wire.TvcDeployment{Id: d.ID, OrganizationId: d.OrgID, AppId: d.AppID, ManifestSet: ms, ShareSet: ss,
		Manifest: wire.TvcManifest{
			Id:        d.ManifestID,
			Manifest:  base64.StdEncoding.EncodeToString(spec.Manifest),
			CreatedAt: created,
			UpdatedAt: created,
		},
		ManifestApprovals: make([]wire.TvcOperatorApproval, 0, len(d.Approvals)),
		QosVersion:        d.QOSVersion, PivotContainer: spec.Pivot, CreatedAt: created, UpdatedAt: directory.Timestamp(d.UpdatedAt),
		Delete: d.Deleted, DebugMode: d.DebugMode}
	if w.PivotContainer.Args == nil {
		w.PivotContainer.Args = []string{}
	}
	for _, ap := range d.Approvals {
		o, err := rn.operator(ap.OperatorID)
		if err != nil {
			return wire.TvcDeployment{}, err
		}
		t := directory.Timestamp(ap.CreatedAt)
		w.ManifestApprovals = append(w.ManifestApprovals, wire.TvcOperatorApproval{Id: ap.ID, ManifestId: d.ManifestID,
			Operator: o, Approval: ap.Signature, CreatedAt: t, UpdatedAt: t})
	}
	return w, nil
}

// manifestQuorum renders an operator set for a manifest.
func manifestQuorum(ctx context.Context, r store.Reader, orgID string, s *OperatorSet) (ManifestQuorum, error) {
	q := ManifestQuorum{ID: s.ID, Threshold: s.Threshold, Members: make([]ManifestMember, 0, len(s.OperatorIDs))}
	for _, oid := range s.OperatorIDs {
		o, err := loadOperator(ctx, r, orgID, oid)
		if err != nil {
			return q, apierr.Internalf(err, "operator set %s names a missing operator", s.ID)
		}
		q.Members = append(q.Members, ManifestMember{OperatorID: o.ID, Name: o.Name, PublicKey: o.PublicKey})
	}
	return q, nil
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
