package tvc

import (
	"encoding/hex"
	"errors"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Deps are what the operations need.
type Deps struct {
	// QOSVersions are the QuorumOS versions deployments may name, oldest first; the last is
	// the latest. Empty: any well-formed version label is recorded as given.
	QOSVersions []string
	// OperatorAccounts makes the two P-256 accounts (encryption, signing) of a wallet-backed
	// operator (wallets.Deps.TVCOperatorAccounts) and returns the wallet id and their
	// uncompressed public keys in hex.
	OperatorAccounts func(x *activity.Exec, walletName, walletID, basePath string) (madeWalletID, encrypt, sign string, err error)
}

// Register adds the operations to reg and returns the record kinds the package keeps under an
// organization (they go when a sub-organization is deleted).
func Register(reg *activity.Registry, d Deps) (owned []string) {
	reg.Submit(
		activity.Operation{
			Path:    "create_tvc_operator",
			Access:  activity.AccessRoot,
			Execute: activity.On(d.createOperator),
		},
	)
	reg.Submit(activity.Operation{Path: "create_tvc_app", Access: activity.AccessRoot, Execute: activity.On(createApp)})
	reg.Submit(
		activity.Operation{
			Path:    "create_tvc_deployment",
			Access:  activity.AccessRoot,
			Execute: activity.On(d.createDeployment),
			Redact:  activity.RedactAny(redactPullSecret, (*wire.CreateTvcDeploymentIntent)(nil)),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "create_tvc_manifest_approvals",
			Access:  activity.AccessRoot,
			Execute: activity.On(createApprovals),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "set_tvc_app_live_deployment",
			Access:  activity.AccessRoot,
			Execute: activity.On(setLive),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "delete_tvc_deployment",
			Access:  activity.AccessRoot,
			Execute: activity.On(deleteDeployment),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "restore_tvc_deployment",
			Access:  activity.AccessRoot,
			Execute: activity.On(restoreDeployment),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "delete_tvc_app_and_deployments",
			Access:  activity.AccessRoot,
			Execute: activity.On(deleteApp),
		},
	)
	reg.Query(activity.QueryOp{Path: "get_tvc_app", Execute: activity.Query(getApp)})
	reg.Query(activity.QueryOp{Path: "list_tvc_apps", Execute: activity.Query(listApps)})
	reg.Query(activity.QueryOp{Path: "get_tvc_deployment", Execute: activity.Query(getDeployment)})
	reg.Query(activity.QueryOp{Path: "list_tvc_app_deployments", Execute: activity.Query(listDeployments)})
	reg.Query(activity.QueryOp{Path: "get_tvc_qos_versions", Execute: activity.Query(d.qosVersions)})
	reg.Query(activity.QueryOp{Path: "get_app_status", Execute: activity.Query(appStatus)})
	return OwnedKinds
}

// resolveSet loads the existing set setID, or validates params and builds a new set (fresh
// holds the set's new operators; made says the set itself is new). Nothing is written.
func resolveSet(
	x *activity.Exec,
	field, setID string,
	params *wire.TvcOperatorSetParams,
) (set *OperatorSet, fresh []*Operator, made bool, err error) {
	idField, paramsField := "parameters."+field+"Id", "parameters."+field+"Params"
	switch {
	case setID != "" && params != nil:
		return nil, nil, false, apierr.Invalid(idField, "give either %s or %s, not both", field+"Id", field+"Params")
	case setID == "" && params == nil:
		return nil, nil, false, apierr.Invalid(idField, "%s or %s is required", field+"Id", field+"Params")
	case setID != "":
		s, err := loadSet(x.Ctx, x.Tx, x.OrgID, setID)
		if err != nil {
			return nil, nil, false, apierr.MissingOr(err, "%s: TVC operator set not found: %s", idField, setID)
		}
		return s, nil, false, nil
	}
	name, err := directory.CheckName(paramsField+".name", params.Name)
	if err != nil {
		return nil, nil, false, err
	}
	total := len(params.NewOperators) + len(params.ExistingOperatorIds)
	switch {
	case total == 0:
		return nil, nil, false, apierr.Invalid(
			paramsField,
			"at least one operator is required (newOperators or existingOperatorIds)",
		)
	case total > MaxOperatorsPerSet:
		return nil, nil, false, apierr.Invalid(
			paramsField,
			"at most %d operators in a set, got %d",
			MaxOperatorsPerSet,
			total,
		)
	case params.Threshold < 1 || params.Threshold > int64(total):
		return nil, nil, false, apierr.Invalid(
			paramsField+".threshold",
			"must be between 1 and the number of operators (%d), got %d",
			total,
			params.Threshold,
		)
	}
	s := &OperatorSet{ID: id.New(), OrgID: x.OrgID, Name: name, Threshold: params.Threshold, CreatedAt: x.Now}
	keys := map[string]string{} // signing public key -> field that named it
	for i, ex := range params.ExistingOperatorIds {
		f := idx(paramsField+".existingOperatorIds", i)
		o, err := loadOperator(x.Ctx, x.Tx, x.OrgID, ex)
		if err != nil {
			return nil, nil, false, apierr.MissingOr(err, "%s: TVC operator not found: %s", f, ex)
		}
		if prev, dup := keys[o.PublicKey]; dup {
			return nil, nil, false, apierr.Invalid(f, "operator %s has the same public key as %s", ex, prev)
		}
		keys[o.PublicKey] = f
		s.OperatorIDs = append(s.OperatorIDs, o.ID)
	}
	for i, p := range params.NewOperators {
		f := idx(paramsField+".newOperators", i)
		oname, err := directory.CheckName(f+".name", p.Name)
		if err != nil {
			return nil, nil, false, err
		}
		k, err := ParsePublicKey(p.PublicKey)
		if err != nil {
			return nil, nil, false, apierr.Invalid(f+".publicKey", "%v", err)
		}
		if prev, dup := keys[k.Hex]; dup {
			return nil, nil, false, apierr.Invalid(
				f+".publicKey",
				"the same public key is already in this set (%s)",
				prev,
			)
		}
		keys[k.Hex] = f
		o := &Operator{ID: id.New(), OrgID: x.OrgID, Name: oname, PublicKey: k.Hex, CreatedAt: x.Now}
		fresh = append(fresh, o)
		s.OperatorIDs = append(s.OperatorIDs, o.ID)
	}
	return s, fresh, true, nil
}

func createApp(x *activity.Exec, in *wire.CreateTvcAppIntent) (any, error) {
	name, err := directory.CheckName("parameters.name", in.Name)
	if err != nil {
		return nil, err
	}
	qk, err := ParsePublicKey(in.QuorumPublicKey)
	if err != nil {
		return nil, apierr.Invalid("parameters.quorumPublicKey", "%v", err)
	}
	n, err := x.Tx.Count(x.Ctx, KindApp, x.OrgID, MaxAppsPerOrg)
	if err != nil {
		return nil, apierr.Internalf(err, "counting TVC apps")
	}
	if n >= MaxAppsPerOrg {
		return nil, apierr.New(
			apierr.ResourceExhausted,
			"RESOURCE_EXHAUSTED",
			"an organization holds at most %d TVC apps",
			MaxAppsPerOrg,
		)
	}
	ms, msOps, msNew, err := resolveSet(x, "manifestSet", in.ManifestSetId, in.ManifestSetParams)
	if err != nil {
		return nil, err
	}
	ss, ssOps, ssNew, err := resolveSet(x, "shareSet", in.ShareSetId, in.ShareSetParams)
	if err != nil {
		return nil, err
	}
	for _, o := range append(msOps, ssOps...) {
		if err := records.Save(x.Ctx, x.Tx, KindOperator, o.ID, o.OrgID, o.CreatedAt, o.CreatedAt, o); err != nil {
			return nil, err
		}
	}
	for _, s := range []*OperatorSet{ms, ss} {
		if s == ms && !msNew || s == ss && !ssNew {
			continue
		}
		if err := records.Save(x.Ctx, x.Tx, KindOperatorSet, s.ID, s.OrgID, s.CreatedAt, s.CreatedAt, s); err != nil {
			return nil, err
		}
	}
	a := &App{
		ID:              id.New(),
		OrgID:           x.OrgID,
		Name:            name,
		QuorumPublicKey: qk.Hex,
		ManifestSetID:   ms.ID,
		ShareSetID:      ss.ID,
		EnableEgress: in.EnableEgress != nil &&
			*in.EnableEgress,
		EnableDebugModeDeployments: in.EnableDebugModeDeployments != nil && *in.EnableDebugModeDeployments,
		CreatedAt:                  x.Now,
		UpdatedAt:                  x.Now,
	}
	if err := saveApp(x.Ctx, x.Tx, a); err != nil {
		if apierr.From(err).Code == apierr.AlreadyExists {
			return nil, apierr.New(
				apierr.AlreadyExists,
				"ALREADY_EXISTS",
				"parameters.name: a TVC app named %q already exists",
				name,
			)
		}
		return nil, err
	}
	return wire.CreateTvcAppResult{AppId: a.ID,
		ManifestSetId: ms.ID, ManifestSetOperatorIds: ms.OperatorIDs, ManifestSetThreshold: ms.Threshold,
		ShareSetId: ss.ID, ShareSetOperatorIds: ss.OperatorIDs, ShareSetThreshold: ss.Threshold}, nil
}

func deleteApp(x *activity.Exec, in *wire.DeleteTvcAppAndDeploymentsIntent) (any, error) {
	a, err := loadApp(x.Ctx, x.Tx, x.OrgID, in.AppId)
	if err != nil {
		return nil, apierr.MissingOr(err, "parameters.appId: TVC app not found: %s", in.AppId)
	}
	ds, err := appDeployments(x.Ctx, x.Tx, x.OrgID, a.ID)
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		if err := records.Delete(x.Ctx, x.Tx, KindDeployment, d.ID); err != nil {
			return nil, err
		}
		if d.SpecApart {
			if err := records.Delete(x.Ctx, x.Tx, KindDeploymentSpec, d.ID); err != nil {
				return nil, err
			}
		}
	}
	if err := records.Delete(x.Ctx, x.Tx, KindApp, a.ID); err != nil {
		return nil, err
	}
	if err := collectSets(x, a); err != nil {
		return nil, err
	}
	return wire.DeleteTvcAppAndDeploymentsResult{AppId: a.ID}, nil
}

