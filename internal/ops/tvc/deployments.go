package tvc

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/wire"
)

func precondition(field, format string, args ...any) error {
	e := apierr.Invalid(field, format, args...)
	e.Code = apierr.FailedPrecondition
	return e
}

// redactPullSecret keeps the encrypted pull secret out of the stored and echoed intent:
// Latchkey pulls no image, so it records only that a secret was given.
func redactPullSecret(intent any) any {
	if in, ok := intent.(*wire.CreateTvcDeploymentIntent); ok && in.PivotContainerEncryptedPullSecret != "" {
		c := *in
		c.PivotContainerEncryptedPullSecret = "[redacted]"
		return &c
	}
	return intent
}

func (d Deps) createDeployment(x *activity.Exec, in *wire.CreateTvcDeploymentIntent) (any, error) {
	const p = "parameters."
	a, err := loadApp(x.Ctx, x.Tx, x.OrgID, in.AppId)
	if err != nil {
		return nil, apierr.MissingOr(err, "parameters.appId: TVC app not found: %s", in.AppId)
	}
	if err := checkQOSVersion(p+"qosVersion", in.QosVersion, d.QOSVersions); err != nil {
		return nil, err
	}
	if err := ParseImageRef(in.PivotContainerImageUrl); err != nil {
		return nil, apierr.Invalid(p+"pivotContainerImageUrl", "%v", err)
	}
	if err := checkPivotPath(p+"pivotPath", in.PivotPath); err != nil {
		return nil, err
	}
	if err := checkPivotArgs(p+"pivotArgs", in.PivotArgs); err != nil {
		return nil, err
	}
	digest, err := checkDigest(p+"expectedPivotDigest", in.ExpectedPivotDigest)
	if err != nil {
		return nil, err
	}
	if len(in.PivotContainerEncryptedPullSecret) > MaxPullSecretLen {
		return nil, apierr.Invalid(p+"pivotContainerEncryptedPullSecret", "at most %d bytes", MaxPullSecretLen)
	}
	debug := in.DebugMode != nil && *in.DebugMode
	if debug && !a.EnableDebugModeDeployments {
		return nil, apierr.Invalid(
			p+"debugMode",
			"app %s was created without enableDebugModeDeployments, so it takes no debug-mode deployments",
			a.ID,
		)
	}
	if err := checkPort(p+"healthCheckPort", in.HealthCheckPort); err != nil {
		return nil, err
	}
	if err := checkPort(p+"publicIngressPort", in.PublicIngressPort); err != nil {
		return nil, err
	}
	replicas := int64(1)
	if in.Replicas != nil {
		if replicas = *in.Replicas; replicas < 1 || replicas > MaxReplicas {
			return nil, apierr.Invalid(p+"replicas", "must be between 1 and %d, got %d", MaxReplicas, replicas)
		}
	}
	// The nonce keeps manifests of one app distinct; by default it is the current Unix time,
	// moved past the app's highest nonce so that two deployments in one second still differ.
	nonce := x.Now.Unix()
	if in.Nonce != nil {
		if nonce = *in.Nonce; nonce < 0 {
			return nil, apierr.Invalid(p+"nonce", "must not be negative, got %d", nonce)
		}
	} else if nonce <= a.MaxNonce {
		nonce = a.MaxNonce + 1
	}
	if a.Deployments >= MaxDeploymentsPerApp {
		return nil, apierr.New(
			apierr.ResourceExhausted,
			"RESOURCE_EXHAUSTED",
			"parameters.appId: an app holds at most %d deployments; delete the app to start over",
			MaxDeploymentsPerApp,
		)
	}
	ms, err := loadSet(x.Ctx, x.Tx, x.OrgID, a.ManifestSetID)
	if err != nil {
		return nil, apierr.Internalf(err, "app %s names a missing manifest set", a.ID)
	}
	ss, err := loadSet(x.Ctx, x.Tx, x.OrgID, a.ShareSetID)
	if err != nil {
		return nil, apierr.Internalf(err, "app %s names a missing share set", a.ID)
	}
	dep := &Deployment{
		ID:             id.New(),
		OrgID:          x.OrgID,
		AppID:          a.ID,
		ManifestSetID:  ms.ID,
		ShareSetID:     ss.ID,
		ManifestID:     id.New(),
		SpecApart:      true,
		QOSVersion:     in.QosVersion,
		ExpectedDigest: digest,
		Nonce:          nonce,
		DebugMode:      debug,
		Replicas:       replicas,
		Approvals:      []Approval{},
		CreatedAt:      x.Now,
		UpdatedAt:      x.Now,
	}
	spec := &DeploymentSpec{ID: dep.ID, OrgID: x.OrgID, Pivot: wire.TvcContainerSpec{
		ContainerUrl:      in.PivotContainerImageUrl,
		Path:              in.PivotPath,
		Args:              slices.Clone(in.PivotArgs),
		HasPullSecret:     in.PivotContainerEncryptedPullSecret != "",
		HealthCheckType:   in.HealthCheckType,
		HealthCheckPort:   in.HealthCheckPort,
		PublicIngressPort: in.PublicIngressPort,
	}}
	m := Manifest{Format: ManifestFormat, OrganizationID: x.OrgID, AppID: a.ID, AppName: a.Name, DeploymentID: dep.ID,
		Nonce: nonce, QuorumKey: a.QuorumPublicKey, QOSVersion: dep.QOSVersion,
		Pivot: ManifestPivot{
			ImageURL:      spec.Pivot.ContainerUrl,
			Path:          spec.Pivot.Path,
			Args:          spec.Pivot.Args,
			Digest:        digest,
			HasPullSecret: spec.Pivot.HasPullSecret,
		},
		Runtime: ManifestRuntime{HealthCheckType: string(in.HealthCheckType), HealthCheckPort: in.HealthCheckPort,
			PublicIngressPort: in.PublicIngressPort, Replicas: replicas, DebugMode: debug, EnableEgress: a.EnableEgress}}
	if m.Pivot.Args == nil {
		m.Pivot.Args = []string{}
	}
	if m.ManifestSet, err = manifestQuorum(x.Ctx, x.Tx, x.OrgID, ms); err != nil {
		return nil, err
	}
	if m.ShareSet, err = manifestQuorum(x.Ctx, x.Tx, x.OrgID, ss); err != nil {
		return nil, err
	}
	if spec.Manifest, err = json.Marshal(m); err != nil {
		return nil, apierr.Internalf(err, "encoding manifest")
	}
	if err := chargeSpec(a, spec); err != nil {
		return nil, err
	}
	if err := saveDeployment(x.Ctx, x.Tx, dep); err != nil {
		if apierr.From(err).Code == apierr.AlreadyExists {
			return nil, apierr.New(
				apierr.AlreadyExists,
				"ALREADY_EXISTS",
				"parameters.nonce: app %s already has a deployment with nonce %d",
				a.ID,
				nonce,
			)
		}
		return nil, err
	}
	if err := saveSpec(x.Ctx, x.Tx, dep, spec); err != nil {
		return nil, err
	}
	a.Deployments++
	a.MaxNonce = max(a.MaxNonce, nonce)
	a.UpdatedAt = x.Now
	if err := saveApp(x.Ctx, x.Tx, a); err != nil {
		return nil, err
	}
	return wire.CreateTvcDeploymentResult{DeploymentId: dep.ID, ManifestId: dep.ManifestID}, nil
}

