// Policies and consensus end to end with @turnkey/sdk-server: policies decide who signs what, and a root quorum
// of two needs a second approval by fingerprint.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createAccount } from "@turnkey/viem";
import { generateP256KeyPair } from "@turnkey/crypto";
import { parseGwei } from "viem";
import { startLatchkey } from "./lib.mjs";

let lk, root, org;
const ETH = { curve: "CURVE_SECP256K1", pathFormat: "PATH_FORMAT_BIP32", path: "m/44'/60'/0'/0/0", addressFormat: "ADDRESS_FORMAT_ETHEREUM" };

const client = (kp) => lk.client(kp);

before(async () => {
  lk = await startLatchkey();
  org = lk.creds.organizationId;
  root = lk.client();
});

after(async () => {
  assert.equal(await lk.stop(), 0);
});

async function newUser(name) {
  const kp = generateP256KeyPair();
  const { userIds } = await root.createUsers({ users: [{ userName: name, apiKeys: [{ apiKeyName: name, publicKey: kp.publicKey, curveType: "API_KEY_CURVE_P256" }], authenticators: [], oauthProviders: [], userTags: [] }] });
  return { id: userIds[0], client: client(kp) };
}

test("a non-root user is denied signing until a policy allows one wallet, and a DENY on eth.tx.to wins", async () => {
  const bob = await newUser("bob");
  const allowed = await root.createWallet({ walletName: "bob's", accounts: [ETH] });
  const other = await root.createWallet({ walletName: "not bob's", accounts: [ETH] });
  const bobAccount = await createAccount({ client: bob.client, organizationId: org, signWith: allowed.addresses[0] });
  await assert.rejects(bobAccount.signMessage({ message: "no" }), /denied/);

  await root.createPolicy({ policyName: "bob signs with his wallet", effect: "EFFECT_ALLOW", notes: "e2e",
    consensus: `approvers.any(user, user.id == '${bob.id}')`, condition: `activity.action == 'SIGN' && wallet.id == '${allowed.walletId}'` });
  await bobAccount.signMessage({ message: "yes" });
  const otherAccount = await createAccount({ client: bob.client, organizationId: org, signWith: other.addresses[0] });
  await assert.rejects(otherAccount.signMessage({ message: "not this one" }), /denied/);

  const blocked = "0x08d2b0a37f869ff76bacb5bab3278e26ab7067b7";
  await root.createPolicy({ policyName: "never to blocked", effect: "EFFECT_DENY", notes: "e2e", condition: `eth.tx.to == '${blocked}'` });
  const tx = (to) => bobAccount.signTransaction({ chainId: 11155111, type: "eip1559", to, value: 1n, nonce: 0, gas: 21000n, maxFeePerGas: parseGwei("2"), maxPriorityFeePerGas: parseGwei("1") });
  await assert.rejects(tx(blocked), /policy engine denied request explicitly/);
  await tx("0x1111111111111111111111111111111111111111");

  // A denial is explainable: the denied activity, found through getActivities, has its policy
  // evaluation, showing the DENY policy that matched.
  const { activities } = await root.getActivities({ filterByStatus: ["ACTIVITY_STATUS_FAILED"] });
  const denied = activities.find((a) => a.type === "ACTIVITY_TYPE_SIGN_TRANSACTION_V2");
  assert.ok(denied, "the denied signing is listed as FAILED");
  const { policyEvaluations } = await root.getPolicyEvaluations({ activityId: denied.id });
  assert.ok(policyEvaluations.length > 0, "the denied activity has no policy evaluation");
  assert.match(JSON.stringify(policyEvaluations), /DENY/);
});

test("with a root quorum of two, an activity waits for the second root user's approval; a rejection changes nothing", async () => {
  const alice = await newUser("alice");
  await root.updateRootQuorum({ threshold: 2, userIds: [lk.creds.userId, alice.id] });

  const pending = await root.createUserTag({ userTagName: "two of two", userIds: [] });
  assert.equal(pending.activity.status, "ACTIVITY_STATUS_CONSENSUS_NEEDED");
  assert.equal(pending.userTagId, undefined);
  const approved = await alice.client.approveActivity({ fingerprint: pending.activity.fingerprint });
  assert.equal(approved.activity.status, "ACTIVITY_STATUS_COMPLETED");
  assert.ok(approved.createUserTagResult.userTagId);
  const tags = await root.listUserTags({});
  assert.ok(tags.userTags.some((t) => t.tagName === "two of two"));

  const toReject = await root.createUserTag({ userTagName: "never", userIds: [] });
  const rejected = await alice.client.rejectActivity({ fingerprint: toReject.activity.fingerprint });
  assert.equal(rejected.activity.status, "ACTIVITY_STATUS_REJECTED");
  const after = await root.listUserTags({});
  assert.ok(!after.userTags.some((t) => t.tagName === "never"));
});
