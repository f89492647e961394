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
import { english, generateMnemonic, mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { createHmac, createPrivateKey, createPublicKey, pbkdf2Sync, verify as verifySignature } from "node:crypto";
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
const secrets = []; // mnemonics and keys shown in or typed into the frames, one-time codes
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
  // Codes of nine letters and digits: one cannot turn up in the logs or the database by chance.
  ({ configId } = lk.proxy("enable", ["--allowed-origins", appUrl, "--enabled-providers", "email,passkey", "--otp-length", "9", "--otp-alphanumeric",
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
  if (lk) {
    const all = lk.allBytes().toString("latin1");
    for (const secret of secrets) assert.ok(!all.includes(secret), "a secret (frame or one-time code) reached the server's logs or database");
    assert.equal(await lk.stop(), 0);
  }
  await smtp?.close();
  assert.deepEqual(offsite, [], "requests to hosts other than localhost");
});

// newBrowser opens a browser context and a page with a virtual passkey authenticator (holding
// credentials, when given); the context aborts every request that would leave the machine.
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
  if (process.env.DEBUG_KIT) {
    page.on("console", (m) => console.log("console:", m.type(), m.text()));
    page.on("response", async (r) => r.status() >= 400 && console.log("refused:", r.url(), r.status(), await r.text().catch(() => "")));
  }
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", { options: { protocol: "ctap2", transport: "internal",
    hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true } });
  for (const credential of credentials) await cdp.send("WebAuthn.addCredential", { authenticatorId, credential });
  const passkeys = async () => (await cdp.send("WebAuthn.getCredentials", { authenticatorId })).credentials;
  return { context, page, passkeys };
}

// load loads the app and waits for the kit to be ready.
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
  assert.equal(seen[0].url(), `${lk.proxyUrl}/v1/wallet_kit_config`, "from Latchkey's proxy");
  assert.equal(seen[0].status(), 200);
  const cfg = await seen[0].json();
  assert.deepEqual(cfg.enabledProviders, ["email", "passkey"]);
  assert.equal(cfg.otpLength, "9");
  // The server's side: the configuration the CLI shows is the one served.
  const shown = lk.proxy("show");
  assert.equal(shown.configId, configId);
  assert.deepEqual(cfg.enabledProviders, shown.settings.enabledProviders);
  assert.equal(cfg.otpLength, String(shown.settings.otpLength));
  assert.equal(cfg.organizationId, shown.organizationId);
  assert.equal(await authState(first.page), "unauthenticated");

  await first.page.click("#login");
  const modal = first.page; // the kit's auth modal
  await modal.getByPlaceholder("Enter your email").waitFor();
  await modal.getByText("Log in with passkey").waitFor();
  await modal.getByText("Sign up with passkey").waitFor();
  assert.equal(await modal.getByText(/Continue with (Google|Apple|Facebook|X|Discord)/).count(), 0, "no OAuth method is enabled");

  // The methods follow the server's configuration, not the kit's defaults: passkeys only.
  lk.proxy("update", ["--enabled-providers", "passkey"]);
  try {
    await load(first.page);
    await first.page.click("#login");
    await modal.getByText("Sign up with passkey").waitFor();
    assert.equal(await modal.getByPlaceholder("Enter your email").count(), 0, "no e-mail box once e-mail is disabled");
  } finally {
    lk.proxy("update", ["--enabled-providers", "email,passkey"]);
  }
  await load(first.page);
  await first.page.click("#login");
  await modal.getByPlaceholder("Enter your email").waitFor();
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

let wallet; // {walletId, eth, sol}: the wallet made in step 3

// signatures lists the sub-organization's completed sign_raw_payload activities, newest first.
async function signatures() {
  const { activities } = await root.getActivities({ organizationId: subOrgId, filterByType: ["ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2"] });
  return activities.filter((a) => a.status === "ACTIVITY_STATUS_COMPLETED");
}