// chargeSpec counts a new deployment's spec against its app's MaxDeploymentSpecBytesPerApp,
// refusing it when it would pass it.
func chargeSpec(a *App, spec *DeploymentSpec) error {
	b, err := json.Marshal(spec)
	if err != nil {
		return apierr.Internalf(err, "encoding deployment spec")
	}
	if a.SpecBytes+len(b) > MaxDeploymentSpecBytesPerApp {
		return apierr.New(
			apierr.ResourceExhausted,
			"RESOURCE_EXHAUSTED",
			"parameters.appId: an app's deployments hold at most %d bytes of pivot containers and manifests "+
				"(this one %d, the app's %d); delete the app to start over",
			MaxDeploymentSpecBytesPerApp,
			len(b),
			a.SpecBytes,
		)
	}
	a.SpecBytes += len(b)
	return nil
}

func createApprovals(x *activity.Exec, in *wire.CreateTvcManifestApprovalsIntent) (any, error) {
	const f = "parameters.approvals"
	ids, err := records.LookupIDs(x.Ctx, x.Tx, KeyManifest, in.ManifestId, KindDeployment, x.OrgID)
	if err != nil {
		return nil, err
	}
	if len(ids) != 1 {
		return nil, apierr.NotFoundf("parameters.manifestId: TVC manifest not found: %s", in.ManifestId)
	}
	dep, err := loadDeployment(x.Ctx, x.Tx, x.OrgID, ids[0])
	if err != nil {
		return nil, err
	}
	if dep.Deleted {
		return nil, precondition(
			"parameters.manifestId",
			"deployment %s is deleted; restore it before approving its manifest",
			dep.ID,
		)
	}
	switch {
	case len(in.Approvals) == 0:
		return nil, apierr.Invalid(f, "at least one approval is required")
	case len(in.Approvals) > MaxApprovalsPerCall:
		return nil, apierr.Invalid(f, "at most %d approvals at once", MaxApprovalsPerCall)
	}
	ms, err := loadSet(x.Ctx, x.Tx, x.OrgID, dep.ManifestSetID)
	if err != nil {
		return nil, apierr.Internalf(err, "deployment %s names a missing manifest set", dep.ID)
	}
	spec, err := loadSpec(x.Ctx, x.Tx, dep)
	if err != nil {
		return nil, err
	}
	out := wire.CreateTvcManifestApprovalsResult{ApprovalIds: make([]string, 0, len(in.Approvals))}
	for i, ap := range in.Approvals {
		fi := idx(f, i)
		if !slices.Contains(ms.OperatorIDs, ap.OperatorId) {
			if _, err := loadOperator(x.Ctx, x.Tx, x.OrgID, ap.OperatorId); err != nil {
				return nil, apierr.MissingOr(err, "%s.operatorId: TVC operator not found: %s", fi, ap.OperatorId)
			}
			return nil, apierr.Invalid(
				fi+".operatorId",
				"operator %s is not in the manifest set %s of this deployment",
				ap.OperatorId,
				ms.ID,
			)
		}
		if slices.ContainsFunc(dep.Approvals, func(a Approval) bool { return a.OperatorID == ap.OperatorId }) {
			return nil, apierr.New(
				apierr.AlreadyExists,
				"ALREADY_EXISTS",
				"%s.operatorId: operator %s has already approved manifest %s",
				fi,
				ap.OperatorId,
				dep.ManifestID,
			)
		}
		o, err := loadOperator(x.Ctx, x.Tx, x.OrgID, ap.OperatorId)
		if err != nil {
			return nil, apierr.Internalf(err, "manifest set %s names a missing operator", ms.ID)
		}
		k, err := ParsePublicKey(o.PublicKey)
		if err != nil {
			return nil, apierr.Internalf(err, "operator %s has an unusable public key", o.ID)
		}
		if err := k.Verify(spec.Manifest, ap.Signature); err != nil {
			return nil, apierr.Invalid(fi+".signature", "%v", err)
		}
		a := Approval{ID: id.New(), OperatorID: o.ID, Signature: hexLower(ap.Signature), CreatedAt: x.Now}
		dep.Approvals = append(dep.Approvals, a)
		out.ApprovalIds = append(out.ApprovalIds, a.ID)
	}
	dep.UpdatedAt = x.Now
	if err := saveDeployment(x.Ctx, x.Tx, dep); err != nil {
		return nil, err
	}
	return out, nil
}

