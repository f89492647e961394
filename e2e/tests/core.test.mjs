// Organizations, users, keys and sessions end to end: the real @turnkey/sdk-server and @turnkey/crypto against a real latchkey serve.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { ApiKeyStamper } from "@turnkey/api-key-stamper";
import { generateP256KeyPair, decryptCredentialBundle, getPublicKey, verifySessionJwtSignature } from "@turnkey/crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startLatchkey } from "./lib.mjs";

let lk;
let root; // the dev organization's root client
const secrets = [];

const client = (organizationId, privateKey, publicKey) => lk.client({ privateKey, publicKey }, organizationId);

before(async () => {
  lk = await startLatchkey();
  secrets.push(lk.creds.apiPrivateKey);
  root = client(lk.creds.organizationId, lk.creds.apiPrivateKey, lk.creds.apiPublicKey);
});

after(async () => {
  const code = await lk.stop();
  assert.equal(code, 0, "SIGTERM must drain and exit cleanly");
});

// Raw stamped POST, for the error cases the SDK would not send.
async function rawPost(path, body, { stampBody = body, privateKey = lk.creds.apiPrivateKey, publicKey = lk.creds.apiPublicKey } = {}) {
  const stamper = new ApiKeyStamper({ apiPublicKey: publicKey, apiPrivateKey: privateKey });
  const stamp = await stamper.stamp(stampBody);
  const resp = await fetch(lk.url + path, {
    method: "POST",
    headers: { "Content-Type": "application/json", [stamp.stampHeaderName]: stamp.stampHeaderValue },
    body,
  });
  return { status: resp.status, body: await resp.json() };
}

function assertTurnkeyError(res, status, code, substr) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.code, code, JSON.stringify(res.body));
  assert.ok(res.body.message.includes(substr), `message ${JSON.stringify(res.body.message)} lacks ${JSON.stringify(substr)}`);
  assert.equal(res.body.details[0]["@type"], "type.googleapis.com/errors.v1.TurnkeyErrorDetail");
}

test("whoami", async () => {
  const me = await root.getWhoami({});
  assert.equal(me.organizationId, lk.creds.organizationId);
  assert.equal(me.userId, lk.creds.userId);
  assert.equal(me.organizationName, "Demo Organization");
});

test("sub-organization with its own root API key; the parent reads but cannot write", async () => {
  const kp = generateP256KeyPair();
  secrets.push(kp.privateKey);
  const res = await root.createSubOrganization({
    subOrganizationName: "e2e child",
    rootQuorumThreshold: 1,
    rootUsers: [{ userName: "alice", userEmail: "alice@example.com", apiKeys: [{ apiKeyName: "alice key", publicKey: kp.publicKey, curveType: "API_KEY_CURVE_P256" }], authenticators: [], oauthProviders: [] }],
  });
  assert.ok(res.subOrganizationId);
  assert.equal(res.activity.status, "ACTIVITY_STATUS_COMPLETED");
  const sub = client(res.subOrganizationId, kp.privateKey, kp.publicKey);
  const me = await sub.getWhoami({});
  assert.equal(me.organizationId, res.subOrganizationId);
  assert.equal(me.username, "alice");

  // The parent reads the sub-organization...
  const users = await root.getUsers({ organizationId: res.subOrganizationId });
  assert.equal(users.users.length, 1);
  const ids = await root.getSubOrgIds({ filterType: "EMAIL", filterValue: "alice@example.com" });
  assert.deepEqual(ids.organizationIds, [res.subOrganizationId]);
  // ...but cannot write in it.
  await assert.rejects(root.createUserTag({ organizationId: res.subOrganizationId, userTagName: "nope", userIds: [] }), (e) => {
    assert.match(String(e.message), /Turnkey error 7/);
    assert.match(String(e.message), /parent organization/);
    return true;
  });
});

test("API keys, users and tags are created and deleted", async () => {
  const kp = generateP256KeyPair();
  const users = await root.createUsers({
    users: [{ userName: "bob", userEmail: "bob@example.com", apiKeys: [{ apiKeyName: "bob", publicKey: kp.publicKey, curveType: "API_KEY_CURVE_P256" }], authenticators: [], oauthProviders: [], userTags: [] }],
  });
  const bobId = users.userIds[0];
  const extra = generateP256KeyPair();
  const keys = await root.createApiKeys({ userId: bobId, apiKeys: [{ apiKeyName: "extra", publicKey: extra.publicKey, curveType: "API_KEY_CURVE_P256", expirationSeconds: "3600" }] });
  assert.equal(keys.apiKeyIds.length, 1);
  const listed = await root.getApiKeys({ userId: bobId });
  assert.equal(listed.apiKeys.length, 2);
  assert.ok(listed.apiKeys.some((k) => k.expirationSeconds === "3600"));
  await root.deleteApiKeys({ userId: bobId, apiKeyIds: keys.apiKeyIds });
  assert.equal((await root.getApiKeys({ userId: bobId })).apiKeys.length, 1);

  const tag = await root.createUserTag({ userTagName: "e2e-tag", userIds: [bobId] });
  assert.ok(tag.userTagId);
  const tags = await root.listUserTags({});
  assert.ok(tags.userTags.some((t) => t.tagId === tag.userTagId && t.tagName === "e2e-tag"));
  const bob = await root.getUser({ userId: bobId });
  assert.deepEqual(bob.user.userTags, [tag.userTagId]);
  const del = await root.deleteUserTags({ userTagIds: [tag.userTagId] });
  assert.deepEqual(del.userIds, [bobId]);

  await root.deleteUsers({ userIds: [bobId] });
  const after = await root.getUsers({});
  assert.ok(!after.users.some((u) => u.userId === bobId));
});

