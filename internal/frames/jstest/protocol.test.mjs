// The frames as the SDKs drive them, through iframe-stamper's protocol on a real MessageChannel:
// the handshake (from the parent only, once), replies echoing requestId, errors for unknown
// types, and each frame's requests end to end. The import and auth frames' output is left for
// js_test.go to check with Latchkey's Go code.
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect, fakeWindow, fixtures as fx, memory, needFixtures, receiverKey, vectors, writeOut } from "./helpers.mjs";
import { serve } from "../assets/channel.mjs";
import { exportFrame } from "../assets/export.mjs";
import { importFrame } from "../assets/import.mjs";
import { authFrame, DEFAULT_TTL_MS, STORAGE_KEY } from "../assets/auth.mjs";
import { bytesToHex } from "../assets/util.mjs";

const tick = () => new Promise((r) => setTimeout(r, 20));

// A frame whose ready value and handlers are plain, to test the channel alone.
function echoFrame() {
  return {
    readies: 0,
    async ready() {
      this.readies++;
      return "04abc";
    },
    handlers: {
      async ECHO(m) {
        return ["ECHOED", m.value];
      },
      async FAIL() {
        throw new Error("secret detail that must not leak");
      },
    },
  };
}

test("handshake: PUBLIC_KEY_READY on the port; replies echo requestId, errors included", async () => {
  const win = fakeWindow();
  const frame = echoFrame();
  serve(win, frame);
  const c = await connect(win);
  assert.deepEqual(await c.ready, { type: "PUBLIC_KEY_READY", value: "04abc" });
  const r = await c.request("ECHO", { value: [1, { a: 2 }] });
  assert.equal(r.type, "ECHOED");
  assert.deepEqual(r.value, [1, { a: 2 }]);
  const u = await c.request("NO_SUCH_TYPE");
  assert.equal(u.type, "ERROR");
  assert.equal(u.value, "unknown message type: NO_SUCH_TYPE");
  assert.ok(typeof u.requestId === "string" && u.requestId.length > 0);
  const weird = await c.request("<script>");
  assert.equal(weird.value, "unknown message type: (not a name)");
  const inherited = await c.request("toString");
  assert.equal(inherited.value, "unknown message type: toString");
  const f = await c.request("FAIL");
  assert.equal(f.type, "ERROR");
  assert.ok(!f.value.includes("secret detail"), f.value);
  for (const t of ["SIGN_TRANSACTION", "SIGN_MESSAGE", "SET_EMBEDDED_KEY_OVERRIDE"]) {
    assert.match((await c.request(t)).value, new RegExp(`^${t} is not supported by Latchkey's frames`));
  }
  // Overlapping requests are answered independently.
  const many = await Promise.all([1, 2, 3, 4].map((v) => c.request("ECHO", { value: v })));
  assert.deepEqual(many.map((m) => m.value), [1, 2, 3, 4]);
  assert.equal(c.unsolicited.length, 0);
  c.close();
});

test("handshake: a second init is ignored, and so is one not from the parent", async () => {
  const win = fakeWindow();
  const frame = echoFrame();
  const state = serve(win, frame);
  // Not the parent: nothing happens, and the parent can still connect.
  const { port1: strangerPort, port2 } = new MessageChannel();
  let strangerHeard = false;
  strangerPort.onmessage = () => (strangerHeard = true);
  win.post({ type: "TURNKEY_INIT_MESSAGE_CHANNEL" }, { source: { name: "another window" }, ports: [port2] });
  win.post({ type: "TURNKEY_INIT_MESSAGE_CHANNEL" }, { ports: [] }); // no port
  win.post("TURNKEY_INIT_MESSAGE_CHANNEL", {});
  await tick();
  assert.equal(state.established, false);
  const c = await connect(win);
  await c.ready;
  assert.equal(state.established, true);
  // A second init, from the parent itself: ignored; the first channel goes on working.
  const { port1: second, port2: second2 } = new MessageChannel();
  let secondHeard = false;
  second.onmessage = () => (secondHeard = true);
  win.post({ type: "TURNKEY_INIT_MESSAGE_CHANNEL" }, { ports: [second2] });
  await tick();
  assert.equal(secondHeard, false);
  assert.equal(strangerHeard, false);
  assert.equal(frame.readies, 1);
  assert.equal(win.listeners.size, 0, "the window listener is gone once the channel exists");
  assert.equal((await c.request("ECHO", { value: "still" })).value, "still");
  for (const p of [c, { close: () => strangerPort.close() }, { close: () => second.close() }]) p.close();
});