test("3. a new wallet; Ethereum and Solana messages signed with the session, and with a passkey stamp", async () => {
  const { page } = first;
  const walletId = await ok(page, "createWallet", { walletName: "kit wallet", accounts: [ETH, SOL] });
  await ok(page, "refreshWallets");
  await page.locator("#wallets li", { hasText: "kit wallet" }).waitFor();
  const accounts = (await root.getWalletAccounts({ organizationId: subOrgId, walletId })).accounts;
  assert.deepEqual(accounts.map((a) => a.addressFormat), ["ADDRESS_FORMAT_ETHEREUM", "ADDRESS_FORMAT_SOLANA"]);
  const inPage = await page.evaluate((id) => window.kit.wallets.find((w) => w.walletId === id).accounts, walletId);
  assert.deepEqual(inPage.map((a) => a.address), accounts.map((a) => a.address));
  wallet = { walletId, eth: inPage[0], sol: inPage[1] };

  const message = "Latchkey signs for the kit";
  const eth = await ok(page, "signMessage", { message, walletAccount: wallet.eth, addEthereumPrefix: true });
  const signature = `0x${eth.r}${eth.s}${(27 + Number.parseInt(eth.v, 16)).toString(16)}`;
  assert.equal(await verifyMessage({ address: wallet.eth.address, message, signature }), true, "viem verifies the Ethereum signature");

  const sol = await ok(page, "signMessage", { message, walletAccount: wallet.sol });
  const solKey = createPublicKey({ format: "jwk", key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(accounts[1].publicKey, "hex").toString("base64url") } });
  assert.equal(verifySignature(null, Buffer.from(message), solKey, Buffer.from(sol.r + sol.s, "hex")), true, "the Ed25519 signature verifies");

  const count = (await first.passkeys())[0].signCount;
  const stamped = await ok(page, "signMessage", { message: "stamped by the passkey", walletAccount: wallet.eth, addEthereumPrefix: true,
    stampWith: "passkey" });
  const digest = hashMessage("stamped by the passkey");
  assert.equal(await recoverAddress({ hash: digest, signature: `0x${stamped.r}${stamped.s}${(27 + Number.parseInt(stamped.v, 16)).toString(16)}` }),
    wallet.eth.address);
  assert.equal((await first.passkeys())[0].signCount, count + 1, "the passkey signed the request");

  // The server's record: three signatures in the sub-organization, the last one voted by the passkey.
  const signed = await signatures();
  assert.equal(signed.length, 3);
  const byPasskey = signed.find((a) => a.intent.signRawPayloadIntentV2.payload.includes(Buffer.from("stamped by the passkey").toString("hex")));
  assert.ok(byPasskey, JSON.stringify(signed.map((a) => a.intent)));
  assert.equal(byPasskey.votes[0].scheme, "SIGNATURE_SCHEME_TK_API_WEBAUTHN");
  assert.equal(byPasskey.votes[0].userId, userId);
  const [authenticator] = (await root.getAuthenticators({ organizationId: subOrgId, userId })).authenticators;
  assert.equal(byPasskey.votes[0].publicKey, authenticator.credential.publicKey);
  assert.ok(signed.filter((a) => a !== byPasskey).every((a) => a.votes[0].scheme === "SIGNATURE_SCHEME_TK_API_P256"), "the others by the session key");
});

const B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
function base58(bytes) {
  let n = BigInt("0x" + (Buffer.from(bytes).toString("hex") || "0"));
  let s = "";
  while (n > 0n) { s = B58[Number(n % 58n)] + s; n /= 58n; }
  for (const b of bytes) { if (b !== 0) break; s = "1" + s; }
  return s;
}

// solanaAddress derives m/44'/501'/0'/0' from a mnemonic (BIP-39 seed, SLIP-10 for Ed25519).
function solanaAddress(mnemonic) {
  const seed = pbkdf2Sync(mnemonic.normalize("NFKD"), "mnemonic", 2048, 64, "sha512");
  let I = createHmac("sha512", "ed25519 seed").update(seed).digest();
  for (const i of [44, 501, 0, 0]) {
    const index = Buffer.alloc(4);
    index.writeUInt32BE((i | 0x80000000) >>> 0);
    I = createHmac("sha512", I.subarray(32)).update(Buffer.concat([Buffer.alloc(1), I.subarray(0, 32), index])).digest();
  }
  const der = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), I.subarray(0, 32)]);
  const x = createPublicKey(createPrivateKey({ key: der, format: "der", type: "pkcs8" })).export({ format: "jwk" }).x;
  return base58(Buffer.from(x, "base64url"));
}

