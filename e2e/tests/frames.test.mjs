// Latchkey's own frames (docs/frames.md) in a real browser (Debian's chromium driven by
// playwright-core), spoken to by the published @turnkey/iframe-stamper (the version the SDKs
// ship, 2.11) from a parent page on http://localhost, against a real `latchkey serve --dev`:
// export a wallet and account keys (shown in the frame, in each format), import what the user
// types, and stamp with a credential bundle, each result checked against the server.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { readFileSync, existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";
import { startLatchkey, freePort } from "./lib.mjs";

const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const ETH = { curve: "CURVE_SECP256K1", pathFormat: "PATH_FORMAT_BIP32", path: "m/44'/60'/0'/0/0", addressFormat: "ADDRESS_FORMAT_ETHEREUM" };
const SOL = { curve: "CURVE_ED25519", pathFormat: "PATH_FORMAT_BIP32", path: "m/44'/501'/0'/0'", addressFormat: "ADDRESS_FORMAT_SOLANA" };
const B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

let lk, client, context, page, parent, parentUrl, org;
const problems = []; // console errors and page errors, in any frame
const secrets = [];

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)`);
  // The stamper the SDKs use (a dependency of @turnkey/sdk-browser here), served to the parent as is.
  const stamper = readFileSync(createRequire(import.meta.url).resolve("@turnkey/iframe-stamper").replace(/index\.js$/, "index.mjs"));
  lk = await startLatchkey();
  client = lk.client();
  org = lk.creds.organizationId;
  const port = await freePort();
  parent = http.createServer((req, res) => {
    if (req.url === "/stamper.mjs") {
      res.writeHead(200, { "Content-Type": "text/javascript" });
      return res.end(stamper);
    }
    res.writeHead(200, { "Content-Type": "text/html" });
    res.end(`<!doctype html><html><body><div id="c"></div><script type="module">
      import { IframeStamper } from "/stamper.mjs";
      window.IframeStamper = IframeStamper;
    </script></body></html>`);
  });
  await new Promise((r) => parent.listen(port, "127.0.0.1", r));
  // localhost: another origin than the frames' 127.0.0.1, and a secure context.
  parentUrl = `http://localhost:${port}/`;
  // Storage as a user's Chromium has it: playwright disables ThirdPartyStoragePartitioning (its
  // --disable-features), and Chromium then refuses localStorage to every third-party frame. A
  // later --disable-features replaces its list, so partitioned storage (the default) is back. The
  // last test keeps playwright's default, as a browser that blocks third-party storage.
  context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "latchkey-frames-profile-")),
    { executablePath: CHROMIUM, args: [...BROWSER_ARGS, "--disable-features=Translate,HttpsUpgrades,PaintHolding,MediaRouter,OptimizationHints"] });
  page = context.pages()[0] ?? (await context.newPage());
  watch(page);
});

const BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

function watch(p) {
  p.on("console", (m) => (m.type() === "error" ? problems.push(m.text()) : process.env.DEBUG_FRAMES && console.log("console:", m.type(), m.text())));
  p.on("pageerror", (e) => problems.push(String(e)));
}

after(async () => {
  await context?.close();
  parent?.close();
  if (lk) {
    const all = lk.allBytes().toString("latin1");
    for (const s of secrets) assert.ok(!all.includes(s), "a secret shown in a frame reached the server's logs or database in the clear");
    assert.equal(await lk.stop(), 0);
  }
});

// open loads the parent page and a frame through IframeStamper.init; it returns the public key.
async function open(path, ttl) {
  await page.goto(parentUrl);
  await page.waitForFunction(() => window.IframeStamper);
  return page.evaluate(async ({ url, ttl }) => {
    window.s = new IframeStamper({ iframeUrl: url, iframeContainer: document.getElementById("c"),
      iframeElementId: "turnkey-default-iframe-element-id" });
    return window.s.init(ttl);
  }, { url: lk.framesUrl + path, ttl });
}

// call runs a stamper method in the page; a rejection comes back as {error}.
const call = (method, ...args) =>
  page.evaluate(async ({ method, args }) => {
    try {
      return { value: await window.s[method](...args) };
    } catch (e) {
      return { error: e.message };
    }
  }, { method, args });

const frameText = () => page.frame({ url: (u) => u.href.startsWith(lk.framesUrl) }).locator("#secret").textContent();