test("handshake: only from the listed parent origins; never when the page is not framed", async () => {
  const win = fakeWindow();
  const state = serve(win, echoFrame(), { parentOrigins: ["https://shop.example"] });
  const { port1, port2 } = new MessageChannel();
  win.post({ type: "TURNKEY_INIT_MESSAGE_CHANNEL" }, { origin: "https://evil.example", ports: [port2] });
  await tick();
  assert.equal(state.established, false);
  port1.close();
  const c = await connect(win, { event: { origin: "https://shop.example" } });
  await c.ready;
  c.close();

  const top = fakeWindow();
  top.parent = top;
  const s2 = serve(top, echoFrame());
  const { port1: p1, port2: p2 } = new MessageChannel();
  top.post({ type: "TURNKEY_INIT_MESSAGE_CHANNEL" }, { source: top, ports: [p2] });
  await tick();
  assert.equal(s2.established, false);
  p1.close();
});

function fakeUI(input = "") {
  return {
    shown: [],
    styles: [],
    input,
    showSecret(t) {
      this.shown.push(t);
    },
    applyStyles(s) {
      this.styles.push(s);
    },
    readSecret() {
      return this.input;
    },
  };
}

test("export frame: the mnemonic and keys in every format are shown, never sent; the key is used once", needFixtures, async () => {
  const receiver = await receiverKey(fx.receiver);
  const formats = ["HEXADECIMAL", "SOLANA", "BITCOIN_MAINNET_WIF", "BITCOIN_TESTNET_WIF", "SUI_BECH32", undefined];
  const runs = [{ bundle: fx.exportWallet, type: "INJECT_WALLET_EXPORT_BUNDLE", want: fx.mnemonic }];
  for (const [i, bundle] of fx.exportKeys.entries()) {
    for (const keyFormat of formats) {
      runs.push({ bundle, type: "INJECT_KEY_EXPORT_BUNDLE", keyFormat, want: vectors[i][keyFormat ?? "HEXADECIMAL"] });
    }
  }
  for (const run of runs) {
    const win = fakeWindow();
    const ui = fakeUI();
    serve(win, exportFrame({ trustedKeys: fx.signerKeys, ui, newKey: async () => receiver }));
    const c = await connect(win);
    assert.equal((await c.ready).value, bytesToHex(receiver.publicRaw));
    const settings = await c.request("APPLY_SETTINGS", {
      value: JSON.stringify({ styles: { fontSize: "16px", backgroundColor: "#E5E7EB", color: "url(x)" } }),
    });
    assert.deepEqual([settings.type, settings.value], ["SETTINGS_APPLIED", true]);
    assert.deepEqual(ui.styles, [{ fontSize: "16px", backgroundColor: "#E5E7EB" }]);
    const r = await c.request(run.type, { value: run.bundle, organizationId: fx.organizationId, keyFormat: run.keyFormat });
    assert.deepEqual([r.type, r.value], ["BUNDLE_INJECTED", true], `${run.type} ${run.keyFormat}: ${r.value}`);
    assert.deepEqual(ui.shown, [run.want]);
    // Used once: a second injection is refused, and the public key is gone.
    const again = await c.request(run.type, { value: run.bundle, organizationId: fx.organizationId, keyFormat: run.keyFormat });
    assert.equal(again.type, "ERROR");
    assert.match(again.value, /used or reset/);
    assert.equal((await c.request("GET_EMBEDDED_PUBLIC_KEY")).value, "");
    c.close();
  }
});