const framed = (page, path) => page.frameLocator(`iframe[src^="${lk.framesUrl}${path}"]`);
// frameReady waits until the kit's frame at path is up: it styles the frame (APPLY_SETTINGS) once
// the frame answered with its key, and only then hands the frame's client to its dialog.
async function frameReady(page, path) {
  await framed(page, path).locator("#secret[style]").waitFor({ state: "attached" });
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}
async function shownInFrame(page) {
  const secret = framed(page, "/export").locator("#secret");
  await secret.filter({ hasText: /\S/ }).waitFor();
  return (await secret.textContent()).trim();
}
async function completed(type) {
  const { activities } = await root.getActivities({ organizationId: subOrgId, filterByType: [type] });
  return activities.filter((a) => a.status === "ACTIVITY_STATUS_COMPLETED");
}
test("4. export through Latchkey's export frame: the mnemonic and an account's key; import a mnemonic through its import frame", async () => {
  const { page } = first;
  // The kit's export dialog: a warning, then the frame shows the mnemonic.
  await page.evaluate((walletId) => { window.exporting = window.kit.handleExportWallet({ walletId }); }, wallet.walletId);
  await frameReady(page, "/export");
  await page.getByRole("button", { name: "Export Wallet" }).click();
  const mnemonic = await shownInFrame(page);
  secrets.push(mnemonic);
  assert.equal(mnemonic.split(" ").length, 12);
  assert.equal(mnemonicToAccount(mnemonic).address, wallet.eth.address, "the mnemonic derives the Ethereum account");
  assert.equal(solanaAddress(mnemonic), wallet.sol.address, "the mnemonic derives the Solana account");
  assert.equal((await page.content()).includes(mnemonic.split(" ").slice(0, 3).join(" ")), false, "the mnemonic stays in the frame");
  await page.getByRole("button", { name: "Done" }).click();
  await page.evaluate(() => window.exporting);
  assert.equal((await completed("ACTIVITY_TYPE_EXPORT_WALLET")).length, 1);

  await page.evaluate((address) => { window.exporting = window.kit.handleExportWalletAccount({ address }); }, wallet.eth.address);
  await frameReady(page, "/export");
  await page.getByRole("button", { name: "Export Wallet" }).click(); // the kit's label for an account too
  const key = await shownInFrame(page);
  secrets.push(key);
  assert.equal(privateKeyToAccount(key.startsWith("0x") ? key : `0x${key}`).address, wallet.eth.address);
  await page.getByRole("button", { name: "Done" }).click();
  await page.evaluate(() => window.exporting);
  assert.equal((await completed("ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT")).length, 1);

  // The kit's import dialog: the user types a mnemonic into Latchkey's import frame.
  const typed = generateMnemonic(english);
  secrets.push(typed);
  await page.evaluate((accounts) => {
    // The kit's success screen loads an animation from lottie.host (docs/compatibility.md): none.
    window.importing = window.kit.handleImportWallet({ walletName: "imported", defaultWalletAccounts: accounts, successPageDuration: 0 });
  }, [ETH, SOL]);
  await frameReady(page, "/import");
  await framed(page, "/import").locator("#secret").fill(typed);
  await page.getByRole("button", { name: "Import" }).click();
  const importedId = await page.evaluate(() => window.importing);
  await page.locator("#wallets li", { hasText: "imported" }).waitFor();
  const accounts = (await root.getWalletAccounts({ organizationId: subOrgId, walletId: importedId })).accounts;
  assert.deepEqual(accounts.map((a) => a.address), [mnemonicToAccount(typed).address, solanaAddress(typed)]);
  assert.equal((await completed("ACTIVITY_TYPE_IMPORT_WALLET")).length, 1);
  assert.deepEqual(await kitErrors(page), []);
});