// approved reports how many of the deployment's approvals count and how many are needed.
func approved(x *activity.Exec, dep *Deployment) (have, need int64, err error) {
	ms, err := loadSet(x.Ctx, x.Tx, x.OrgID, dep.ManifestSetID)
	if err != nil {
		return 0, 0, apierr.Internalf(err, "deployment %s names a missing manifest set", dep.ID)
	}
	for _, a := range dep.Approvals {
		if slices.Contains(ms.OperatorIDs, a.OperatorID) {
			have++
		}
	}
	return have, ms.Threshold, nil
}

func setLive(x *activity.Exec, in *wire.UpdateTvcAppLiveDeploymentIntent) (any, error) {
	const f = "parameters.deploymentId"
	dep, err := loadDeployment(x.Ctx, x.Tx, x.OrgID, in.DeploymentId)
	if err != nil {
		return nil, apierr.MissingOr(err, "%s: TVC deployment not found: %s", f, in.DeploymentId)
	}
	if dep.Deleted {
		return nil, precondition(f, "deployment %s is deleted; restore it before setting it live", dep.ID)
	}
	have, need, err := approved(x, dep)
	if err != nil {
		return nil, err
	}
	if have < need {
		return nil, precondition(
			f,
			"deployment %s has %d of the %d manifest approvals its manifest set requires (create_tvc_manifest_approvals)",
			dep.ID,
			have,
			need,
		)
	}
	a, err := loadApp(x.Ctx, x.Tx, x.OrgID, dep.AppID)
	if err != nil {
		return nil, apierr.Internalf(err, "deployment %s names a missing app", dep.ID)
	}
	a.LiveDeploymentID, a.UpdatedAt = dep.ID, x.Now
	if err := saveApp(x.Ctx, x.Tx, a); err != nil {
		return nil, err
	}
	return wire.UpdateTvcAppLiveDeploymentResult{}, nil
}