test("export frame: refusals keep the key; errors carry requestId and no secret", needFixtures, async () => {
  const receiver = await receiverKey(fx.receiver);
  const win = fakeWindow();
  const ui = fakeUI();
  serve(win, exportFrame({ trustedKeys: fx.signerKeys, ui, newKey: async () => receiver }));
  const c = await connect(win);
  await c.ready;
  const cases = [
    [{ value: fx.exportOtherSigner, organizationId: fx.organizationId }, /does not trust/],
    [{ value: fx.exportOtherOrg, organizationId: fx.organizationId }, /another organization/],
    [{ value: fx.exportWallet }, /organizationId is required/],
    [{ value: "{}", organizationId: fx.organizationId }, /unsupported bundle version/],
    [{ value: fx.exportKeys[0], organizationId: fx.organizationId, keyFormat: "MONERO" }, /unsupported key format: MONERO/],
  ];
  for (const [fields, re] of cases) {
    const type = fields.keyFormat ? "INJECT_KEY_EXPORT_BUNDLE" : "INJECT_WALLET_EXPORT_BUNDLE";
    const r = await c.request(type, fields);
    assert.equal(r.type, "ERROR");
    assert.match(r.value, re);
    assert.ok(!r.value.includes(fx.exportWallet.slice(20, 60)));
  }
  assert.deepEqual(ui.shown, []);
  assert.equal((await c.request("GET_EMBEDDED_PUBLIC_KEY")).value, bytesToHex(receiver.publicRaw));
  const ok = await c.request("INJECT_WALLET_EXPORT_BUNDLE", { value: fx.exportWallet, organizationId: fx.organizationId });
  assert.equal(ok.value, true);
  // RESET, then INIT makes a new key (of the frame's own making).
  assert.equal((await c.request("RESET_EMBEDDED_KEY")).type, "EMBEDDED_KEY_RESET");
  c.close();
  const w2 = fakeWindow();
  serve(w2, exportFrame({ trustedKeys: fx.signerKeys, ui: fakeUI() }));
  const c2 = await connect(w2);
  const first = (await c2.ready).value;
  assert.match(first, /^04[0-9a-f]{128}$/);
  assert.equal((await c2.request("RESET_EMBEDDED_KEY")).value, true);
  assert.equal((await c2.request("GET_EMBEDDED_PUBLIC_KEY")).value, "");
  const fresh = (await c2.request("INIT_EMBEDDED_KEY")).value;
  assert.match(fresh, /^04[0-9a-f]{128}$/);
  assert.notEqual(fresh, first);
  c2.close();
});