// passkeyLogin logs in from the kit's modal with a discoverable passkey; the kit names the
// parent organization and the server finds the sub-organization holding the credential.
async function passkeyLogin(b) {
  const { page } = b;
  const logins = [];
  const onRequest = (r) => r.url().endsWith("/public/v1/submit/stamp_login") && logins.push(r);
  page.on("request", onRequest);
  await page.click("#login");
  await page.getByText("Log in with passkey").click();
  await page.waitForSelector('#state[data-auth="authenticated"]', { timeout: 30000 });
  page.off("request", onRequest);
  assert.equal(logins.length, 1);
  assert.equal(logins[0].postDataJSON().organizationId, lk.creds.organizationId, "the login names the parent organization");
  assert.ok(await logins[0].headerValue("x-stamp-webauthn"), "stamped by the passkey");
  await page.locator("#wallets li", { hasText: "kit wallet" }).waitFor();
  const session = await ok(page, "getSession");
  assert.equal(session.organizationId, subOrgId);
  assert.equal(session.userId, userId);
  assert.equal((await ok(page, "fetchUser")).userId, userId);
  const keys = (await root.getApiKeys({ organizationId: subOrgId, userId })).apiKeys;
  assert.ok(keys.some((k) => k.credential.publicKey === session.publicKey), "the new session key is registered with the server");
  return session;
}

test("5. log out, log in again with the passkey; and from a second browser holding the same passkey", async () => {
  const { page } = first;
  const old = await ok(page, "getSession");
  await ok(page, "logout");
  await page.waitForSelector('#state[data-auth="unauthenticated"]');
  assert.equal((await kit(page, "getSession")).value, undefined);
  const again = await passkeyLogin(first);
  assert.notEqual(again.publicKey, old.publicKey);

  const [passkey] = await first.passkeys();
  const second = await newBrowser([passkey]);
  await load(second.page);
  assert.equal(await authState(second.page), "unauthenticated");
  const there = await passkeyLogin(second);
  assert.notEqual(there.publicKey, again.publicKey);
  assert.equal((await second.passkeys())[0].signCount > passkey.signCount, true);
  assert.deepEqual(await kitErrors(page), []);
  assert.deepEqual(await kitErrors(second.page), []);
});

// codeIn reads the one-time code from an e-mail's text part (alone on an indented line).
function codeIn(message) {
  const m = message.data.match(/^ {4}([0-9A-Z]{6,9})\s*$/m);
  assert.ok(m, `no code in ${message.data}`);
  return m[1];
}

// emailOtp runs docs/compatibility.md's e-mail route in the page: the kit's initOtp, the code
// from the e-mail over SMTP, encrypted to Latchkey's OTP key, then the kit's sign-up or login.
async function emailOtp(page, email) {
  const seen = smtp.messages.length;
  const started = await page.evaluate((email) => window.emailOtp.start(email), email);
  assert.ok(started.otpId && started.otpEncryptionTargetBundle, JSON.stringify(started));
  const message = await smtp.next(email, seen);
  assert.match(message.data, /Kit E2E/);
  const code = codeIn(message);
  assert.equal(code.length, 9);
  secrets.push(code);
  return page.evaluate((args) => window.emailOtp.finish(args), { ...started, email, code });
}

