// The operator dashboard in a real browser (Debian's chromium driven by playwright-core)
// against a real `latchkey serve --dev`: sign in, find an organization by a user's e-mail, open an
// activity, change the auth proxy's allowed origins and session expiration, then check with plain
// HTTP that the running proxy applies them. Screenshots of each page go to docs/screenshots/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdirSync, existsSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { startLatchkey } from "./lib.mjs";

const shots = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "docs", "screenshots");
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
let lk, browser, page, op, configId;

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)`);
  lk = await startLatchkey();
  op = JSON.parse(readFileSync(join(lk.dataDir, "dev-operator.json"), "utf8"));
  ({ configId } = lk.proxy("enable", ["--allowed-origins", "https://old.example,https://keep.example"]));
  // Some data to look at: a user with an e-mail in a sub-organization, a wallet, a policy.
  const client = lk.client();
  await client.createSubOrganization({ subOrganizationName: "Bob's wallet", rootQuorumThreshold: 1,
    rootUsers: [{ userName: "bob", userEmail: "bob@shop.example", apiKeys: [], authenticators: [], oauthProviders: [] }],
    wallet: { walletName: "Bob main", accounts: [{ curve: "CURVE_SECP256K1", pathFormat: "PATH_FORMAT_BIP32", path: "m/44'/60'/0'/0/0", addressFormat: "ADDRESS_FORMAT_ETHEREUM" }] } });
  await client.createWallet({ walletName: "Treasury", accounts: [{ curve: "CURVE_ED25519", pathFormat: "PATH_FORMAT_BIP32", path: "m/44'/501'/0'/0'", addressFormat: "ADDRESS_FORMAT_SOLANA" }] });
  await client.createPolicy({ policyName: "Signers may sign", effect: "EFFECT_ALLOW", condition: "activity.resource == 'PRIVATE_KEY'", consensus: "approvers.count() >= 1", notes: "signing policy" });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"] });
  page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
  mkdirSync(shots, { recursive: true });
});

after(async () => {
  await browser?.close();
  if (lk) assert.equal(await lk.stop(), 0);
});

const shot = (name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });

test("an operator signs in, finds an organization, reads an activity and changes the auth proxy", async () => {
  await page.goto(`${lk.dashboardUrl}/`);
  assert.match(page.url(), /\/login$/);
  await shot("login");
  await page.fill("input[name=email]", op.email);
  await page.fill("input[name=password]", "not the password");
  await page.click("button");
  assert.match(await page.textContent(".alert"), /Wrong e-mail or password/);
  await page.fill("input[name=password]", op.password);
  await page.click("button");
  await page.waitForURL(`${lk.dashboardUrl}/`);
  assert.match(await page.textContent("h1"), /Overview/);
  await shot("overview");

  // Find Bob's sub-organization by his e-mail.
  await page.fill("form.search input[name=q]", "bob@shop.example");
  await page.click("form.search button");
  await page.waitForURL(/\/orgs\?q=/);
  await shot("search");
  await page.click("text=Bob's wallet");
  await page.waitForURL(/\/orgs\/[0-9a-f-]{36}$/);
  assert.match(await page.content(), /bob@shop\.example/);
  assert.match(await page.content(), /Bob main/);
  await shot("organization");

  // The dev organization's activity feed, and one activity.
  await page.goto(`${lk.dashboardUrl}/orgs/${lk.creds.organizationId}`);
  await shot("organization-root");
  await page.click("text=Activities");
  await page.waitForURL(/\/activities$/);
  await shot("activities");
  await page.click("text=CREATE_POLICY_V3");
  await page.waitForURL(/\/activities\/[0-9a-f-]{36}$/);
  assert.match(await page.content(), /Signers may sign/);
  await shot("activity");

  // The auth proxy: drop an origin, change the session lifetime.
  await page.goto(`${lk.dashboardUrl}/orgs/${lk.creds.organizationId}/proxy`);
  await page.fill("textarea[name=allowedOrigins]", "https://keep.example");
  await page.fill("input[name=sessionExpirationSeconds]", "1800");
  await page.fill("input[name=emailAppName]", "Shop Wallet");
  await page.click("button[value=save]");
  await page.waitForURL(/saved=1/);
  assert.match(await page.textContent(".notice"), /Saved/);
  assert.match(await page.content(), /Shop Wallet/);
  await shot("auth-proxy");

  for (const p of ["keys", "health", "audit"]) {
    await page.goto(`${lk.dashboardUrl}/${p}`);
    await shot(p);
  }
  assert.match(await page.content(), /auth proxy settings/);

  // The running proxy applies the change at once.
  const call = (origin) => fetch(`${lk.proxyUrl}/v1/wallet_kit_config`, { method: "POST", headers: { Origin: origin, "X-Auth-Proxy-Config-ID": configId }, body: "{}" });
  const ok = await call("https://keep.example");
  assert.equal(ok.status, 200);
  assert.equal((await ok.json()).sessionExpirationSeconds, "1800");
  const gone = await call("https://old.example");
  assert.equal(gone.status, 403);

  // No page showed a secret.
  const creds = JSON.parse(readFileSync(join(lk.dataDir, "dev-credentials.json"), "utf8"));
  for (const p of ["", "orgs", `orgs/${lk.creds.organizationId}`, `orgs/${lk.creds.organizationId}/proxy`, "keys"]) {
    await page.goto(`${lk.dashboardUrl}/${p}`);
    const html = await page.content();
    assert.equal(html.includes(creds.apiPrivateKey), false);
    assert.equal(/sealed|mnemonic/i.test(html), false);
  }
});