// collectSets removes the deleted app's operator sets that no remaining app uses, and their
// operators that no remaining set names, so creating and deleting apps cannot grow the
// organization's records without bound (there is no operation that deletes a set).
func collectSets(x *activity.Exec, deleted *App) error {
	apps, err := records.List[App](x.Ctx, x.Tx, KindApp, x.OrgID, store.ListOptions{})
	if err != nil {
		return err
	}
	usedSets := map[string]bool{}
	for _, a := range apps {
		usedSets[a.ManifestSetID], usedSets[a.ShareSetID] = true, true
	}
	var orphans []string // operators of removed sets
	for _, sid := range slices.Compact([]string{deleted.ManifestSetID, deleted.ShareSetID}) {
		if usedSets[sid] {
			continue
		}
		s, err := loadSet(x.Ctx, x.Tx, x.OrgID, sid)
		if err != nil {
			return err
		}
		if err := records.Delete(x.Ctx, x.Tx, KindOperatorSet, sid); err != nil {
			return err
		}
		orphans = append(orphans, s.OperatorIDs...)
	}
	if len(orphans) == 0 {
		return nil
	}
	sets, err := records.List[OperatorSet](x.Ctx, x.Tx, KindOperatorSet, x.OrgID, store.ListOptions{})
	if err != nil {
		return err
	}
	usedOps := map[string]bool{}
	for _, s := range sets {
		for _, oid := range s.OperatorIDs {
			usedOps[oid] = true
		}
	}
	for _, oid := range orphans {
		if usedOps[oid] {
			continue
		}
		usedOps[oid] = true // an operator named by both removed sets goes once
		if o, err := loadOperator(x.Ctx, x.Tx, x.OrgID, oid); err == nil && o.WalletID != "" {
			continue // made by create_tvc_operator: kept for the next app
		}
		if err := records.Delete(x.Ctx, x.Tx, KindOperator, oid); err != nil {
			return err
		}
	}
	return nil
}

