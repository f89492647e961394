// Turnkey's Embedded Wallet Kit (the published @turnkey/react-wallet-kit) in Debian's chromium,
// driven by playwright-core, against a real `latchkey serve --dev`: a small app (e2e/kit/,
// bundled here with esbuild) served at http://localhost, passkeys from a DevTools WebAuthn
// virtual authenticator, one-time codes over real SMTP, export and import through Latchkey's own
// frames. Every step is checked in the page and by reading the server with @turnkey/sdk-server.
// No request may leave the machine.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { readFileSync, existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, extname } from "node:path";
import { chromium } from "playwright-core";
import { verifyMessage, hashMessage, recoverAddress } from "viem";
import { mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { createPublicKey, verify as verifySignature } from "node:crypto";
import { startLatchkey, freePort } from "./lib.mjs";
import { startSMTP } from "./smtp.mjs";
import { buildKitApps } from "../kit/build.mjs";

const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
  // Partitioned third-party storage, as a user's Chromium has it (see frames.test.mjs).
  "--disable-features=Translate,HttpsUpgrades,PaintHolding,MediaRouter,OptimizationHints"];
const ETH = { curve: "CURVE_SECP256K1", pathFormat: "PATH_FORMAT_BIP32", path: "m/44'/60'/0'/0/0", addressFormat: "ADDRESS_FORMAT_ETHEREUM" };
const SOL = { curve: "CURVE_ED25519", pathFormat: "PATH_FORMAT_BIP32", path: "m/44'/501'/0'/0'", addressFormat: "ADDRESS_FORMAT_SOLANA" };
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".json": "application/json" };

let lk, smtp, app, appUrl, browser, configId, root;
const offsite = []; // requests to a host other than localhost, aborted
const problems = []; // page errors, in any page
const contexts = [];

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing (apt-get install chromium)`);
  smtp = await startSMTP();
  lk = await startLatchkey(["--smtp-addr", `127.0.0.1:${smtp.port}`, "--smtp-from", "auth@latchkey.test", "--smtp-mode", "plain"]);
  root = lk.client();
  const dist = await buildKitApps(mkdtempSync(join(tmpdir(), "latchkey-kit-app-")));
  const port = await freePort();
  // WebAuthn refuses an IP address as relying party: the app is http://localhost.
  appUrl = `http://localhost:${port}`;
  ({ configId } = lk.proxy("enable", ["--allowed-origins", appUrl, "--enabled-providers", "email,passkey", "--otp-length", "6",
    "--email-app-name", "Kit E2E"]));
  const config = { apiBaseUrl: lk.url, authProxyUrl: lk.proxyUrl, authProxyConfigId: configId, organizationId: lk.creds.organizationId,
    framesUrl: lk.framesUrl, otpPublicKey: lk.keys.otpPublicKey };
  app = http.createServer((req, res) => {
    const path = new URL(req.url, appUrl).pathname;
    if (path === "/config.json") {
      res.writeHead(200, { "Content-Type": "application/json" });
      return res.end(JSON.stringify(config));
    }
    const file = join(dist, path === "/" ? "index.html" : path.slice(1).replace(/[^A-Za-z0-9._-]/g, ""));
    if (!existsSync(file)) {
      res.writeHead(404);
      return res.end();
    }
    res.writeHead(200, { "Content-Type": TYPES[extname(file)] ?? "application/octet-stream" });
    res.end(readFileSync(file));
  });
  await new Promise((r) => app.listen(port, "127.0.0.1", r));
  browser = await chromium.launch({ executablePath: CHROMIUM, args: BROWSER_ARGS });
});

after(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  await browser?.close();
  app?.close();
  if (lk) assert.equal(await lk.stop(), 0);
  await smtp?.close();
  assert.deepEqual(offsite, [], "requests to hosts other than localhost");
});

// newBrowser opens a browser context with a virtual passkey authenticator (holding credentials,
// when given) and the app loaded; it aborts every request that would leave the machine.
async function newBrowser(credentials = []) {
  const context = await browser.newContext();
  contexts.push(context);
  await context.route("**/*", (route) => {
    const { hostname } = new URL(route.request().url());
    if (hostname === "localhost" || hostname === "127.0.0.1") return route.continue();
    offsite.push(route.request().url());
    return route.abort("blockedbyclient");
  });
  const page = await context.newPage();
  page.on("pageerror", (e) => problems.push(String(e)));
  if (process.env.DEBUG_KIT) page.on("console", (m) => console.log("console:", m.type(), m.text()));
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", { options: { protocol: "ctap2", transport: "internal",
    hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true } });
  for (const credential of credentials) await cdp.send("WebAuthn.addCredential", { authenticatorId, credential });
  const passkeys = async () => (await cdp.send("WebAuthn.getCredentials", { authenticatorId })).credentials;
  return { context, page, passkeys };
}

