package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/ops/tvc"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

// tvcOperator is a test operator's P-256 key pair.
type tvcOperator struct {
	priv *ecdsa.PrivateKey
	pub  string // uncompressed hex
}

func newTVCOperator(t *testing.T) tvcOperator {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := k.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return tvcOperator{priv: k, pub: hex.EncodeToString(b)}
}

// sign returns the operator's approval of manifest: hex r||s (raw) or DER.
func (o tvcOperator) sign(t *testing.T, manifest []byte, der bool) string {
	t.Helper()
	d := sha256.Sum256(manifest)
	if der {
		sig, err := ecdsa.SignASN1(rand.Reader, o.priv, d[:])
		if err != nil {
			t.Fatal(err)
		}
		return hex.EncodeToString(sig)
	}
	r, s, err := ecdsa.Sign(rand.Reader, o.priv, d[:])
	if err != nil {
		t.Fatal(err)
	}
	var out [64]byte
	r.FillBytes(out[:32])
	s.FillBytes(out[32:])
	return hex.EncodeToString(out[:])
}

func tvcDeploymentParams(appID string) map[string]any {
	return map[string]any{"appId": appID, "qosVersion": "v0.4.0", "pivotContainerImageUrl": "ghcr.io/acme/pivot:1.2.3",
		"pivotPath": "/app/pivot", "pivotArgs": []string{"--port", "3000"}, "expectedPivotDigest": strings.Repeat("ab", 32),
		"healthCheckType": "TVC_HEALTH_CHECK_TYPE_HTTP", "healthCheckPort": 3001, "publicIngressPort": 3000}
}

// manifestOf reads a deployment's manifest bytes as a client would.
func manifestOf(t *testing.T, c *servertest.Client, depID string) ([]byte, servertest.Response) {
	t.Helper()
	g := c.Query("get_tvc_deployment", map[string]any{"deploymentId": depID})
	servertest.MustOK(t, g)
	raw, err := base64.StdEncoding.DecodeString(g.Str("tvcDeployment", "manifest", "manifest"))
	if err != nil || len(raw) == 0 {
		t.Fatalf("manifest: %v: %s", err, g.Raw)
	}
	return raw, g
}

