// The operator dashboard in a real browser (Debian's chromium driven by playwright-core)
// against a real `latchkey serve --dev`: sign in, find an organization by a user's e-mail, open an
// activity, change the auth proxy's allowed origins and session expiration, then check with plain
// HTTP that the running proxy applies them. Then the charts, the failed-activities feed, the health
// page and the audit log's filters and exports, and the layout fixes at a narrow width.
// Screenshots of each page go to docs/screenshots/.
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

test("charts, failed activities, health, audit filters and exports, narrow layout", async () => {
  const client = lk.client();
  // Traffic to chart: signatures with the Treasury wallet, and activities that fail.
  const { wallets } = await client.getWallets({});
  const treasury = wallets.find((w) => w.walletName === "Treasury");
  const { accounts } = await client.getWalletAccounts({ walletId: treasury.walletId });
  for (let i = 0; i < 6; i++) {
    await client.signRawPayload({ signWith: accounts[0].address, payload: `0${i}`.padStart(2, "0") + "ab",
      encoding: "PAYLOAD_ENCODING_HEXADECIMAL", hashFunction: "HASH_FUNCTION_NOT_APPLICABLE" });
  }
  for (let i = 0; i < 3; i++) {
    await client.signRawPayload({ signWith: "0x000000000000000000000000000000000000dEaD", payload: `0${i}ff`,
      encoding: "PAYLOAD_ENCODING_HEXADECIMAL", hashFunction: "HASH_FUNCTION_NO_OP" }).catch(() => {});
  }

  await page.goto(`${lk.dashboardUrl}/`);
  await page.click("a.card[href='/failed']");
  await page.waitForURL(/\/failed$/);
  assert.match(await page.textContent("h1"), /Failed activities/);
  assert.ok((await page.locator("tbody tr").count()) >= 3, "the failed feed lists the failures");
  await shot("failed");
  await page.click("tbody tr a[href^='/activities/']");
  await page.waitForURL(/\/activities\/[0-9a-f-]{36}$/);
  assert.match(await page.textContent("dl.facts"), /Initiator/);
  assert.equal(await page.locator("details pre").first().isVisible(), false, "the raw JSON starts collapsed");

  await page.goto(`${lk.dashboardUrl}/charts`);
  const svgs = page.locator("figure.chart svg");
  assert.ok((await svgs.count()) >= 7, "activity and request charts");
  assert.ok((await page.locator("figure.chart rect.s-completed").count()) >= 1, "completed activities drawn");
  assert.ok((await page.locator("figure.chart rect.s-failed").count()) >= 1, "failed activities drawn");
  const sigLine = await page.locator("polyline.l-sign").getAttribute("points");
  assert.ok(sigLine.split(" ").length === 60, "a point a minute");
  const box = await svgs.first().boundingBox();
  assert.ok(box.width > 300 && box.height > 80, `the chart is drawn at ${box.width}x${box.height}`);
  await shot("charts");
  await page.goto(`${lk.dashboardUrl}/charts?range=day&org=${lk.creds.organizationId}`);
  assert.match(await page.textContent("h1"), /Charts of/);
  await shot("charts-organization");
  await page.goto(`${lk.dashboardUrl}/charts?range=decade`);
  assert.match(await page.textContent(".alert"), /Unknown range/);

  await page.goto(`${lk.dashboardUrl}/health`);
  const health = await page.textContent("main");
  assert.match(health, /Database size\s*[0-9.]+ (KiB|MiB)/);
  assert.match(health, /data key version 1/);
  assert.match(health, /Requests served\s*[1-9][0-9]* API requests/);
  assert.match(health, /Webhook deliveries/);
  await shot("health");

  // The audit log: the proxy enabled from the command line, filtered; then both exports.
  await page.goto(`${lk.dashboardUrl}/audit`);
  await page.selectOption("select[name=operator]", "(command line)");
  await page.fill("input[name=action]", "proxy enabled");
  await page.click("form.audit button");
  await page.waitForURL(/operator=/);
  const rows = page.locator("tbody tr");
  assert.equal(await rows.count(), 1);
  assert.match(await rows.first().textContent(), /proxy enabled/);
  await page.goto(`${lk.dashboardUrl}/audit?outcome=success`);
  await shot("audit");
  for (const [link, check] of [["CSV", (t) => assert.match(t.split("\n")[0], /^id,at,operator,action,outcome,target,detail/)],
    ["JSON", (t) => assert.ok(JSON.parse(t).every((r) => r.outcome === "success"))]]) {
    const [dl] = await Promise.all([page.waitForEvent("download"), page.click(`a.button:text-is("${link}")`)]);
    assert.match(dl.suggestedFilename(), new RegExp(`^latchkey-audit-.*\\.${link.toLowerCase()}$`));
    check(readFileSync(await dl.path(), "utf8"));
  }

  // The type filter takes the short name the table shows, and its input is wide enough to type in.
  await page.goto(`${lk.dashboardUrl}/orgs/${lk.creds.organizationId}/activities`);
  const input = await page.locator("form.filters input[name=type]").boundingBox();
  assert.ok(input.width > 200, `the type input is ${input.width}px wide`);
  await page.fill("form.filters input[name=type]", "SIGN_RAW_PAYLOAD_V2");
  await page.click("form.filters button");
  await page.waitForURL(/type=SIGN_RAW_PAYLOAD_V2/);
  assert.ok((await page.locator("tbody tr").count()) >= 6);
  // At a phone's width an id stays on one line (the table scrolls instead).
  await page.setViewportSize({ width: 390, height: 800 });
  const idLines = await page.locator("td.id").first().evaluate((el) => {
    const r = document.createRange();
    r.selectNodeContents(el);
    return new Set([...r.getClientRects()].map((q) => Math.round(q.top))).size;
  });
  assert.equal(idLines, 1, `an id takes ${idLines} lines`);
  await shot("activities-narrow");
  await page.setViewportSize({ width: 1280, height: 860 });

  // Unknown paths are the dashboard's own page; key labels are words.
  const res = await page.goto(`${lk.dashboardUrl}/no/such/page`);
  assert.equal(res.status(), 404);
  assert.match(await page.textContent(".alert"), /There is no page/);
  await page.goto(`${lk.dashboardUrl}/keys`);
  assert.match(await page.textContent("main"), /Signer public key/);
  await shot("keys");
});
