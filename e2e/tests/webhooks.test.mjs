// Webhooks as Turnkey delivers them, checked with Turnkey's own verifier: @turnkey/crypto's
// verifyTurnkeyWebhookSignature against the keys of Latchkey's webhook JWKS (fetched and converted
// exactly as Turnkey's documentation shows), and the body being the activity itself.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { verifyTurnkeyWebhookSignature } from "@turnkey/crypto";
import { startLatchkey } from "./lib.mjs";

let lk, server, deliveries = [], waiters = [];

before(async () => {
  lk = await startLatchkey();
  server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      deliveries.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(200).end();
      waiters.splice(0).forEach((w) => w());
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
});

after(async () => {
  server.close();
  assert.equal(await lk.stop(), 0);
});

test("ACTIVITY_UPDATES: the activity itself, signed as Turnkey signs, verified by @turnkey/crypto", async () => {
  const client = lk.client();
  await client.createWebhookEndpoint({ name: "Activity updates", url: `http://127.0.0.1:${server.address().port}/hook`,
    subscriptions: [{ eventType: "ACTIVITY_UPDATES" }] });
  const { userTagId } = await client.createUserTag({ userTagName: "hooked", userIds: [] });
  let delivery;
  for (let i = 0; i < 100 && !delivery; i++) {
    delivery = deliveries.find((d) => JSON.parse(d.body).type === "ACTIVITY_TYPE_CREATE_USER_TAG");
    if (!delivery) await new Promise((r) => { waiters.push(r); setTimeout(r, 100); });
  }
  assert.ok(delivery, "no delivery of the create_user_tag activity");

  const jwks = await (await fetch(`${lk.url}/public/v1/discovery/webhooks/jwks`)).json();
  const verificationKeys = jwks.keys.map((key) => ({ keyId: key.kid, publicKey: Buffer.from(key.x, "base64url").toString("hex"), algorithm: "ed25519" }));
  const result = verifyTurnkeyWebhookSignature({ headers: delivery.headers, body: delivery.body, verificationKeys, maxTimestampAgeMs: 5 * 60 * 1000 });
  assert.equal(result.ok, true, JSON.stringify(result));
  assert.equal(delivery.headers["x-turnkey-event-type"], "ACTIVITY_UPDATES");
  assert.equal(delivery.headers["x-turnkey-organization-id"], lk.creds.organizationId);

  const activity = JSON.parse(delivery.body);
  for (const member of ["id", "organizationId", "status", "type", "fingerprint", "intent", "result", "votes"]) {
    assert.ok(member in activity, `the body has no ${member}`);
  }
  assert.equal(activity.status, "ACTIVITY_STATUS_COMPLETED");
  assert.equal(activity.result.createUserTagResult.userTagId, userTagId);

  // A tampered body fails Turnkey's verifier.
  const tampered = verifyTurnkeyWebhookSignature({ headers: delivery.headers, body: delivery.body.replace("hooked", "hacked"), verificationKeys,
    maxTimestampAgeMs: 5 * 60 * 1000 });
  assert.equal(tampered.ok, false);
});
