// TVC end to end with @turnkey/sdk-server: TVC apps and deployments as records, with
// manifest approvals signed by operator keys over the manifest bytes Latchkey returns.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { generateKeyPairSync, sign } from "node:crypto";
import { startLatchkey } from "./lib.mjs";

let lk, root;

before(async () => {
  lk = await startLatchkey(["--tvc-qos-versions", "v0.3.0,v0.4.0"]);
  root = lk.client();
});

after(async () => {
  assert.equal(await lk.stop(), 0);
});

// An operator: a P-256 key pair, its public key as uncompressed hex.
function operator() {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const jwk = publicKey.export({ format: "jwk" });
  const hex = "04" + Buffer.from(jwk.x, "base64url").toString("hex") + Buffer.from(jwk.y, "base64url").toString("hex");
  return {
    publicKey: hex,
    // ECDSA P-256 over SHA-256 of the manifest bytes, as 64-byte r||s hex.
    approve: (manifest) => sign("sha256", manifest, { key: privateKey, dsaEncoding: "ieee-p1363" }).toString("hex"),
  };
}

test("a TVC app's deployment is approved by its manifest set, goes live, and is deleted and restored", async () => {
  const alice = operator(), bob = operator(), carol = operator();
  const { availableVersions, latestVersion } = await root.getTvcQosVersions({});
  assert.deepEqual(availableVersions, ["v0.3.0", "v0.4.0"]);
  assert.equal(latestVersion, "v0.4.0");

  const app = await root.createTvcApp({
    name: "e2e signer", quorumPublicKey: carol.publicKey,
    manifestSetParams: { name: "approvers", threshold: 2, newOperators: [{ name: "alice", publicKey: alice.publicKey }, { name: "bob", publicKey: bob.publicKey }] },
    shareSetParams: { name: "holders", threshold: 1, newOperators: [{ name: "carol", publicKey: carol.publicKey }] },
  });
  assert.equal(app.manifestSetOperatorIds.length, 2);
  const { tvcApp } = await root.getTvcApp({ tvcAppId: app.appId });
  assert.equal(tvcApp.name, "e2e signer");
  assert.equal(tvcApp.manifestSet.threshold, 2);
  assert.match(tvcApp.publicDomain, /\.invalid$/);
  assert.ok((await root.getTvcApps({})).tvcApps.some((a) => a.id === app.appId));

  const dep = await root.createTvcDeployment({
    appId: app.appId, qosVersion: latestVersion, pivotContainerImageUrl: "ghcr.io/acme/pivot:1.0.0", pivotPath: "/pivot",
    pivotArgs: ["--listen", "0.0.0.0:3000"], expectedPivotDigest: "ab".repeat(32), healthCheckType: "TVC_HEALTH_CHECK_TYPE_GRPC",
    healthCheckPort: 3001, publicIngressPort: 3000, replicas: 2,
  });
  const { tvcDeployment } = await root.getTvcDeployment({ deploymentId: dep.deploymentId });
  assert.equal(tvcDeployment.manifest.id, dep.manifestId);
  const manifest = Buffer.from(tvcDeployment.manifest.manifest, "base64");
  assert.equal(JSON.parse(manifest.toString()).pivot.imageUrl, "ghcr.io/acme/pivot:1.0.0");

  // One approval is not enough for a 2-of-2 manifest set; a forged one is refused.
  const [aliceId, bobId] = app.manifestSetOperatorIds;
  await root.createTvcManifestApprovals({ manifestId: dep.manifestId, approvals: [{ operatorId: aliceId, signature: alice.approve(manifest) }] });
  await assert.rejects(root.updateTvcAppLiveDeployment({ deploymentId: dep.deploymentId }), /1 of the 2 manifest approvals/);
  await assert.rejects(root.createTvcManifestApprovals({ manifestId: dep.manifestId, approvals: [{ operatorId: bobId, signature: carol.approve(manifest) }] }),
    /approvals\[0\]\.signature/);
  const { approvalIds } = await root.createTvcManifestApprovals({ manifestId: dep.manifestId, approvals: [{ operatorId: bobId, signature: bob.approve(manifest) }] });
  assert.equal(approvalIds.length, 1);
  await root.updateTvcAppLiveDeployment({ deploymentId: dep.deploymentId });
  assert.equal((await root.getTvcApp({ tvcAppId: app.appId })).tvcApp.liveDeploymentId, dep.deploymentId);

  // The live deployment stays; another one is deleted and restored.
  await assert.rejects(root.deleteTvcDeployment({ deploymentId: dep.deploymentId }), /live deployment/);
  const dep2 = await root.createTvcDeployment({
    appId: app.appId, qosVersion: "v0.3.0", pivotContainerImageUrl: "ghcr.io/acme/pivot:0.9.0", pivotPath: "/pivot", pivotArgs: [],
    expectedPivotDigest: "cd".repeat(32), healthCheckType: "TVC_HEALTH_CHECK_TYPE_HTTP", healthCheckPort: 8081, publicIngressPort: 8080,
  });
  assert.equal((await root.deleteTvcDeployment({ deploymentId: dep2.deploymentId })).deploymentId, dep2.deploymentId);
  let { appStatus } = await root.getAppStatus({ appId: app.appId });
  assert.equal(appStatus.targetedDeploymentId, dep.deploymentId);
  assert.deepEqual(appStatus.deployments.map((d) => [d.deploymentId, d.readyReplicas, d.desiredReplicas]),
    [[dep.deploymentId, 0, 2], [dep2.deploymentId, 0, 0]]);
  await root.restoreTvcDeployment({ deploymentId: dep2.deploymentId });
  const { tvcDeployments } = await root.getTvcAppDeployments({ appId: app.appId });
  assert.deepEqual(tvcDeployments.map((d) => [d.id, d.delete]), [[dep.deploymentId, false], [dep2.deploymentId, false]]);

  // Bad input is a 400 naming the field; what needs an enclave is a clear 501.
  await assert.rejects(root.createTvcDeployment({ appId: app.appId, qosVersion: "v9", pivotContainerImageUrl: "a", pivotPath: "/p", pivotArgs: [],
    expectedPivotDigest: "ab".repeat(32), healthCheckType: "TVC_HEALTH_CHECK_TYPE_HTTP", healthCheckPort: 1, publicIngressPort: 2 }), /parameters\.qosVersion/);
  await assert.rejects(root.getTvcDeploymentDebugLogs({ deploymentId: dep.deploymentId }), /not supported by Latchkey/);

  await root.deleteTvcAppAndDeployments({ appId: app.appId });
  await assert.rejects(root.getTvcDeployment({ deploymentId: dep.deploymentId }), /not found/);
});