test("import frame: what the user typed leaves only encrypted, once per bundle", needFixtures, async () => {
  const bundles = {};
  const ui = fakeUI(fx.importMnemonic);
  const win = fakeWindow();
  serve(win, importFrame({ trustedKeys: fx.signerKeys, ui }));
  const c = await connect(win);
  assert.deepEqual(await c.ready, { type: "PUBLIC_KEY_READY", value: "" });
  const inject = (name, o = {}) =>
    c.request("INJECT_IMPORT_BUNDLE", { value: fx.importTargets[name], organizationId: fx.organizationId, userId: fx.userId, ...o });
  // Nothing injected yet.
  assert.match((await c.request("EXTRACT_WALLET_ENCRYPTED_BUNDLE")).value, /no import bundle has been injected/);
  assert.deepEqual((await inject("wallet")).value, true);
  const w = await c.request("EXTRACT_WALLET_ENCRYPTED_BUNDLE");
  assert.equal(w.type, "ENCRYPTED_BUNDLE_EXTRACTED");
  assert.equal(typeof w.value, "string");
  assert.deepEqual(Object.keys(JSON.parse(w.value)), ["encappedPublic", "ciphertext"]);
  assert.ok(!w.value.includes("abandon"));
  bundles.wallet = w.value;
  assert.match((await c.request("EXTRACT_WALLET_ENCRYPTED_BUNDLE")).value, /no import bundle has been injected \(or it was used\)/);

  const formatVector = { HEXADECIMAL: 1, SOLANA: 0, BITCOIN_MAINNET_WIF: 1, BITCOIN_TESTNET_WIF: 2, SUI_BECH32: 2 };
  for (const [format, i] of Object.entries(formatVector)) {
    assert.equal((await inject(format)).value, true);
    ui.input = "not a key";
    const bad = await c.request("EXTRACT_KEY_ENCRYPTED_BUNDLE", { keyFormat: format });
    assert.equal(bad.type, "ERROR", format);
    ui.input = `\n ${format === "HEXADECIMAL" ? vectors[i].hex : vectors[i][format]} \n`;
    const r = await c.request("EXTRACT_KEY_ENCRYPTED_BUNDLE", { keyFormat: format }); // the target survived the typo
    assert.equal(r.type, "ENCRYPTED_BUNDLE_EXTRACTED", `${format}: ${r.value}`);
    bundles[format] = r.value;
  }
  writeOut("import.json", { bundles });

  // Refusals.
  ui.input = "abandon abandon";
  assert.equal((await inject("wallet")).value, true);
  assert.match((await c.request("EXTRACT_WALLET_ENCRYPTED_BUNDLE")).value, /12, 15, 18, 21 or 24 words, not 2/);
  ui.input = "  ";
  assert.match((await c.request("EXTRACT_WALLET_ENCRYPTED_BUNDLE")).value, /no wallet mnemonic entered/);
  assert.match((await inject("wallet", { userId: "someone-else" })).value, /another user/);
  assert.match((await inject("wallet", { organizationId: undefined })).value, /organizationId is required/);
  assert.match((await c.request("INJECT_IMPORT_BUNDLE", { value: fx.importOtherSigner, organizationId: fx.organizationId, userId: fx.userId })).value, /does not trust/);
  assert.match((await c.request("GET_EMBEDDED_PUBLIC_KEY")).value, /unknown message type: GET_EMBEDDED_PUBLIC_KEY/);
  // Passphrase settings are ignored, and answered true.
  const s = await c.request("APPLY_SETTINGS", { value: JSON.stringify({ enablePassphrase: true, passphraseStyles: { color: "red" }, styles: { labelColor: "#828282" } }) });
  assert.equal(s.value, true);
  assert.deepEqual(ui.styles.at(-1), { labelColor: "#828282" });
  c.close();
});