function base58(bytes) {
  let n = BigInt("0x" + (Buffer.from(bytes).toString("hex") || "0"));
  let s = "";
  while (n > 0n) { s = B58[Number(n % 58n)] + s; n /= 58n; }
  for (const b of bytes) { if (b !== 0) break; s = "1" + s; }
  return s;
}
function unbase58(s) {
  let n = 0n;
  for (const c of s) n = n * 58n + BigInt(B58.indexOf(c));
  const hex = n.toString(16).padStart(2 * Math.ceil(n.toString(16).length / 2), "0");
  return Buffer.concat([Buffer.alloc(s.match(/^1*/)[0].length), Buffer.from(hex, "hex")]);
}

let wallet, mnemonic;

test("export: the wallet's mnemonic and an account's key in every format are shown in the frame", async () => {
  wallet = await client.createWallet({ walletName: "framed", accounts: [ETH, SOL] });
  const [ethAddress, solAddress] = wallet.addresses;

  const key = await open(`/export?organizationId=${org}`);
  assert.match(key, /^04[0-9a-f]{128}$/);
  assert.deepEqual(await call("applySettings", { styles: { fontSize: "16px", backgroundColor: "#E5E7EB", color: "#828282" } }), { value: true });
  const exp = await client.exportWallet({ walletId: wallet.walletId, targetPublicKey: key });
  // Another organization's, and a bundle naming a key this deployment does not sign with: refused.
  assert.match((await call("injectWalletExportBundle", exp.exportBundle, "another-org")).error, /another organization/);
  const forged = JSON.stringify({ ...JSON.parse(exp.exportBundle), enclaveQuorumPublic: lk.keys.notarizerPublicKey });
  assert.match((await call("injectWalletExportBundle", forged, org)).error, /does not trust/);
  assert.deepEqual(await call("injectWalletExportBundle", exp.exportBundle, org), { value: true });
  mnemonic = (await frameText()).trim();
  secrets.push(mnemonic);
  assert.equal(mnemonic.split(" ").length, 12);
  // Used once.
  assert.match((await call("injectWalletExportBundle", exp.exportBundle, org)).error, /used or reset/);

  const formats = {
    HEXADECIMAL: (t) => assert.match(t, /^0x[0-9a-f]{64}$/),
    SOLANA: (t) => {
      const raw = unbase58(t);
      assert.equal(raw.length, 64);
      assert.equal(base58(raw.subarray(32)), solAddress, "the Ed25519 public half Chromium derived is the account's address");
    },
    BITCOIN_MAINNET_WIF: (t) => assert.match(t, /^[KL][1-9A-HJ-NP-Za-km-z]{51}$/),
    BITCOIN_TESTNET_WIF: (t) => assert.match(t, /^c[1-9A-HJ-NP-Za-km-z]{51}$/),
    SUI_BECH32: (t) => assert.match(t, /^suiprivkey1[02-9ac-hj-np-z]{59}$/),
  };
  for (const [format, check] of Object.entries(formats)) {
    const k = await open(`/export?organizationId=${org}`);
    const ea = await client.exportWalletAccount({ address: solAddress, targetPublicKey: k });
    assert.deepEqual(await call("injectKeyExportBundle", ea.exportBundle, org, format), { value: true }, format);
    const text = (await frameText()).trim();
    secrets.push(text);
    check(text);
  }
  assert.ok(ethAddress);
});

test("export: the frame's headers, and nothing logged in any frame", async () => {
  const r = await fetch(`${lk.framesUrl}/export?organizationId=${org}`);
  assert.equal(r.status, 200);
  assert.match(r.headers.get("content-security-policy"), /script-src 'self';.*frame-ancestors \*$/); // --dev, nothing configured
  assert.equal(r.headers.get("x-frame-options"), null);
  assert.equal(r.headers.get("cache-control"), "no-store");
  assert.deepEqual(problems, []);
});