test("6. e-mail one-time codes: sign-up, login, and the session refresh the kit does before expiry", async () => {
  // Sessions of 70 s: the kit refreshes a session one minute before it expires.
  lk.proxy("update", ["--session-expiration-seconds", "70"]);
  const b = await newBrowser();
  const { page } = b;
  await load(page);
  const email = "kit-user@example.com";
  const signup = await emailOtp(page, email);
  assert.equal(signup.action, "signup");
  await page.waitForSelector('#state[data-auth="authenticated"]');
  await page.locator("#wallets li", { hasText: "e-mail wallet" }).waitFor();
  const session = await ok(page, "getSession");
  const { organizationIds } = await root.getVerifiedSubOrgIds({ organizationId: lk.creds.organizationId, filterType: "EMAIL", filterValue: email });
  assert.deepEqual(organizationIds, [session.organizationId], "the sub-organization holds the address as verified");
  const [user] = (await root.getUsers({ organizationId: session.organizationId })).users;
  assert.equal(user.userEmail, email);
  assert.deepEqual((await root.getWallets({ organizationId: session.organizationId })).wallets.map((w) => w.walletName), ["e-mail wallet"]);

  await ok(page, "logout");
  await page.waitForSelector('#state[data-auth="unauthenticated"]');
  const login = await emailOtp(page, email);
  assert.deepEqual(login, { action: "login", organizationId: session.organizationId });
  await page.waitForSelector('#state[data-auth="authenticated"]');
  const loggedIn = await ok(page, "getSession");
  assert.equal(loggedIn.userId, user.userId);
  assert.ok(loggedIn.expiry - Date.now() / 1000 <= 70, "the configured session lifetime");

  // Ten seconds later the kit warns and refreshes: a new session key, known to the server.
  await page.waitForFunction(() => window.kitEvents.some((e) => e.type === "beforeSessionExpiry"), null, { timeout: 30000 });
  await page.waitForFunction((old) => window.kit.session && window.kit.session.publicKey !== old, loggedIn.publicKey, { timeout: 30000 });
  const refreshed = await ok(page, "getSession");
  assert.equal(refreshed.organizationId, session.organizationId);
  assert.ok(refreshed.expiry > loggedIn.expiry);
  const keys = (await root.getApiKeys({ organizationId: session.organizationId, userId: user.userId })).apiKeys;
  assert.ok(keys.some((k) => k.credential.publicKey === refreshed.publicKey), "the refreshed session key is registered with the server");
  assert.equal((await ok(page, "fetchUser")).userId, user.userId);
  assert.deepEqual(await kitErrors(page), []);
});

test("7. the older @turnkey/sdk-browser e-mail auth through Latchkey's auth frame", async () => {
  const { page } = await newBrowser();
  await page.goto(`${appUrl}/legacy.html`);
  await page.waitForFunction(() => window.legacy);
  const targetPublicKey = await page.evaluate(() => window.legacy.publicKey());
  assert.match(targetPublicKey, /^04[0-9a-f]{128}$/);

  // The app's backend (the parent organization's API key) sends the e-mail for the user of step 6.
  const email = "kit-user@example.com";
  const [organizationId] = (await root.getVerifiedSubOrgIds({ organizationId: lk.creds.organizationId, filterType: "EMAIL",
    filterValue: email })).organizationIds;
  const seen = smtp.messages.length;
  const sent = await lk.client(undefined, organizationId).emailAuth({ email, targetPublicKey,
    emailCustomization: { appName: "Kit E2E", magicLinkTemplate: "https://wallet.example/auth?bundle=%s" } });
  const message = await smtp.next(email, seen);
  const text = message.data.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));
  const link = text.match(/https:\/\/wallet\.example\/auth\?bundle=([A-Za-z0-9%]+)/);
  assert.ok(link, `no magic link in ${message.data}`);

  // Turnkey's examples ask whoami of the parent organization with the sub-organization's
  // credential; the answer is the sub-organization's user.
  const me = await page.evaluate(([bundle, org]) => window.legacy.login(bundle, org), [decodeURIComponent(link[1]), lk.creds.organizationId]);
  assert.equal(me.userId, sent.userId);
  assert.equal(me.organizationId, organizationId);
  const inSub = await page.evaluate((org) => window.legacy.whoami(org), organizationId);
  assert.deepEqual(inSub, me);
});

test("8. no request left the machine, and the guard that says so aborts one that would", async () => {
  assert.deepEqual(offsite, [], "requests to hosts other than localhost");
  assert.deepEqual(problems, [], "errors in the pages");
  const { page } = await newBrowser();
  await load(page);
  const r = await page.evaluate(() => fetch("https://export.turnkey.com/").then(() => "fetched", (e) => e.message));
  assert.match(r, /Failed to fetch/);
  assert.deepEqual(offsite.splice(0), ["https://export.turnkey.com/"]);
});