test("auth frame: an embedded key in storage, with its time to live; credential bundles; stamps", needFixtures, async () => {
  // The key Go encrypted the credential to, as if this frame had made it an hour ago.
  const receiver = await receiverKey(fx.credential.receiver);
  let now = 1_800_000_000_000;
  const storage = memory({ [STORAGE_KEY]: JSON.stringify({ jwk: receiver.jwk, expiry: now + DEFAULT_TTL_MS - 3600_000 }) });
  const win = fakeWindow();
  serve(win, authFrame({ storage, now: () => now }));
  const c = await connect(win, { init: { dangerouslyOverrideIframeKeyTtl: 1000 } });
  // An existing key is kept, whatever the override.
  assert.equal((await c.ready).value, bytesToHex(receiver.publicRaw));
  assert.equal((await c.request("GET_EMBEDDED_PUBLIC_KEY")).value, bytesToHex(receiver.publicRaw));
  assert.match((await c.request("STAMP_REQUEST", { value: "{}" })).value, /no credential bundle has been injected/);
  const inj = await c.request("INJECT_CREDENTIAL_BUNDLE", { value: fx.credential.bundle });
  assert.deepEqual([inj.type, inj.value], ["BUNDLE_INJECTED", true], inj.value);
  const body = JSON.stringify({ type: "ACTIVITY_TYPE_CREATE_WALLET", timestampMs: String(now), organizationId: fx.organizationId,
    parameters: { walletName: "ünïcode wallet", accounts: [] } });
  const st = await c.request("STAMP_REQUEST", { value: body });
  assert.equal(st.type, "STAMP");
  assert.match(st.value, /^[A-Za-z0-9_-]+$/);
  writeOut("auth.json", { body, header: st.value });
  // The recovery alias; a bundle for another key; garbage.
  assert.equal((await c.request("INJECT_RECOVERY_BUNDLE", { value: fx.credential.bundle })).value, true);
  const other = await c.request("INJECT_CREDENTIAL_BUNDLE", { value: fx.credential.bundle.slice(0, -1) + "z" });
  assert.equal(other.type, "ERROR");
  assert.match((await c.request("INJECT_CREDENTIAL_BUNDLE", { value: "" })).value, /not a string/);

  // Reset removes the key from storage; INIT makes a new one with the override's lifetime.
  assert.equal((await c.request("RESET_EMBEDDED_KEY")).value, true);
  assert.equal(storage.getItem(STORAGE_KEY), null);
  assert.equal((await c.request("GET_EMBEDDED_PUBLIC_KEY")).value, "");
  assert.match((await c.request("INJECT_CREDENTIAL_BUNDLE", { value: fx.credential.bundle })).value, /no embedded key/);
  const [a, b] = await Promise.all([c.request("INIT_EMBEDDED_KEY"), c.request("INIT_EMBEDDED_KEY")]);
  assert.match(a.value, /^04[0-9a-f]{128}$/);
  assert.equal(a.value, b.value, "two INIT_EMBEDDED_KEY at once make one key");
  assert.equal(JSON.parse(storage.getItem(STORAGE_KEY)).expiry, now + 1000);
  // The credential stays after a reset (only the embedded key goes).
  assert.equal((await c.request("STAMP_REQUEST", { value: "{}" })).type, "STAMP");
  // After its lifetime the key is gone: GET says so, INIT makes another.
  now += 1001;
  assert.equal((await c.request("GET_EMBEDDED_PUBLIC_KEY")).value, "");
  const fresh = (await c.request("INIT_EMBEDDED_KEY")).value;
  assert.notEqual(fresh, a.value);
  assert.equal((await c.request("APPLY_SETTINGS", { value: "{}" })).value, true);
  assert.match((await c.request("APPLY_SETTINGS", { value: "{" })).value, /not JSON/);
  c.close();
});

test("auth frame: a new key lasts 48 hours, or the override given at init", async () => {
  for (const [init, ttl] of [[{}, DEFAULT_TTL_MS], [{ dangerouslyOverrideIframeKeyTtl: 5000 }, 5000],
    [{ dangerouslyOverrideIframeKeyTtl: -5 }, DEFAULT_TTL_MS], [{ dangerouslyOverrideIframeKeyTtl: "5000" }, DEFAULT_TTL_MS]]) {
    const storage = memory();
    const win = fakeWindow();
    serve(win, authFrame({ storage, now: () => 1000 }));
    const c = await connect(win, { init });
    assert.match((await c.ready).value, /^04[0-9a-f]{128}$/);
    assert.equal(JSON.parse(storage.getItem(STORAGE_KEY)).expiry, 1000 + ttl);
    c.close();
  }
  // A corrupt stored value is replaced.
  const storage = memory({ [STORAGE_KEY]: "{not json" });
  const win = fakeWindow();
  serve(win, authFrame({ storage }));
  const c = await connect(win);
  assert.match((await c.ready).value, /^04/);
  c.close();
});