test("import: a mnemonic and a Solana key typed into the frame reach the server encrypted only", async () => {
  const key = await open(`/import?organizationId=${org}`);
  assert.equal(key, "");
  assert.deepEqual(await call("applySettings", { styles: { labelColor: "#828282", boxShadow: "url(x)" }, enablePassphrase: true }), { value: true });
  const frame = page.frame({ url: (u) => u.href.startsWith(lk.framesUrl) });
  await frame.locator("#secret").fill(`  ${mnemonic.replaceAll(" ", "\n")}  `);
  const { importBundle } = await client.initImportWallet({ userId: lk.creds.userId });
  assert.deepEqual(await call("injectImportBundle", importBundle, org, lk.creds.userId), { value: true });
  const extracted = await call("extractWalletEncryptedBundle");
  assert.equal(typeof extracted.value, "string");
  assert.deepEqual(Object.keys(JSON.parse(extracted.value)), ["encappedPublic", "ciphertext"]);
  const res = await client.importWallet({ userId: lk.creds.userId, walletName: "imported through the frame",
    encryptedBundle: extracted.value, accounts: [ETH, SOL] });
  assert.deepEqual(res.addresses, wallet.addresses);

  // The Solana account's key, exported in the SOLANA format, imported as a private key.
  const k = await open(`/export?organizationId=${org}`);
  const ea = await client.exportWalletAccount({ address: wallet.addresses[1], targetPublicKey: k });
  await call("injectKeyExportBundle", ea.exportBundle, org, "SOLANA");
  const solKey = (await frameText()).trim();
  await open(`/import?organizationId=${org}`);
  await page.frame({ url: (u) => u.href.startsWith(lk.framesUrl) }).locator("#secret").fill(solKey);
  const ik = await client.initImportPrivateKey({ userId: lk.creds.userId });
  assert.deepEqual(await call("injectImportBundle", ik.importBundle, org, lk.creds.userId), { value: true });
  assert.match((await call("extractKeyEncryptedBundle", "BITCOIN_MAINNET_WIF")).error, /not base58check|checksum|malformed/);
  const enc = await call("extractKeyEncryptedBundle", "SOLANA");
  const pk = await client.importPrivateKey({ userId: lk.creds.userId, privateKeyName: "imported through the frame",
    encryptedBundle: enc.value, curve: "CURVE_ED25519", addressFormats: ["ADDRESS_FORMAT_SOLANA"] });
  assert.equal(pk.addresses[0].address, wallet.addresses[1]);
  assert.deepEqual(problems, []);
});

test("auth: a credential bundle opened in the frame stamps requests Latchkey accepts; the key persists", async () => {
  const key = await open("/auth", 60 * 60 * 1000);
  assert.match(key, /^04[0-9a-f]{128}$/);
  const session = await client.createReadWriteSession({ targetPublicKey: key, expirationSeconds: "900" });
  assert.deepEqual(await call("injectCredentialBundle", session.credentialBundle), { value: true });
  const body = JSON.stringify({ organizationId: org });
  const st = await call("stamp", body);
  assert.equal(st.value.stampHeaderName, "X-Stamp");
  const who = await fetch(`${lk.url}/public/v1/query/whoami`, { method: "POST", body,
    headers: { "Content-Type": "application/json", "X-Stamp": st.value.stampHeaderValue } });
  assert.equal(who.status, 200);
  assert.equal((await who.json()).userId, lk.creds.userId);

  // A reload keeps the key (localStorage of the frames' origin); clear and init make a new one.
  assert.equal(await open("/auth"), key);
  assert.deepEqual(await call("getEmbeddedPublicKey"), { value: key });
  assert.deepEqual(await call("clearEmbeddedKey"), { value: null });
  assert.deepEqual(await call("getEmbeddedPublicKey"), { value: "" });
  const fresh = await call("initEmbeddedKey");
  assert.match(fresh.value, /^04[0-9a-f]{128}$/);
  assert.notEqual(fresh.value, key);
  assert.match((await call("stamp", "{}")).error, /no credential bundle/);
  assert.deepEqual(problems, []);
});

test("auth: where the browser refuses storage to the frame, the key lasts as long as the page", async () => {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: BROWSER_ARGS });
  const saved = page;
  try {
    page = await (await browser.newContext()).newPage(); // playwright's defaults: no third-party storage
    watch(page);
    const key = await open("/auth");
    const session = await client.createReadWriteSession({ targetPublicKey: key, expirationSeconds: "900" });
    assert.deepEqual(await call("injectCredentialBundle", session.credentialBundle), { value: true });
    const st = await call("stamp", JSON.stringify({ organizationId: org }));
    const who = await fetch(`${lk.url}/public/v1/query/whoami`, { method: "POST", body: JSON.stringify({ organizationId: org }),
      headers: { "Content-Type": "application/json", "X-Stamp": st.value.stampHeaderValue } });
    assert.equal(who.status, 200);
    assert.notEqual(await open("/auth"), key);
  } finally {
    page = saved;
    await browser.close();
  }
  assert.deepEqual(problems, []);
});