func deleteDeployment(x *activity.Exec, in *wire.DeleteTvcDeploymentIntent) (any, error) {
	const f = "parameters.deploymentId"
	dep, err := loadDeployment(x.Ctx, x.Tx, x.OrgID, in.DeploymentId)
	if err != nil {
		return nil, apierr.MissingOr(err, "%s: TVC deployment not found: %s", f, in.DeploymentId)
	}
	if dep.Deleted {
		return nil, precondition(f, "deployment %s is already deleted", dep.ID)
	}
	a, err := loadApp(x.Ctx, x.Tx, x.OrgID, dep.AppID)
	if err != nil {
		return nil, apierr.Internalf(err, "deployment %s names a missing app", dep.ID)
	}
	if a.LiveDeploymentID == dep.ID {
		return nil, precondition(
			f,
			"deployment %s is the live deployment of app %s; set another deployment live first, or delete the app with delete_tvc_app_and_deployments",
			dep.ID,
			a.ID,
		)
	}
	dep.Deleted, dep.UpdatedAt = true, x.Now
	if err := saveDeployment(x.Ctx, x.Tx, dep); err != nil {
		return nil, err
	}
	return wire.DeleteTvcDeploymentResult{DeploymentId: dep.ID}, nil
}

func restoreDeployment(x *activity.Exec, in *wire.RestoreTvcDeploymentIntent) (any, error) {
	const f = "parameters.deploymentId"
	dep, err := loadDeployment(x.Ctx, x.Tx, x.OrgID, in.DeploymentId)
	if err != nil {
		return nil, apierr.MissingOr(err, "%s: TVC deployment not found: %s", f, in.DeploymentId)
	}
	if !dep.Deleted {
		return nil, precondition(f, "deployment %s is not deleted", dep.ID)
	}
	dep.Deleted, dep.UpdatedAt = false, x.Now
	if err := saveDeployment(x.Ctx, x.Tx, dep); err != nil {
		return nil, err
	}
	return wire.RestoreTvcDeploymentResult{DeploymentId: dep.ID}, nil
}

func getDeployment(q *activity.Read, in *wire.GetTvcDeploymentRequest) (any, error) {
	dep, err := loadDeployment(q.Ctx, q.R, q.OrgID, in.DeploymentId)
	if err != nil {
		return nil, err
	}
	w, err := newRenderer(q.Ctx, q.R, q.OrgID).deployment(dep)
	if err != nil {
		return nil, err
	}
	return wire.GetTvcDeploymentResponse{TvcDeployment: w}, nil
}

func listDeployments(q *activity.Read, in *wire.GetTvcAppDeploymentsRequest) (any, error) {
	if _, err := loadApp(q.Ctx, q.R, q.OrgID, in.AppId); err != nil {
		return nil, err
	}
	ds, err := appDeployments(q.Ctx, q.R, q.OrgID, in.AppId)
	if err != nil {
		return nil, err
	}
	rn := newRenderer(q.Ctx, q.R, q.OrgID)
	out := wire.GetTvcAppDeploymentsResponse{TvcDeployments: make([]wire.TvcDeployment, 0, len(ds))}
	for _, d := range ds {
		w, err := rn.deployment(d)
		if err != nil {
			return nil, err
		}
		out.TvcDeployments = append(out.TvcDeployments, w)
	}
	return out, nil
}

// appStatus reports the record state of an app's deployments (see the package doc): nothing
// runs, so no replica is ever ready.
func appStatus(q *activity.Read, in *wire.GetAppStatusRequest) (any, error) {
	a, err := loadApp(q.Ctx, q.R, q.OrgID, in.AppId)
	if err != nil {
		return nil, err
	}
	ds, err := appDeployments(q.Ctx, q.R, q.OrgID, a.ID)
	if err != nil {
		return nil, err
	}
	st := wire.AppStatus{
		AppId:                a.ID,
		TargetedDeploymentId: a.LiveDeploymentID,
		Deployments:          make([]wire.DeploymentStatus, 0, len(ds)),
	}
	for _, d := range ds {
		desired := int32(d.Replicas)
		if d.Deleted {
			desired = 0
		}
		st.Deployments = append(st.Deployments, wire.DeploymentStatus{DeploymentId: d.ID, ReadyReplicas: 0,
			DesiredReplicas: desired, LastUpdatedTime: directory.Timestamp(d.UpdatedAt)})
	}
	return wire.GetAppStatusResponse{AppStatus: st}, nil
}

func sortDeployments(ds []*Deployment) {
	slices.SortFunc(ds, func(a, b *Deployment) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}