func TestTVCLifecycle(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	op1, op2, op3, outsider := newTVCOperator(t), newTVCOperator(t), newTVCOperator(t), newTVCOperator(t)

	// An app with a new 2-of-2 manifest set and a new 1-of-1 share set.
	r := root.Submit(
		"create_tvc_app",
		"ACTIVITY_TYPE_CREATE_TVC_APP",
		map[string]any{"name": "signer", "quorumPublicKey": op3.pub,
			"manifestSetParams": map[string]any{"name": "approvers", "threshold": 2, "newOperators": []any{
				map[string]any{
					"name":      "alice",
					"publicKey": op1.pub,
				}, map[string]any{"name": "bob", "publicKey": op2.pub}}},
			"shareSetParams": map[string]any{
				"name":         "holders",
				"threshold":    1,
				"newOperators": []any{map[string]any{"name": "carol", "publicKey": op3.pub}},
			},
			"enableEgress": true},
	)
	servertest.MustOK(t, r)
	res := func(r servertest.Response, f string) string {
		return r.Str("activity", "result", "createTvcAppResult", f)
	}
	appID, manifestSetID := res(r, "appId"), res(r, "manifestSetId")
	var msOps, ssOps []string
	_ = json.Unmarshal([]byte(res(r, "manifestSetOperatorIds")), &msOps)
	_ = json.Unmarshal([]byte(res(r, "shareSetOperatorIds")), &ssOps)
	if appID == "" || len(msOps) != 2 || len(ssOps) != 1 || res(r, "manifestSetThreshold") != "2" ||
		res(r, "shareSetThreshold") != "1" {
		t.Fatalf("create_tvc_app result: %s", r.Raw)
	}
	// Names are unique in the organization.
	dup := root.Submit(
		"create_tvc_app",
		"ACTIVITY_TYPE_CREATE_TVC_APP",
		map[string]any{"name": "signer", "quorumPublicKey": op3.pub,
			"manifestSetId": manifestSetID, "shareSetId": manifestSetID},
	)
	servertest.WantError(t, dup, http.StatusConflict, 6, "parameters.name")

	// A second app reuses the manifest set and names an existing operator for its share set.
	r2 := root.Submit(
		"create_tvc_app",
		"ACTIVITY_TYPE_CREATE_TVC_APP",
		map[string]any{"name": "second", "quorumPublicKey": op3.pub,
			"manifestSetId": manifestSetID, "shareSetParams": map[string]any{"name": "reuse", "threshold": 1, "existingOperatorIds": []string{ssOps[0]}},
			"enableDebugModeDeployments": true},
	)
	servertest.MustOK(t, r2)
	app2 := res(r2, "appId")
	if res(r2, "manifestSetId") != manifestSetID || !strings.Contains(res(r2, "shareSetOperatorIds"), ssOps[0]) {
		t.Fatalf("second app: %s", r2.Raw)
	}

	g := root.Query("get_tvc_app", map[string]any{"tvcAppId": appID})
	servertest.MustOK(t, g)
	if g.Str("tvcApp", "name") != "signer" || g.Str("tvcApp", "quorumPublicKey") != op3.pub ||
		g.Str("tvcApp", "enableEgress") != "true" ||
		g.Str("tvcApp", "manifestSet", "operators", "1", "publicKey") != op2.pub ||
		g.Str("tvcApp", "shareSet", "threshold") != "1" ||
		g.Str("tvcApp", "publicDomain") != "app-"+appID+tvc.PublicDomainSuffix ||
		g.Str("tvcApp", "liveDeploymentId") != "" ||
		g.Str("tvcApp", "organizationId") != created.OrganizationID ||
		g.Str("tvcApp", "enableDebugModeDeployments") != "false" {
		t.Fatalf("get_tvc_app: %s", g.Raw)
	}
	l := root.Query("list_tvc_apps", nil)
	servertest.MustOK(t, l)
	if n := len(l.Body["tvcApps"].([]any)); n != 2 {
		t.Fatalf("list_tvc_apps: %s", l.Raw)
	}

	// A deployment records the container spec and a manifest derived from it.
	dparams := tvcDeploymentParams(appID)
	dparams["pivotContainerEncryptedPullSecret"] = "c2VjcmV0LWJsb2I="
	d := root.Submit("create_tvc_deployment", "ACTIVITY_TYPE_CREATE_TVC_DEPLOYMENT", dparams)
	servertest.MustOK(t, d)
	dep1, manifestID := d.Str(
		"activity",
		"result",
		"createTvcDeploymentResult",
		"deploymentId",
	), d.Str(
		"activity",
		"result",
		"createTvcDeploymentResult",
		"manifestId",
	)
	if dep1 == "" || manifestID == "" || strings.Contains(string(d.Raw), "c2VjcmV0LWJsb2I=") {
		t.Fatalf("create_tvc_deployment (the pull secret must not be echoed): %s", d.Raw)
	}
	manifest, gd := manifestOf(t, root, dep1)
	if gd.Str("tvcDeployment", "appId") != appID || gd.Str("tvcDeployment", "manifest", "id") != manifestID ||
		gd.Str(
			"tvcDeployment",
			"pivotContainer",
			"hasPullSecret",
		) != "true" || gd.Str("tvcDeployment", "pivotContainer", "args", "1") != "3000" ||
		gd.Str("tvcDeployment", "delete") != "false" || gd.Str("tvcDeployment", "manifestSet", "id") != manifestSetID ||
		gd.Str("tvcDeployment", "qosVersion") != "v0.4.0" || gd.Str("tvcDeployment", "manifestApprovals") != "[]" {
		t.Fatalf("get_tvc_deployment: %s", gd.Raw)
	}
	var m tvc.Manifest
	if err := json.Unmarshal(manifest, &m); err != nil || m.Format != tvc.ManifestFormat || m.DeploymentID != dep1 ||
		m.Pivot.Digest != strings.Repeat("ab", 32) ||
		len(m.ManifestSet.Members) != 2 ||
		m.ManifestSet.Threshold != 2 ||
		!m.Runtime.EnableEgress ||
		m.Runtime.Replicas != 1 ||
		m.Nonce != h.Now().Unix() {
		t.Fatalf("manifest %s: %v", manifest, err)
	}

	// Each helper moves the clock on, so a repeated request is a new activity, not a replay.
	live := func(dep string) servertest.Response {
		h.Advance(time.Millisecond)
		return root.Submit(
			"set_tvc_app_live_deployment",
			"ACTIVITY_TYPE_UPDATE_TVC_APP_LIVE_DEPLOYMENT",
			map[string]any{"deploymentId": dep},
		)
	}
	approve := func(approvals ...map[string]any) servertest.Response {
		return root.Submit(
			"create_tvc_manifest_approvals",
			"ACTIVITY_TYPE_CREATE_TVC_MANIFEST_APPROVALS",
			map[string]any{"manifestId": manifestID, "approvals": approvals},
		)
	}
	servertest.WantError(t, live(dep1), http.StatusBadRequest, 9, "0 of the 2 manifest approvals")

	// Approvals: only valid signatures by members of the manifest set, once each.
	servertest.WantError(
		t,
		approve(map[string]any{"operatorId": msOps[0], "signature": outsider.sign(t, manifest, false)}),
		http.StatusBadRequest,
		3,
		"parameters.approvals[0].signature",
	)
	servertest.WantError(
		t,
		approve(map[string]any{"operatorId": msOps[0], "signature": op1.sign(t, []byte("something else"), false)}),
		http.StatusBadRequest,
		3,
		"parameters.approvals[0].signature",
	)
	servertest.WantError(
		t,
		approve(map[string]any{"operatorId": msOps[0], "signature": "zz"}),
		http.StatusBadRequest,
		3,
		"parameters.approvals[0].signature",
	)
	servertest.WantError(
		t,
		approve(map[string]any{"operatorId": ssOps[0], "signature": op3.sign(t, manifest, false)}),
		http.StatusBadRequest,
		3,
		"not in the manifest set",
	)
	servertest.WantError(
		t,
		approve(
			map[string]any{
				"operatorId": "5b1c6a0e-0000-4000-8000-000000000000",
				"signature":  op1.sign(t, manifest, false),
			},
		),
		http.StatusNotFound,
		5,
		"parameters.approvals[0].operatorId",
	)
	// A batch with one bad approval stores none of it.
	servertest.WantError(t, approve(
		map[string]any{"operatorId": msOps[0], "signature": op1.sign(t, manifest, false)},
		map[string]any{
			"operatorId": msOps[1],
			"signature":  op1.sign(t, manifest, false),
		},
	), http.StatusBadRequest, 3, "parameters.approvals[1].signature")
	a := approve(map[string]any{"operatorId": msOps[0], "signature": op1.sign(t, manifest, false)})
	servertest.MustOK(t, a)
	servertest.WantError(
		t,
		approve(map[string]any{"operatorId": msOps[0], "signature": op1.sign(t, manifest, true)}),
		http.StatusConflict,
		6,
		"already approved",
	)
	servertest.WantError(t, live(dep1), http.StatusBadRequest, 9, "1 of the 2 manifest approvals")
	servertest.MustOK(t, approve(map[string]any{"operatorId": msOps[1], "signature": op2.sign(t, manifest, true)}))
	_, gd = manifestOf(t, root, dep1)
	if gd.Str(
		"tvcDeployment",
		"manifestApprovals",
		"0",
		"id",
	) != a.Str(
		"activity",
		"result",
		"createTvcManifestApprovalsResult",
		"approvalIds",
		"0",
	) ||
		gd.Str("tvcDeployment", "manifestApprovals", "1", "operator", "name") != "bob" ||
		gd.Str("tvcDeployment", "manifestApprovals", "0", "manifestId") != manifestID {
		t.Fatalf("approvals: %s", gd.Raw)
	}
	servertest.MustOK(t, live(dep1))
	if g := root.Query("get_tvc_app", map[string]any{"tvcAppId": appID}); g.Str("tvcApp", "liveDeploymentId") != dep1 {
		t.Fatalf("live deployment: %s", g.Raw)
	}

	// The live deployment cannot be deleted.
	del := func(dep string) servertest.Response {
		h.Advance(time.Millisecond)
		return root.Submit(
			"delete_tvc_deployment",
			"ACTIVITY_TYPE_DELETE_TVC_DEPLOYMENT",
			map[string]any{"deploymentId": dep},
		)
	}
	restore := func(dep string) servertest.Response {
		h.Advance(time.Millisecond)
		return root.Submit(
			"restore_tvc_deployment",
			"ACTIVITY_TYPE_RESTORE_TVC_DEPLOYMENT",
			map[string]any{"deploymentId": dep},
		)
	}
	servertest.WantError(t, del(dep1), http.StatusBadRequest, 9, "is the live deployment")

	// A second deployment in the same second gets a later nonce; it can be deleted and restored.
	p2 := tvcDeploymentParams(appID)
	p2["replicas"] = 3
	d2 := root.Submit("create_tvc_deployment", "ACTIVITY_TYPE_CREATE_TVC_DEPLOYMENT", p2)
	servertest.MustOK(t, d2)
	dep2 := d2.Str("activity", "result", "createTvcDeploymentResult", "deploymentId")
	m2, _ := manifestOf(t, root, dep2)
	var mm tvc.Manifest
	_ = json.Unmarshal(m2, &mm)
	if mm.Nonce != m.Nonce+1 || mm.Runtime.Replicas != 3 {
		t.Fatalf("second manifest: %s", m2)
	}
	explicit := tvcDeploymentParams(appID)
	explicit["nonce"] = m.Nonce
	servertest.WantError(
		t,
		root.Submit("create_tvc_deployment", "ACTIVITY_TYPE_CREATE_TVC_DEPLOYMENT", explicit),
		http.StatusConflict,
		6,
		"parameters.nonce",
	)

	servertest.MustOK(t, del(dep2))
	servertest.WantError(t, del(dep2), http.StatusBadRequest, 9, "already deleted")
	servertest.WantError(t, live(dep2), http.StatusBadRequest, 9, "is deleted")
	d2Manifest := root.Query("get_tvc_deployment", map[string]any{"deploymentId": dep2}).
		Str("tvcDeployment", "manifest", "id")
	servertest.WantError(
		t,
		root.Submit(
			"create_tvc_manifest_approvals",
			"ACTIVITY_TYPE_CREATE_TVC_MANIFEST_APPROVALS",
			map[string]any{"manifestId": d2Manifest,
				"approvals": []any{
					map[string]any{"operatorId": msOps[0], "signature": op1.sign(t, m2, false)},
				}},
		),
		http.StatusBadRequest,
		9,
		"is deleted",
	)
	if g := root.Query("get_tvc_deployment", map[string]any{"deploymentId": dep2}); g.Str(
		"tvcDeployment",
		"delete",
	) != "true" {
		t.Fatalf("deleted deployment: %s", g.Raw)
	}

	// The status is the record state: nothing ever runs.
	st := root.Query("get_app_status", map[string]any{"appId": appID})
	servertest.MustOK(t, st)
	if st.Str("appStatus", "targetedDeploymentId") != dep1 ||
		st.Str("appStatus", "deployments", "0", "deploymentId") != dep1 ||
		st.Str("appStatus", "deployments", "0", "desiredReplicas") != "1" ||
		st.Str("appStatus", "deployments", "0", "readyReplicas") != "0" ||
		st.Str("appStatus", "deployments", "1", "desiredReplicas") != "0" {
		t.Fatalf("get_app_status: %s", st.Raw)
	}

	servertest.MustOK(t, restore(dep2))
	servertest.WantError(t, restore(dep2), http.StatusBadRequest, 9, "is not deleted")
	ld := root.Query("list_tvc_app_deployments", map[string]any{"appId": appID})
	servertest.MustOK(t, ld)
	if ds := ld.Body["tvcDeployments"].([]any); len(ds) != 2 || ld.Str("tvcDeployments", "0", "id") != dep1 ||
		ld.Str("tvcDeployments", "1", "delete") != "false" {
		t.Fatalf("list_tvc_app_deployments: %s", ld.Raw)
	}
	if st := root.Query("get_app_status", map[string]any{"appId": appID}); st.Str(
		"appStatus",
		"deployments",
		"1",
		"desiredReplicas",
	) != "3" {
		t.Fatalf("restored status: %s", st.Raw)
	}

	// unseen: the app and its first deployment are not found by c.
	unseen := func(c *servertest.Client) {
		t.Helper()
		servertest.WantError(t, c.Query("get_tvc_app", map[string]any{"tvcAppId": appID}), http.StatusNotFound, 5,
			"TVC app not found")
		servertest.WantError(t, c.Query("get_tvc_deployment", map[string]any{"deploymentId": dep1}),
			http.StatusNotFound, 5, "TVC deployment not found")
	}
	// Another organization sees none of it and cannot deploy to it.
	other, _ := h.RootOrg("Other")
	unseen(other)
	servertest.WantError(
		t,
		other.Submit("create_tvc_deployment", "ACTIVITY_TYPE_CREATE_TVC_DEPLOYMENT", tvcDeploymentParams(appID)),
		http.StatusNotFound,
		5,
		"parameters.appId",
	)
	servertest.WantError(
		t,
		other.Submit(
			"delete_tvc_deployment",
			"ACTIVITY_TYPE_DELETE_TVC_DEPLOYMENT",
			map[string]any{"deploymentId": dep2},
		),
		http.StatusNotFound,
		5,
		"parameters.deploymentId",
	)
	servertest.WantError(
		t,
		other.Submit(
			"create_tvc_app",
			"ACTIVITY_TYPE_CREATE_TVC_APP",
			map[string]any{"name": "x", "quorumPublicKey": op3.pub,
				"manifestSetId": manifestSetID, "shareSetId": manifestSetID},
		),
		http.StatusNotFound,
		5,
		"parameters.manifestSetId",
	)
	if l := other.Query("list_tvc_apps", nil); l.Str("tvcApps") != "[]" {
		t.Fatalf("other org's apps: %s", l.Raw)
	}

	// Debug-mode deployments only on apps that allow them.
	dbg := tvcDeploymentParams(appID)
	dbg["debugMode"] = true
	servertest.WantError(
		t,
		root.Submit("create_tvc_deployment", "ACTIVITY_TYPE_CREATE_TVC_DEPLOYMENT", dbg),
		http.StatusBadRequest,
		3,
		"parameters.debugMode",
	)
	dbg["appId"] = app2
	servertest.MustOK(t, root.Submit("create_tvc_deployment", "ACTIVITY_TYPE_CREATE_TVC_DEPLOYMENT", dbg))

	// Deleting the app takes its deployments; the shared operator sets stay for the other app.
	da := root.Submit(
		"delete_tvc_app_and_deployments",
		"ACTIVITY_TYPE_DELETE_TVC_APP_AND_DEPLOYMENTS",
		map[string]any{"appId": appID},
	)
	servertest.MustOK(t, da)
	if da.Str("activity", "result", "deleteTvcAppAndDeploymentsResult", "appId") != appID {
		t.Fatalf("delete app: %s", da.Raw)
	}
	unseen(root)
	servertest.WantError(
		t,
		root.Query("list_tvc_app_deployments", map[string]any{"appId": appID}),
		http.StatusNotFound,
		5,
		"TVC app not found",
	)
	h.Advance(time.Millisecond)
	servertest.WantError(
		t,
		root.Submit(
			"delete_tvc_app_and_deployments",
			"ACTIVITY_TYPE_DELETE_TVC_APP_AND_DEPLOYMENTS",
			map[string]any{"appId": appID},
		),
		http.StatusNotFound,
		5,
		"parameters.appId",
	)
	if g := root.Query("get_tvc_app", map[string]any{"tvcAppId": app2}); g.Str(
		"tvcApp",
		"manifestSet",
		"operators",
		"0",
		"name",
	) != "alice" {
		t.Fatalf("second app after delete: %s", g.Raw)
	}
	// The first app's own share set went with it; its operator carol stays, named by the
	// second app's share set. Deleting the second app leaves no sets or operators behind.
	count := func(kind string) int {
		var n int
		if err := h.Server.Store.View(context.Background(), func(rd store.Reader) (err error) {
			n, err = rd.Count(context.Background(), kind, created.OrganizationID, 0)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if s, o := count(tvc.KindOperatorSet), count(tvc.KindOperator); s != 2 || o != 3 {
		t.Fatalf("after deleting the first app: %d sets, %d operators", s, o)
	}
	h.Advance(time.Millisecond)
	servertest.MustOK(
		t,
		root.Submit(
			"delete_tvc_app_and_deployments",
			"ACTIVITY_TYPE_DELETE_TVC_APP_AND_DEPLOYMENTS",
			map[string]any{"appId": app2},
		),
	)
	for _, kind := range tvc.OwnedKinds {
		if n := count(kind); n != 0 {
			t.Fatalf("%d %s records left after deleting every app", n, kind)
		}
	}

	// Without configured versions, any version label is recorded and none is advertised.
	q := root.Query("get_tvc_qos_versions", nil)
	servertest.MustOK(t, q)
	if q.Str("availableVersions") != "[]" || q.Str("latestVersion") != "" {
		t.Fatalf("get_tvc_qos_versions: %s", q.Raw)
	}
}

func TestTVCValidation(t *testing.T) {
	h := servertest.New(
		t,
		servertest.WithConfig(func(c *server.Config) { c.TVCQOSVersions = []string{"v0.3.0", "v0.4.0"} }),
	)
	root, _ := h.RootOrg("Acme")
	op1, op2 := newTVCOperator(t), newTVCOperator(t)
	set := func(threshold int, ops ...tvcOperator) map[string]any {
		var n []any
		for i, o := range ops {
			n = append(n, map[string]any{"name": "op" + strconv.Itoa(i), "publicKey": o.pub})
		}
		return map[string]any{"name": "set", "threshold": threshold, "newOperators": n}
	}
	appParams := func() map[string]any {
		return map[string]any{
			"name":              "app",
			"quorumPublicKey":   op1.pub,
			"manifestSetParams": set(1, op1),
			"shareSetParams":    set(1, op2),
		}
	}
	r := root.Submit("create_tvc_app", "ACTIVITY_TYPE_CREATE_TVC_APP", appParams())
	servertest.MustOK(t, r)
	appID := r.Str("activity", "result", "createTvcAppResult", "appId")
	msID := r.Str("activity", "result", "createTvcAppResult", "manifestSetId")
	opID := r.Str("activity", "result", "createTvcAppResult", "manifestSetOperatorIds", "0")

	// The configured QOS versions are advertised, the last as the latest.
	q := root.Query("get_tvc_qos_versions", nil)
	servertest.MustOK(t, q)
	if q.Str("availableVersions") != `["v0.3.0","v0.4.0"]` || q.Str("latestVersion") != "v0.4.0" {
		t.Fatalf("get_tvc_qos_versions: %s", q.Raw)
	}

	missing := "5b1c6a0e-0000-4000-8000-000000000000"
	compressed := func(o tvcOperator) string {
		b, _ := hex.DecodeString(o.pub)
		return hex.EncodeToString(
			elliptic.MarshalCompressed(elliptic.P256(), new(big.Int).SetBytes(b[1:33]), new(big.Int).SetBytes(b[33:])),
		)
	}
	for _, tc := range []struct {
		name   string
		edit   func(p map[string]any)
		status int
		code   int
		substr string
	}{
		{"name missing", func(p map[string]any) { delete(p, "name") }, 400, 3, "parameters.name"},
		{"name blank", func(p map[string]any) { p["name"] = "   " }, 400, 3, "parameters.name"},
		{"name too long", func(p map[string]any) { p["name"] = strings.Repeat("n", directory.MaxNameLength+1) }, 400, 3, "parameters.name"},
		{"name with control character", func(p map[string]any) { p["name"] = "a\nb" }, 400, 3, "parameters.name"},
		{"quorum key missing", func(p map[string]any) { delete(p, "quorumPublicKey") }, 400, 3, "parameters.quorumPublicKey"},
		{"quorum key not hex", func(p map[string]any) { p["quorumPublicKey"] = "xyz" }, 400, 3, "parameters.quorumPublicKey"},
		{"quorum key off curve", func(p map[string]any) { p["quorumPublicKey"] = "04" + strings.Repeat("11", 64) }, 400, 3, "parameters.quorumPublicKey"},
		{"quorum key wrong length", func(p map[string]any) { p["quorumPublicKey"] = op1.pub[:60] }, 400, 3, "parameters.quorumPublicKey"},
		{"manifest set both", func(p map[string]any) { p["manifestSetId"] = msID }, 400, 3, "parameters.manifestSetId"},
		{"manifest set neither", func(p map[string]any) { delete(p, "manifestSetParams") }, 400, 3, "parameters.manifestSetId"},
		{"share set neither", func(p map[string]any) { delete(p, "shareSetParams") }, 400, 3, "parameters.shareSetId"},
		{"manifest set unknown", func(p map[string]any) { delete(p, "manifestSetParams"); p["manifestSetId"] = missing }, 404, 5, "parameters.manifestSetId"},
		{"set name missing", func(p map[string]any) { delete(p["manifestSetParams"].(map[string]any), "name") }, 400, 3, "parameters.manifestSetParams.name"},
		{"set empty", func(p map[string]any) { delete(p["manifestSetParams"].(map[string]any), "newOperators") }, 400, 3, "at least one operator"},
		{"threshold zero", func(p map[string]any) { p["manifestSetParams"].(map[string]any)["threshold"] = 0 }, 400, 3, "parameters.manifestSetParams.threshold"},
		{"threshold above size", func(p map[string]any) { p["shareSetParams"] = set(3, op1, op2) }, 400, 3, "parameters.shareSetParams.threshold"},
		{"operator name missing", func(p map[string]any) {
			p["manifestSetParams"].(map[string]any)["newOperators"] = []any{map[string]any{"publicKey": op1.pub}}
		}, 400, 3, "parameters.manifestSetParams.newOperators[0].name"},
		{"operator key bad", func(p map[string]any) {
			p["manifestSetParams"].(map[string]any)["newOperators"] = []any{map[string]any{"name": "x", "publicKey": "04"}}
		}, 400, 3, "parameters.manifestSetParams.newOperators[0].publicKey"},
		{"operator key twice in a set", func(p map[string]any) { p["manifestSetParams"] = set(1, op1, op1) }, 400, 3, "parameters.manifestSetParams.newOperators[1].publicKey"},
		{"existing operator unknown", func(p map[string]any) {
			p["shareSetParams"] = map[string]any{"name": "s", "threshold": 1, "existingOperatorIds": []string{missing}}
		}, 404, 5, "parameters.shareSetParams.existingOperatorIds[0]"},
		{"existing operator and same new key", func(p map[string]any) {
			p["shareSetParams"] = map[string]any{"name": "s", "threshold": 1, "existingOperatorIds": []string{opID}, "newOperators": []any{map[string]any{"name": "again", "publicKey": op1.pub}}}
		}, 400, 3, "parameters.shareSetParams.newOperators[0].publicKey"},
		{"too many operators", func(p map[string]any) {
			var ops []tvcOperator
			for range tvc.MaxOperatorsPerSet + 1 {
				ops = append(ops, op1)
			}
			p["manifestSetParams"] = set(1, ops...)
		}, 400, 3, "at most 32 operators"},
		{"duplicate name", func(p map[string]any) {}, 409, 6, "parameters.name"},
	} {
		t.Run("create_tvc_app/"+tc.name, func(t *testing.T) {
			p := appParams()
			tc.edit(p)
			h.Advance(time.Millisecond)
			servertest.WantError(
				t,
				root.Submit("create_tvc_app", "ACTIVITY_TYPE_CREATE_TVC_APP", p),
				tc.status,
				tc.code,
				tc.substr,
			)
		})
	}
	// Compressed keys and QuorumOS key pairs (encryption point, then signing point) are accepted.
	p := appParams()
	p["name"], p["quorumPublicKey"] = "keys", op1.pub+op2.pub
	p["manifestSetParams"].(map[string]any)["newOperators"] = []any{
		map[string]any{"name": "c", "publicKey": compressed(op1)},
	}
	servertest.MustOK(t, root.Submit("create_tvc_app", "ACTIVITY_TYPE_CREATE_TVC_APP", p))

	for _, tc := range []struct {
		name   string
		edit   func(p map[string]any)
		status int
		code   int
		substr string
	}{
		{"app missing", func(p map[string]any) { delete(p, "appId") }, 400, 3, "parameters.appId"},
		{"app unknown", func(p map[string]any) { p["appId"] = missing }, 404, 5, "parameters.appId"},
		{"qos version missing", func(p map[string]any) { delete(p, "qosVersion") }, 400, 3, "parameters.qosVersion"},
		{"qos version not configured", func(p map[string]any) { p["qosVersion"] = "v9" }, 400, 3, "parameters.qosVersion"},
		{"image missing", func(p map[string]any) { delete(p, "pivotContainerImageUrl") }, 400, 3, "parameters.pivotContainerImageUrl"},
		{"image uppercase", func(p map[string]any) { p["pivotContainerImageUrl"] = "ghcr.io/Acme/pivot" }, 400, 3, "parameters.pivotContainerImageUrl"},
		{"image with scheme", func(p map[string]any) { p["pivotContainerImageUrl"] = "https://ghcr.io/acme/pivot" }, 400, 3, "parameters.pivotContainerImageUrl"},
		{"image bad digest", func(p map[string]any) { p["pivotContainerImageUrl"] = "acme/pivot@sha256:abc" }, 400, 3, "parameters.pivotContainerImageUrl"},
		{"image bad tag", func(p map[string]any) { p["pivotContainerImageUrl"] = "acme/pivot:-x" }, 400, 3, "parameters.pivotContainerImageUrl"},
		{"path missing", func(p map[string]any) { delete(p, "pivotPath") }, 400, 3, "parameters.pivotPath"},
		{"path relative", func(p map[string]any) { p["pivotPath"] = "app/pivot" }, 400, 3, "parameters.pivotPath"},
		{"path dot-dot", func(p map[string]any) { p["pivotPath"] = "/app/../pivot" }, 400, 3, "parameters.pivotPath"},
		{"path directory", func(p map[string]any) { p["pivotPath"] = "/app/" }, 400, 3, "parameters.pivotPath"},
		{"args missing", func(p map[string]any) { delete(p, "pivotArgs") }, 400, 3, "parameters.pivotArgs"},
		{"arg with NUL", func(p map[string]any) { p["pivotArgs"] = []string{"ok", "a\x00b"} }, 400, 3, "parameters.pivotArgs[1]"},
		{"arg too long", func(p map[string]any) { p["pivotArgs"] = []string{strings.Repeat("a", tvc.MaxPivotArgLen+1)} }, 400, 3, "parameters.pivotArgs[0]"},
		{"too many args", func(p map[string]any) { p["pivotArgs"] = make([]string, tvc.MaxPivotArgs+1) }, 400, 3, "parameters.pivotArgs"},
		{"digest missing", func(p map[string]any) { delete(p, "expectedPivotDigest") }, 400, 3, "parameters.expectedPivotDigest"},
		{"digest short", func(p map[string]any) { p["expectedPivotDigest"] = "abcd" }, 400, 3, "parameters.expectedPivotDigest"},
		{"health check type missing", func(p map[string]any) { delete(p, "healthCheckType") }, 400, 3, "parameters.healthCheckType"},
		{"health check type unknown", func(p map[string]any) { p["healthCheckType"] = "TVC_HEALTH_CHECK_TYPE_TCP" }, 400, 3, "parameters.healthCheckType"},
		{"health check port missing", func(p map[string]any) { delete(p, "healthCheckPort") }, 400, 3, "parameters.healthCheckPort"},
		{"ingress port too big", func(p map[string]any) { p["publicIngressPort"] = 70000 }, 400, 3, "parameters.publicIngressPort"},
		{"replicas zero", func(p map[string]any) { p["replicas"] = 0 }, 400, 3, "parameters.replicas"},
		{"replicas too many", func(p map[string]any) { p["replicas"] = tvc.MaxReplicas + 1 }, 400, 3, "parameters.replicas"},
		{"nonce negative", func(p map[string]any) { p["nonce"] = -1 }, 400, 3, "parameters.nonce"},
		{"pull secret too long", func(p map[string]any) {
			p["pivotContainerEncryptedPullSecret"] = strings.Repeat("a", tvc.MaxPullSecretLen+1)
		}, 400, 3, "parameters.pivotContainerEncryptedPullSecret"},
		{"debug mode not allowed", func(p map[string]any) { p["debugMode"] = true }, 400, 3, "parameters.debugMode"},
	} {
		t.Run("create_tvc_deployment/"+tc.name, func(t *testing.T) {
			p := tvcDeploymentParams(appID)
			tc.edit(p)
			h.Advance(time.Millisecond)
			servertest.WantError(
				t,
				root.Submit("create_tvc_deployment", "ACTIVITY_TYPE_CREATE_TVC_DEPLOYMENT", p),
				tc.status,
				tc.code,
				tc.substr,
			)
		})
	}
	// Digest with a sha256: prefix, an image by digest on a registry with a port.
	d := tvcDeploymentParams(appID)
	d["expectedPivotDigest"] = "sha256:" + strings.Repeat("AB", 32)
	d["pivotContainerImageUrl"] = "localhost:5000/acme/my_pivot__x/app-1@sha256:" + strings.Repeat("0f", 32)
	d["pivotArgs"] = []string{}
	servertest.MustOK(t, root.Submit("create_tvc_deployment", "ACTIVITY_TYPE_CREATE_TVC_DEPLOYMENT", d))

	for _, tc := range []struct {
		op, typ string
		params  map[string]any
		status  int
		code    int
		substr  string
	}{
		{"create_tvc_manifest_approvals", "ACTIVITY_TYPE_CREATE_TVC_MANIFEST_APPROVALS", map[string]any{"approvals": []any{}}, 400, 3, "parameters.manifestId"},
		{"create_tvc_manifest_approvals", "ACTIVITY_TYPE_CREATE_TVC_MANIFEST_APPROVALS", map[string]any{"manifestId": missing, "approvals": []any{}}, 404, 5, "parameters.manifestId"},
		{"create_tvc_manifest_approvals", "ACTIVITY_TYPE_CREATE_TVC_MANIFEST_APPROVALS", map[string]any{"manifestId": missing}, 400, 3, "parameters.approvals"},
		{"create_tvc_manifest_approvals", "ACTIVITY_TYPE_CREATE_TVC_MANIFEST_APPROVALS", map[string]any{"manifestId": missing, "approvals": []any{map[string]any{"operatorId": opID}}}, 400, 3, "parameters.approvals[0].signature"},
		{"set_tvc_app_live_deployment", "ACTIVITY_TYPE_UPDATE_TVC_APP_LIVE_DEPLOYMENT", map[string]any{}, 400, 3, "parameters.deploymentId"},
		{"set_tvc_app_live_deployment", "ACTIVITY_TYPE_UPDATE_TVC_APP_LIVE_DEPLOYMENT", map[string]any{"deploymentId": missing}, 404, 5, "parameters.deploymentId"},
		{"delete_tvc_deployment", "ACTIVITY_TYPE_DELETE_TVC_DEPLOYMENT", map[string]any{}, 400, 3, "parameters.deploymentId"},
		{"delete_tvc_deployment", "ACTIVITY_TYPE_DELETE_TVC_DEPLOYMENT", map[string]any{"deploymentId": missing}, 404, 5, "parameters.deploymentId"},
		{"restore_tvc_deployment", "ACTIVITY_TYPE_RESTORE_TVC_DEPLOYMENT", map[string]any{}, 400, 3, "parameters.deploymentId"},
		{"restore_tvc_deployment", "ACTIVITY_TYPE_RESTORE_TVC_DEPLOYMENT", map[string]any{"deploymentId": missing}, 404, 5, "parameters.deploymentId"},
		{"delete_tvc_app_and_deployments", "ACTIVITY_TYPE_DELETE_TVC_APP_AND_DEPLOYMENTS", map[string]any{}, 400, 3, "parameters.appId"},
	} {
		t.Run(tc.op+"/"+tc.substr, func(t *testing.T) {
			h.Advance(time.Millisecond)
			servertest.WantError(t, root.Submit(tc.op, tc.typ, tc.params), tc.status, tc.code, tc.substr)
		})
	}
	// An app with nothing live reports no targeted deployment.
	st := root.Query("get_app_status", map[string]any{"appId": appID})
	servertest.MustOK(t, st)
	if st.Str("appStatus", "appId") != appID || st.Str("appStatus", "targetedDeploymentId") != "" ||
		len(st.Body["appStatus"].(map[string]any)["deployments"].([]any)) != 1 {
		t.Fatalf("get_app_status without a live deployment: %s", st.Raw)
	}
	// An empty approval list for an existing manifest.
	dep := root.Submit("create_tvc_deployment", "ACTIVITY_TYPE_CREATE_TVC_DEPLOYMENT", tvcDeploymentParams(appID))
	servertest.MustOK(t, dep)
	mid := dep.Str("activity", "result", "createTvcDeploymentResult", "manifestId")
	servertest.WantError(
		t,
		root.Submit(
			"create_tvc_manifest_approvals",
			"ACTIVITY_TYPE_CREATE_TVC_MANIFEST_APPROVALS",
			map[string]any{"manifestId": mid, "approvals": []any{}},
		),
		400,
		3,
		"parameters.approvals",
	)

	for _, tc := range []struct {
		op     string
		params map[string]any
		status int
		substr string
	}{
		{"get_tvc_app", map[string]any{}, 400, "tvcAppId"},
		{"get_tvc_app", map[string]any{"tvcAppId": missing}, 404, "TVC app not found"},
		{"get_tvc_deployment", map[string]any{}, 400, "deploymentId"},
		{"get_tvc_deployment", map[string]any{"deploymentId": missing}, 404, "TVC deployment not found"},
		{"list_tvc_app_deployments", map[string]any{}, 400, "appId"},
		{"list_tvc_app_deployments", map[string]any{"appId": missing}, 404, "TVC app not found"},
		{"get_app_status", map[string]any{}, 400, "appId"},
		{"get_app_status", map[string]any{"appId": missing}, 404, "TVC app not found"},
	} {
		t.Run(tc.op+"/"+tc.substr, func(t *testing.T) {
			r := root.Query(tc.op, tc.params)
			if r.Status != tc.status || !strings.Contains(r.Str("message"), tc.substr) {
				t.Fatalf("status %d: %s", r.Status, r.Raw)
			}
		})
	}
}

// TestTVCPoliciesAndSubOrganizations: the TVC activities are governed by policies like any
// other, and a deleted sub-organization takes its TVC records with it.
func TestTVCPoliciesAndSubOrganizations(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	op := newTVCOperator(t)
	bobID, bob := h.NewUser(root, "bob", "bob@example.com")
	app := map[string]any{"name": "a", "quorumPublicKey": op.pub,
		"manifestSetParams": map[string]any{
			"name":         "m",
			"threshold":    1,
			"newOperators": []any{map[string]any{"name": "o", "publicKey": op.pub}},
		},
		"shareSetParams": map[string]any{
			"name":         "s",
			"threshold":    1,
			"newOperators": []any{map[string]any{"name": "o", "publicKey": op.pub}},
		}}
	servertest.WantError(
		t,
		bob.Submit("create_tvc_app", "ACTIVITY_TYPE_CREATE_TVC_APP", app),
		http.StatusForbidden,
		7,
		"denied",
	)
	servertest.MustOK(
		t,
		root.Submit(
			"create_policy",
			"ACTIVITY_TYPE_CREATE_POLICY_V3",
			map[string]any{"policyName": "bob runs TVC apps", "effect": "EFFECT_ALLOW",
				"consensus": "approvers.any(user, user.id == '" + bobID + "')", "condition": "activity.type == 'ACTIVITY_TYPE_CREATE_TVC_APP' || activity.resource == 'TVC_DEPLOYMENT' && activity.action == 'CREATE'", "notes": "delegated"},
		),
	)
	h.Advance(time.Millisecond)
	r := bob.Submit("create_tvc_app", "ACTIVITY_TYPE_CREATE_TVC_APP", app)
	servertest.MustOK(t, r)
	appID := r.Str("activity", "result", "createTvcAppResult", "appId")
	d := bob.Submit("create_tvc_deployment", "ACTIVITY_TYPE_CREATE_TVC_DEPLOYMENT", tvcDeploymentParams(appID))
	servertest.MustOK(t, d)
	// Deleting is not in bob's policy.
	servertest.WantError(
		t,
		bob.Submit(
			"delete_tvc_deployment",
			"ACTIVITY_TYPE_DELETE_TVC_DEPLOYMENT",
			map[string]any{"deploymentId": d.Str("activity", "result", "createTvcDeploymentResult", "deploymentId")},
		),
		http.StatusForbidden,
		7,
		"denied",
	)
	servertest.WantError(
		t,
		bob.Submit(
			"delete_tvc_app_and_deployments",
			"ACTIVITY_TYPE_DELETE_TVC_APP_AND_DEPLOYMENTS",
			map[string]any{"appId": appID},
		),
		http.StatusForbidden,
		7,
		"denied",
	)

	// A sub-organization's TVC records go with it.
	subPriv, subPub := h.NewKey()
	s := root.Submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{
		"subOrganizationName": "child", "rootQuorumThreshold": 1,
		"rootUsers": []any{map[string]any{"userName": "alice", "apiKeys": []any{
			map[string]any{
				"apiKeyName": "k",
				"publicKey":  subPub,
				"curveType":  "API_KEY_CURVE_P256",
			}}, "authenticators": []any{}, "oauthProviders": []any{}}},
	})
	servertest.MustOK(t, s)
	subID := s.Str("activity", "result", "createSubOrganizationResultV8", "subOrganizationId")
	sub := h.Client(subID, subPriv)
	r = sub.Submit("create_tvc_app", "ACTIVITY_TYPE_CREATE_TVC_APP", app)
	servertest.MustOK(t, r)
	servertest.MustOK(
		t,
		sub.Submit(
			"create_tvc_deployment",
			"ACTIVITY_TYPE_CREATE_TVC_DEPLOYMENT",
			tvcDeploymentParams(r.Str("activity", "result", "createTvcAppResult", "appId")),
		),
	)
	// The parent reads the sub-organization's apps.
	if l := h.Client(subID, root.Priv).Query("list_tvc_apps", nil); l.Status != http.StatusOK ||
		len(l.Body["tvcApps"].([]any)) != 1 {
		t.Fatalf("parent reading sub-org apps: %s", l.Raw)
	}
	servertest.MustOK(
		t,
		sub.Submit(
			"delete_sub_organization",
			"ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION",
			map[string]any{"deleteWithoutExport": true},
		),
	)
	err := h.Server.Store.View(context.Background(), func(rd store.Reader) error {
		for _, kind := range tvc.OwnedKinds {
			n, err := rd.Count(context.Background(), kind, subID, 0)
			if err != nil {
				return err
			}
			if n != 0 {
				t.Errorf("%d %s records left in the deleted sub-organization", n, kind)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// An operator made by create_tvc_operator holds its keys in a Latchkey wallet: its manifest
// approval is a sign_raw_payload of the manifest by its signing account, and that approval is
// accepted and counts toward going live.
func TestTVCOperatorFromWallet(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	mk := func(p map[string]any) servertest.Response {
		h.Advance(time.Millisecond)
		return root.Submit("create_tvc_operator", "ACTIVITY_TYPE_CREATE_TVC_OPERATOR", p)
	}
	r := mk(map[string]any{"operatorName": "hsm-1", "walletName": "operators", "path": "m/44'/1'/0'"})
	servertest.MustOK(t, r)
	res := func(f string) string { return r.Str("activity", "result", "createTvcOperatorResult", f) }
	opID, walletID, enc, sign := res("operatorId"), res("walletId"), res("encryptPublicKey"), res("signPublicKey")
	if opID == "" || walletID == "" || len(enc) != 130 || len(sign) != 130 || enc == sign {
		t.Fatalf("create_tvc_operator: %s", r.Raw)
	}
	accts := root.Query("list_wallet_accounts", map[string]any{"walletId": walletID})
	servertest.MustOK(t, accts)
	if accts.Str("accounts", "0", "path") != "m/44'/1'/0'/0" || accts.Str("accounts", "1", "address") != sign ||
		accts.Str("accounts", "1", "curve") != "CURVE_P256" {
		t.Fatalf("operator accounts: %s", accts.Raw)
	}
	// A second operator reuses the wallet under another path.
	r2 := mk(map[string]any{"operatorName": "hsm-2", "walletId": walletID, "path": "m/44'/1'/1'"})
	servertest.MustOK(t, r2)
	if r2.Str("activity", "result", "createTvcOperatorResult", "walletId") != walletID {
		t.Fatalf("reused wallet: %s", r2.Raw)
	}

	for _, c := range []struct {
		params map[string]any
		status int
		field  string
	}{
		{map[string]any{"operatorName": "x", "path": "m/0'"}, 400, "parameters.walletName"},
		{map[string]any{"operatorName": "x", "walletName": "w", "walletId": walletID, "path": "m/0'"}, 400, "parameters.walletId"},
		{map[string]any{"operatorName": "x", "walletName": "w", "path": "not/a/path"}, 400, "parameters.path"},
		{map[string]any{"operatorName": " ", "walletName": "w", "path": "m/0'"}, 400, "parameters.operatorName"},
		{map[string]any{"operatorName": "x", "walletId": "5b1c6a0e-0000-4000-8000-000000000000", "path": "m/0'"}, 404, "wallet"},
	} {
		servertest.WantError(t, mk(c.params), c.status, map[int]int{400: 3, 404: 5}[c.status], c.field)
	}

	// The wallet-backed operator approves a manifest through sign_raw_payload.
	app := root.Submit(
		"create_tvc_app",
		"ACTIVITY_TYPE_CREATE_TVC_APP",
		map[string]any{"name": "signer", "quorumPublicKey": enc,
			"manifestSetParams": map[string]any{
				"name":                "approvers",
				"threshold":           1,
				"existingOperatorIds": []string{opID},
			},
			"shareSetParams": map[string]any{
				"name":                "holders",
				"threshold":           1,
				"existingOperatorIds": []string{opID},
			}},
	)
	servertest.MustOK(t, app)
	appID := app.Str("activity", "result", "createTvcAppResult", "appId")
	d := root.Submit("create_tvc_deployment", "ACTIVITY_TYPE_CREATE_TVC_DEPLOYMENT", tvcDeploymentParams(appID))
	servertest.MustOK(t, d)
	depID, manifestID := d.Str(
		"activity",
		"result",
		"createTvcDeploymentResult",
		"deploymentId",
	), d.Str(
		"activity",
		"result",
		"createTvcDeploymentResult",
		"manifestId",
	)
	manifest, _ := manifestOf(t, root, depID)
	s := root.Submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": sign,
		"payload": hex.EncodeToString(
			manifest,
		), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_SHA256"})
	servertest.MustOK(t, s)
	sig := s.Str(
		"activity",
		"result",
		"signRawPayloadResult",
		"r",
	) + s.Str(
		"activity",
		"result",
		"signRawPayloadResult",
		"s",
	)
	servertest.MustOK(
		t,
		root.Submit(
			"create_tvc_manifest_approvals",
			"ACTIVITY_TYPE_CREATE_TVC_MANIFEST_APPROVALS",
			map[string]any{"manifestId": manifestID,
				"approvals": []any{map[string]any{"operatorId": opID, "signature": sig}}},
		),
	)
	servertest.MustOK(
		t,
		root.Submit(
			"set_tvc_app_live_deployment",
			"ACTIVITY_TYPE_UPDATE_TVC_APP_LIVE_DEPLOYMENT",
			map[string]any{"deploymentId": depID},
		),
	)

	// Deleting the app keeps the operator: it was made on its own, for any app.
	servertest.MustOK(
		t,
		root.Submit(
			"delete_tvc_app_and_deployments",
			"ACTIVITY_TYPE_DELETE_TVC_APP_AND_DEPLOYMENTS",
			map[string]any{"appId": appID},
		),
	)
	if err := h.Server.Store.View(context.Background(), func(r store.Reader) error {
		_, err := r.Get(context.Background(), tvc.KindOperator, opID)
		return err
	}); err != nil {
		t.Fatalf("operator removed with the app: %v", err)
	}
}
