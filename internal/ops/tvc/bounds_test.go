package tvc_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/costtest"
	"github.com/latchkey/latchkey/internal/ops/tvc"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

func operatorKey(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := k.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// newApp creates a TVC app with one-operator sets and returns its id.
func newApp(t *testing.T, c *servertest.Client, name string) string {
	t.Helper()
	op := operatorKey(t)
	r := c.Submit("create_tvc_app", "ACTIVITY_TYPE_CREATE_TVC_APP", map[string]any{"name": name, "quorumPublicKey": op,
		"manifestSetParams": map[string]any{"name": name + " approvers", "threshold": 1,
			"newOperators": []any{map[string]any{"name": "alice", "publicKey": op}}},
		"shareSetParams": map[string]any{"name": name + " holders", "threshold": 1,
			"newOperators": []any{map[string]any{"name": "carol", "publicKey": operatorKey(t)}}}})
	servertest.MustOK(t, r)
	return r.Str("activity", "result", "createTvcAppResult", "appId")
}

// pivotArgs is the most arguments a deployment may carry (256 of 4 KiB: 1 MiB), or two short
// ones.
func pivotArgs(large bool) []string {
	if !large {
		return []string{"--port", "3000"}
	}
	args := make([]string, tvc.MaxPivotArgs)
	for i := range args {
		args[i] = fmt.Sprintf("%04d", i) + strings.Repeat("a", tvc.MaxPivotArgLen-4)
	}
	return args
}

func deploy(h *servertest.Harness, c *servertest.Client, appID string, large bool) servertest.Response {
	h.Advance(time.Millisecond)
	return c.Submit("create_tvc_deployment", "ACTIVITY_TYPE_CREATE_TVC_DEPLOYMENT", map[string]any{"appId": appID,
		"qosVersion": "v0.4.0", "pivotContainerImageUrl": "ghcr.io/acme/pivot:1.2.3", "pivotPath": "/app/pivot",
		"pivotArgs": pivotArgs(large), "expectedPivotDigest": strings.Repeat("ab", 32),
		"healthCheckType": "TVC_HEALTH_CHECK_TYPE_HTTP", "healthCheckPort": 3001, "publicIngressPort": 3000})
}

// get_app_status answers each deployment's replicas and times, never its pivot container or
// manifest: it costs the same over deployments whose pivot arguments are 1 MiB each as over
// deployments with two short ones (before, it read every deployment whole: 5 of 1 MiB cost about
// 20 MB more than 5 small ones).
func TestAppStatusReadsNoPivotArgs(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	small, large := newApp(t, root, "small"), newApp(t, root, "large")
	for range 5 {
		servertest.MustOK(t, deploy(h, root, small, false))
		servertest.MustOK(t, deploy(h, root, large, true))
	}
	status := func(app string) int64 {
		return leastAllocated(func() {
			r := root.Query("get_app_status", map[string]any{"appId": app})
			if r.Status != http.StatusOK || r.Len("appStatus", "deployments") != 5 {
				t.Fatalf("get_app_status: %s", r.Raw)
			}
		})
	}
	status(small)
	allocSmall, allocLarge := status(small), status(large)
	t.Logf("get_app_status over 5 deployments: %d bytes allocated with short pivot arguments, %d with 1 MiB each",
		allocSmall, allocLarge)
	if allocLarge > allocSmall+256<<10 {
		t.Errorf("get_app_status reads the deployments' pivot arguments: %d, %d", allocSmall, allocLarge)
	}
}

// An app's deployments hold at most MaxDeploymentSpecBytesPerApp of pivot containers and
// manifests together, so list_tvc_app_deployments (which takes no pagination and answers every
// deployment with its pivot arguments and manifest) answers at most that and the operator sets
// around it. Before, an app took 1,000 deployments of 1 MiB of arguments each, and the list read
// and answered them all (2.4 GB stored).
func TestDeploymentsBoundedByBytes(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	app := newApp(t, root, "large")
	created := 0
	var refused servertest.Response
	for ; created < 20; created++ {
		r := deploy(h, root, app, true)
		if r.Status != http.StatusOK {
			refused = r
			break
		}
		servertest.MustOK(t, r)
	}
	if created == 20 {
		t.Fatalf("20 deployments of 1 MiB of pivot arguments each were created in one app")
	}
	servertest.WantError(t, refused, http.StatusTooManyRequests, 8,
		fmt.Sprintf("at most %d bytes of pivot containers and manifests", tvc.MaxDeploymentSpecBytesPerApp))
	servertest.MustOK(t, deploy(h, root, app, false)) // a small one still fits
	var answered int
	alloc := leastAllocated(func() {
		r := root.Query("list_tvc_app_deployments", map[string]any{"appId": app})
		if r.Status != http.StatusOK || r.Len("tvcDeployments") != created+1 ||
			r.Len("tvcDeployments", "0", "pivotContainer", "args") != tvc.MaxPivotArgs {
			t.Fatalf("list_tvc_app_deployments: %.300s", r.Raw)
		}
		answered = len(r.Raw)
	})
	t.Logf("%d deployments of 1 MiB of arguments fit; the list answers %d bytes and allocates %d",
		created, answered, alloc)
	if answered > 2*tvc.MaxDeploymentSpecBytesPerApp {
		t.Errorf("the list answers %d bytes", answered)
	}
}

func leastAllocated(f func()) int64 {
	least := costtest.Allocated(f)
	for range 2 {
		least = min(least, costtest.Allocated(f))
	}
	return least
}

// A deployment stored before specs were kept apart (its pivot container and manifest in its own
// record) answers as it did: get_tvc_deployment, list_tvc_app_deployments and get_app_status
// read it, and deleting its app removes it.
func TestDeploymentsStoredWithTheirSpec(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	app := newApp(t, root, "old")
	r := deploy(h, root, app, false)
	servertest.MustOK(t, r)
	depID := r.Str("activity", "result", "createTvcDeploymentResult", "deploymentId")
	before := root.MustQuery("get_tvc_deployment", map[string]any{"deploymentId": depID})
	ctx := context.Background()
	org := created.OrganizationID
	err := h.Server.Store.Update(ctx, func(tx store.Tx) error {
		d, err := records.Load[tvc.Deployment](ctx, tx, tvc.KindDeployment, org, depID, "deployment")
		if err != nil {
			return err
		}
		s, err := records.Load[tvc.DeploymentSpec](ctx, tx, tvc.KindDeploymentSpec, org, depID, "spec")
		if err != nil {
			return err
		}
		d.SpecApart, d.Manifest, d.Pivot = false, s.Manifest, &s.Pivot
		if err := records.Delete(ctx, tx, tvc.KindDeploymentSpec, depID); err != nil {
			return err
		}
		return records.Save(ctx, tx, tvc.KindDeployment, d.ID, org, d.CreatedAt, d.UpdatedAt, d,
			store.Key{Name: tvc.KeyDeploymentApp, Value: d.AppID},
			store.Key{Name: tvc.KeyManifest, Value: d.ManifestID, Unique: true},
			store.Key{Name: tvc.KeyNonce, Value: fmt.Sprintf("%s/%d", d.AppID, d.Nonce), Unique: true})
	})
	if err != nil {
		t.Fatal(err)
	}
	after := root.MustQuery("get_tvc_deployment", map[string]any{"deploymentId": depID})
	if string(after.Raw) != string(before.Raw) {
		t.Errorf("get_tvc_deployment of a deployment holding its spec:\n%s\nwas\n%s", after.Raw, before.Raw)
	}
	if l := root.MustQuery("list_tvc_app_deployments", map[string]any{"appId": app}); l.Str(
		"tvcDeployments", "0", "manifest", "manifest") != before.Str("tvcDeployment", "manifest", "manifest") {
		t.Errorf("list_tvc_app_deployments: %s", l.Raw)
	}
	if s := root.MustQuery("get_app_status", map[string]any{"appId": app}); s.Len("appStatus", "deployments") != 1 {
		t.Errorf("get_app_status: %s", s.Raw)
	}
	servertest.MustOK(t, root.Submit("delete_tvc_app_and_deployments", "ACTIVITY_TYPE_DELETE_TVC_APP_AND_DEPLOYMENTS",
		map[string]any{"appId": app}))
	err = h.Server.Store.View(ctx, func(r store.Reader) error {
		for _, kind := range []string{tvc.KindDeployment, tvc.KindDeploymentSpec} {
			if n, err := r.Count(ctx, kind, org, 0); err != nil || n != 0 {
				t.Errorf("%d %s records left (%v)", n, kind, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
