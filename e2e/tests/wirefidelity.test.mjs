// What Turnkey's own code sends with empty required members, through the real
// @turnkey/sdk-server client: the examples' policy helpers (createPolicy with notes ""),
// setOrganizationFeature with value "", and @turnkey/core's removeUserEmail /
// removeUserPhoneNumber, which call updateUserEmail / updateUserPhoneNumber with "" to remove
// the contact. Turnkey's API is proto3, where "" and absent are one: "required" means named.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startLatchkey } from "./lib.mjs";

let lk, root;

before(async () => {
  lk = await startLatchkey();
  root = lk.client();
});

after(async () => {
  assert.equal(await lk.stop(), 0);
});

test("createPolicy with notes \"\" (the examples' policy helpers)", async () => {
  const { policyId } = await root.createPolicy({ policyName: "Allow signing", effect: "EFFECT_ALLOW",
    condition: "activity.resource == 'PRIVATE_KEY'", consensus: "approvers.count() >= 1", notes: "" });
  const { policy } = await root.getPolicy({ policyId });
  assert.equal(policy.notes, "");
});

test("setOrganizationFeature with value \"\"", async () => {
  const { features } = await root.setOrganizationFeature({ name: "FEATURE_NAME_EMAIL_AUTH", value: "" });
  assert.ok(features.some((f) => f.name === "FEATURE_NAME_EMAIL_AUTH" && (f.value ?? "") === ""));
});

test("updateUserEmail and updateUserPhoneNumber with \"\" remove the contact (core's removeUserEmail)", async () => {
  const { userIds } = await root.createUsers({ users: [{ userName: "bob", userEmail: "bob@example.com", userPhoneNumber: "+14155550123",
    apiKeys: [], authenticators: [], oauthProviders: [], userTags: [] }] });
  const userId = userIds[0];
  // Exactly what @turnkey/core's removeUserEmail sends: updateUserEmail({ userId, userEmail: "" }).
  await root.updateUserEmail({ userId, userEmail: "" });
  await root.updateUserPhoneNumber({ userId, userPhoneNumber: "" });
  const { user } = await root.getUser({ userId });
  assert.equal(user.userEmail ?? "", "");
  assert.equal(user.userPhoneNumber ?? "", "");
});