test("read-write session: the credential bundle decrypts to a key that can call", async () => {
  const target = generateP256KeyPair();
  const res = await root.createReadWriteSession({ targetPublicKey: target.publicKeyUncompressed, expirationSeconds: "900" });
  assert.equal(res.organizationId, lk.creds.organizationId);
  const sessionPriv = decryptCredentialBundle(res.credentialBundle, target.privateKey);
  secrets.push(sessionPriv);
  const sessionPub = Buffer.from(getPublicKey(sessionPriv, true)).toString("hex");
  const session = client(lk.creds.organizationId, sessionPriv, sessionPub);
  const me = await session.getWhoami({});
  assert.equal(me.userId, lk.creds.userId);
  const key = await root.getApiKey({ apiKeyId: res.apiKeyId });
  assert.equal(key.apiKey.credential.type, "CREDENTIAL_TYPE_READ_WRITE_SESSION_KEY_P256");
  assert.equal(key.apiKey.credential.publicKey, sessionPub);
});

test("a read-only session token verifies with the notarizer key and reads with X-Session", async () => {
  const res = await root.createReadOnlySession({});
  assert.ok(await verifySessionJwtSignature(res.session, lk.keys.notarizerPublicKey));
  const r = await fetch(`${lk.url}/public/v1/query/whoami`, { method: "POST", headers: { "X-Session": res.session }, body: JSON.stringify({ organizationId: lk.creds.organizationId }) });
  assert.equal(r.status, 200);
  assert.equal((await r.json()).userId, lk.creds.userId);
});

test("get_activity and list_activities return what the submit returned", async () => {
  const res = await root.createUserTag({ userTagName: "audit-me", userIds: [] });
  const got = await root.getActivity({ activityId: res.activity.id });
  assert.deepEqual(got.activity, res.activity);
  const list = await root.getActivities({ filterByType: ["ACTIVITY_TYPE_CREATE_USER_TAG"], paginationOptions: { limit: "100" } });
  assert.ok(list.activities.some((a) => a.id === res.activity.id));
  assert.equal(typeof res.activity.createdAt.seconds, "string");
});

test("a tampered stamp, an expired key, a stale timestamp and a malformed body each get the right error", async () => {
  const org = lk.creds.organizationId;
  const body = JSON.stringify({ type: "ACTIVITY_TYPE_CREATE_USER_TAG", timestampMs: String(Date.now()), organizationId: org, parameters: { userTagName: "t1", userIds: [] } });
  const tampered = await rawPost("/public/v1/submit/create_user_tag", body.replace("t1", "t2"), { stampBody: body });
  assertTurnkeyError(tampered, 401, 16, "invalid stamp");

  const stale = JSON.stringify({ type: "ACTIVITY_TYPE_CREATE_USER_TAG", timestampMs: String(Date.now() - 2 * 3600 * 1000), organizationId: org, parameters: { userTagName: "t3", userIds: [] } });
  assertTurnkeyError(await rawPost("/public/v1/submit/create_user_tag", stale), 400, 3, "timestampMs");

  assertTurnkeyError(await rawPost("/public/v1/submit/create_user_tag", "{not json"), 400, 3, "malformed JSON");
  const missing = JSON.stringify({ type: "ACTIVITY_TYPE_CREATE_USER_TAG", timestampMs: String(Date.now()), organizationId: org, parameters: { userIds: [] } });
  assertTurnkeyError(await rawPost("/public/v1/submit/create_user_tag", missing), 400, 3, "parameters.userTagName");

  // A key that expires after one second.
  const kp = generateP256KeyPair();
  await root.createApiKeys({ userId: lk.creds.userId, apiKeys: [{ apiKeyName: "short", publicKey: kp.publicKey, curveType: "API_KEY_CURVE_P256", expirationSeconds: "1" }] });
  await new Promise((r) => setTimeout(r, 1500));
  const expired = await rawPost("/public/v1/query/whoami", JSON.stringify({ organizationId: org }), { privateKey: kp.privateKey, publicKey: kp.publicKey });
  assertTurnkeyError(expired, 401, 16, "Unauthenticated desc = expired api key publicKey");
  // The SDK surfaces the same as a TurnkeyRequestError.
  await assert.rejects(client(org, kp.privateKey, kp.publicKey).getWhoami({}), /expired api key/);
});

test("no private key or master key material in the database file or the logs", async () => {
  const master = readFileSync(join(lk.dataDir, "master.key"), "utf8").trim();
  const all = lk.allBytes();
  for (const s of [master, ...secrets]) {
    assert.ok(!all.includes(Buffer.from(s)), "secret found in clear (hex)");
    assert.ok(!all.includes(Buffer.from(s, "hex")), "secret found in clear (raw bytes)");
  }
});