func getApp(q *activity.Read, in *wire.GetTvcAppRequest) (any, error) {
	a, err := loadApp(q.Ctx, q.R, q.OrgID, in.TvcAppId)
	if err != nil {
		return nil, err
	}
	w, err := newRenderer(q.Ctx, q.R, q.OrgID).app(a)
	if err != nil {
		return nil, err
	}
	return wire.GetTvcAppResponse{TvcApp: w}, nil
}

func listApps(q *activity.Read, _ *wire.GetTvcAppsRequest) (any, error) {
	as, err := records.List[App](q.Ctx, q.R, KindApp, q.OrgID, store.ListOptions{})
	if err != nil {
		return nil, err
	}
	rn := newRenderer(q.Ctx, q.R, q.OrgID)
	out := wire.GetTvcAppsResponse{TvcApps: make([]wire.TvcApp, 0, len(as))}
	for _, a := range as {
		w, err := rn.app(a)
		if err != nil {
			return nil, err
		}
		out.TvcApps = append(out.TvcApps, w)
	}
	return out, nil
}

func (d Deps) qosVersions(_ *activity.Read, _ *wire.GetTvcQosVersionsRequest) (any, error) {
	out := wire.GetTvcQosVersionsResponse{AvailableVersions: append([]string{}, d.QOSVersions...)}
	if n := len(d.QOSVersions); n > 0 {
		out.LatestVersion = d.QOSVersions[n-1]
	}
	return out, nil
}

// CheckQOSVersions validates an operator's configured QOS version list.
func CheckQOSVersions(vs []string) error {
	seen := map[string]bool{}
	for _, v := range vs {
		if !ValidQOSVersion(v) {
			return errors.New("QOS version " + quote(v) + " is not a label of 1-64 characters [A-Za-z0-9._+-]")
		}
		if seen[v] {
			return errors.New("QOS version " + quote(v) + " is listed twice")
		}
		seen[v] = true
	}
	return nil
}

func quote(s string) string {
	if len(s) > 70 {
		s = s[:70] + "…"
	}
	return "\"" + strings.ReplaceAll(s, "\"", "\\\"") + "\""
}

// hexLower normalises a hex signature for storage.
func hexLower(s string) string {
	b, err := hex.DecodeString(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"))
	if err != nil {
		return s
	}
	return hex.EncodeToString(b)
}
