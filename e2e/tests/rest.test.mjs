// MFA policies and secrets end to end with @turnkey/sdk-server: MFA policies hold an activity until the initiator
// approves it with a second credential; secrets go in and out in @turnkey/crypto's envelopes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { generateP256KeyPair, encryptWalletToBundle, decryptExportBundle } from "@turnkey/crypto";
import { startLatchkey } from "./lib.mjs";

let lk, root, org;
const SUITE = "TRANSPORT_ENCRYPTION_SUITE_ENCLAVE_ENCRYPT_V1";

const client = (kp) => lk.client(kp);

before(async () => {
  lk = await startLatchkey();
  org = lk.creds.organizationId;
  root = lk.client();
});

after(async () => {
  assert.equal(await lk.stop(), 0);
});

test("an MFA policy holds create_user_tag as AUTHENTICATORS_NEEDED until a second API key approves it", async () => {
  const kp = generateP256KeyPair();
  const { apiKeyIds } = await root.createApiKeys({ userId: lk.creds.userId, apiKeys: [{ apiKeyName: "second factor", publicKey: kp.publicKey, curveType: "API_KEY_CURVE_P256" }] });
  const { mfaPolicyId } = await root.createMfaPolicy({ userId: lk.creds.userId, mfaPolicyName: "tags need two keys", order: 0,
    condition: "activity.type == 'ACTIVITY_TYPE_CREATE_USER_TAG'",
    requiredAuthenticationMethods: [{ any: [{ type: "AUTHENTICATION_TYPE_API_KEY" }] }, { any: [{ type: "AUTHENTICATION_TYPE_API_KEY", id: apiKeyIds[0] }] }] });

  const held = await root.createUserTag({ userTagName: "guarded", userIds: [] });
  assert.equal(held.activity.status, "ACTIVITY_STATUS_AUTHENTICATORS_NEEDED");
  const status = await root.getMfaStatus({ activityId: held.activity.id });
  assert.equal(status.mfaStatuses[0].mfaPolicyId, mfaPolicyId);
  assert.equal(status.mfaStatuses[0].satisfied, false);

  const done = await client(kp).approveActivity({ fingerprint: held.activity.fingerprint });
  assert.equal(done.activity.status, "ACTIVITY_STATUS_COMPLETED");
  const { userTags } = await root.listUserTags({});
  assert.ok(userTags.some((t) => t.tagName === "guarded"));
  await root.deleteMfaPolicy({ userId: lk.creds.userId, mfaPolicyId });
});

test("a secret imported through an init_import_secrets target comes back from export_secrets", async () => {
  const secret = "legal winner thank year wave sausage worth useful legal winner thank yellow";
  const init = await root.request("/public/v1/submit/init_import_secrets", {
    type: "ACTIVITY_TYPE_INIT_IMPORT_SECRETS", timestampMs: String(Date.now()), organizationId: org,
    parameters: { encryptionSuite: SUITE, numSecrets: 1 },
  });
  const [target] = init.activity.result.initImportSecretsResult.enclaveTargetMessages;
  const targetPublicKey = JSON.parse(Buffer.from(JSON.parse(target).data, "hex").toString()).targetPublic;
  const secretPayload = await encryptWalletToBundle({ mnemonic: secret, importBundle: target, userId: lk.creds.userId, organizationId: org,
    dangerouslyOverrideSignerPublicKey: lk.keys.signerPublicKey });
  const { secretIds } = await root.importSecrets({ secrets: [{ name: "e2e", secretPayload, targetPublicKey, encryptionSuite: SUITE }] });
  const { secrets } = await root.listSecrets({});
  assert.equal(secrets.find((s) => s.secretId === secretIds[0]).name, "e2e");

  const recv = generateP256KeyPair();
  const { secretPayloads } = await root.exportSecrets({ secrets: [{ secretId: secretIds[0], targetPublicKey: recv.publicKeyUncompressed, encryptionSuite: SUITE }] });
  const opened = await decryptExportBundle({ exportBundle: secretPayloads[0], embeddedKey: recv.privateKey, organizationId: org,
    returnMnemonic: true, dangerouslyOverrideSignerPublicKey: lk.keys.signerPublicKey });
  assert.equal(opened, secret);
});