// kitReady loads the app and waits for the kit to be ready.
async function load(page) {
  await page.goto(appUrl);
  await page.waitForSelector('#state[data-client="ready"]', { timeout: 30000 });
}

const authState = (page) => page.locator("#state").getAttribute("data-auth");
const kitErrors = (page) => page.evaluate(() => window.kitEvents.filter((e) => e.type === "error"));
// kit runs a method of the kit's hook in the page; a rejection comes back as {error}.
const kit = (page, method, ...args) =>
  page.evaluate(async ({ method, args }) => {
    try {
      return { value: await window.kit[method](...args) };
    } catch (e) {
      return { error: `${e.message} ${e.cause?.message ?? ""}` };
    }
  }, { method, args });
async function ok(page, method, ...args) {
  const r = await kit(page, method, ...args);
  assert.equal(r.error, undefined, `${method}: ${r.error} ${JSON.stringify(await kitErrors(page))}`);
  return r.value;
}

let first, subOrgId, userId, credentialId;

test("1. the kit starts on Latchkey's wallet_kit_config and shows the enabled methods", async () => {
  first = await newBrowser();
  const seen = [];
  first.page.on("response", (r) => r.url().endsWith("/v1/wallet_kit_config") && seen.push(r));
  await load(first.page);
  assert.equal(seen.length >= 1, true, "the kit fetched wallet_kit_config");
  assert.equal(seen[0].status(), 200);
  const cfg = await seen[0].json();
  assert.deepEqual(cfg.enabledProviders, ["email", "passkey"]);
  // The server's side: the configuration the CLI shows is the one served.
  const shown = lk.proxy("show");
  assert.equal(shown.configId, configId);
  assert.equal(cfg.organizationId, lk.creds.organizationId);
  assert.equal(await authState(first.page), "unauthenticated");

  await first.page.click("#login");
  const modal = first.page; // the kit's auth modal
  await modal.getByPlaceholder("Enter your email").waitFor();
  await modal.getByText("Log in with passkey").waitFor();
  await modal.getByText("Sign up with passkey").waitFor();
  assert.equal(await modal.getByText(/Continue with (Google|Apple|Facebook|X|Discord)/).count(), 0, "no OAuth method is enabled");
});

test("2. passkey sign-up: one sub-organization with the passkey, the wallet asked for and a session; a reload restores it", async () => {
  const { page } = first;
  const before = (await root.getSubOrgIds({ organizationId: lk.creds.organizationId })).organizationIds;
  await page.getByText("Sign up with passkey").click();
  await page.waitForSelector('#state[data-auth="authenticated"]', { timeout: 30000 });
  await page.waitForSelector('#state[data-wallets="1"]');
  assert.deepEqual(await kitErrors(page), []);

  const session = await ok(page, "getSession");
  subOrgId = session.organizationId;
  userId = session.userId;
  const after = (await root.getSubOrgIds({ organizationId: lk.creds.organizationId })).organizationIds;
  assert.deepEqual(after.filter((id) => !before.includes(id)), [subOrgId], "exactly one new sub-organization");
  const [passkey] = await first.passkeys();
  assert.ok(passkey, "the authenticator holds the passkey");
  credentialId = Buffer.from(passkey.credentialId, "base64").toString("base64url");

  const auths = await root.getAuthenticators({ organizationId: subOrgId, userId });
  assert.equal(auths.authenticators.length, 1);
  assert.equal(auths.authenticators[0].credentialId, credentialId);
  const wallets = (await root.getWallets({ organizationId: subOrgId })).wallets;
  assert.deepEqual(wallets.map((w) => w.walletName), ["first wallet"]);
  const accounts = (await root.getWalletAccounts({ organizationId: subOrgId, walletId: wallets[0].walletId })).accounts;
  assert.equal(accounts.length, 1);
  assert.equal(accounts[0].addressFormat, "ADDRESS_FORMAT_ETHEREUM");
  // The session's key is the user's API key in the sub-organization.
  const keys = (await root.getApiKeys({ organizationId: subOrgId, userId })).apiKeys;
  assert.ok(keys.some((k) => k.credential.publicKey === session.publicKey), "the session key is registered with the server");
  const me = await ok(page, "fetchUser");
  assert.equal(me.userId, userId);

  await page.reload();
  await page.waitForSelector('#state[data-client="ready"]');
  await page.waitForSelector('#state[data-auth="authenticated"]');
  assert.equal((await ok(page, "getSession")).publicKey, session.publicKey, "the same session, restored");
  assert.equal((await first.passkeys())[0].signCount, passkey.signCount, "no new passkey login");
});
