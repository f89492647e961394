// Export and import bundles made by Latchkey's Go code (js_test.go): verified against this
// deployment's signer keys and opened with the embedded key; refused when signed by another
// key, for another organization or user, with another version, or malformed. Then a seeded
// mutation run: a changed bundle is never accepted with a different meaning, and every refusal
// is a clean FrameError that repeats nothing of the bundle.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixtures as fx, needFixtures, receiverKey } from "./helpers.mjs";
import { FrameError, bytesToHex, utf8Decode } from "../assets/util.mjs";
import { derToRaw, openExportBundle, readImportBundle, verifyEnvelope } from "../assets/bundle.mjs";

const refuses = (p, re) => assert.rejects(p, (e) => e instanceof FrameError && re.test(e.message));

test("an export bundle of this deployment opens to the mnemonic", needFixtures, async () => {
  const receiver = await receiverKey(fx.receiver);
  const plain = await openExportBundle(fx.exportWallet, { trustedKeys: fx.signerKeys, organizationId: fx.organizationId, receiver });
  assert.equal(utf8Decode(plain, "x"), fx.mnemonic);
});

test("export bundles of private keys open to the raw keys", needFixtures, async () => {
  const { vectors } = await import("./helpers.mjs");
  const receiver = await receiverKey(fx.receiver);
  for (const [i, bundle] of fx.exportKeys.entries()) {
    const plain = await openExportBundle(bundle, { trustedKeys: fx.signerKeys, organizationId: fx.organizationId, receiver });
    assert.equal(bytesToHex(plain), vectors[i].hex);
  }
});

test("a bundle is verified against any of the trusted keys (a rotation's next or previous key)", needFixtures, async () => {
  const receiver = await receiverKey(fx.receiver);
  const trusted = [...fx.otherSignerKeys, ...fx.signerKeys];
  await openExportBundle(fx.exportWallet, { trustedKeys: trusted, organizationId: fx.organizationId, receiver });
  // Without enclaveQuorumPublic, every trusted key is tried.
  const env = JSON.parse(fx.exportWallet);
  env.enclaveQuorumPublic = "";
  await openExportBundle(JSON.stringify(env), { trustedKeys: trusted, organizationId: fx.organizationId, receiver });
  delete env.enclaveQuorumPublic;
  await openExportBundle(JSON.stringify(env), { trustedKeys: trusted, organizationId: fx.organizationId, receiver });
});

test("refusals of export bundles", needFixtures, async () => {
  const receiver = await receiverKey(fx.receiver);
  const open = (bundle, o = {}) =>
    openExportBundle(bundle, { trustedKeys: fx.signerKeys, organizationId: fx.organizationId, receiver, ...o });
  await refuses(open(fx.exportOtherSigner), /signed by a key this deployment does not trust/);
  // The other deployment's bundle claiming no signer, or this deployment's key: the signature fails.
  const other = JSON.parse(fx.exportOtherSigner);
  await refuses(open(JSON.stringify({ ...other, enclaveQuorumPublic: "" })), /signature does not verify/);
  await refuses(open(JSON.stringify({ ...other, enclaveQuorumPublic: fx.signerKeys[0] })), /signature does not verify/);
  await refuses(open(fx.exportOtherOrg), /another organization/);
  await refuses(open(fx.exportWallet, { organizationId: "another-org" }), /another organization/);
  for (const organizationId of [undefined, "", 7]) await refuses(open(fx.exportWallet, { organizationId }), /organizationId is required/);
  const env = JSON.parse(fx.exportWallet);
  for (const version of ["v1.0.1", "v2.0.0", "", undefined, 1]) {
    await refuses(open(JSON.stringify({ ...env, version })), /unsupported bundle version/);
  }
  await refuses(open(fx.exportWallet, { trustedKeys: [] }), /without a signer key/);
  await refuses(open(fx.exportWallet, { trustedKeys: ["not a key"] }), /without a signer key/);
  for (const [bundle, re] of [
    ["", /missing/],
    ["{", /not JSON/],
    ["[]", /not a JSON object/],
    ["null", /not a JSON object/],
    [JSON.stringify({ ...env, data: "" }), /no data/],
    [JSON.stringify({ ...env, data: "zz" }), /not hex/],
    [JSON.stringify({ ...env, dataSignature: undefined }), /no dataSignature/],
    [JSON.stringify({ ...env, dataSignature: "3006020101020101" }), /does not verify/],
    [JSON.stringify({ ...env, dataSignature: env.dataSignature.slice(2) }), /not a DER/],
    [JSON.stringify({ ...env, enclaveQuorumPublic: 4 }), /not a string/],
    ["x".repeat(70000), /too large/],
  ]) {
    await refuses(open(bundle), re);
  }
  // The key is not in the page: a parent page cannot make the frame trust its own key.
  await refuses(open(fx.exportOtherSigner, { trustedKeys: fx.signerKeys }), /does not trust/);
});

test("a bundle for another embedded key does not open", needFixtures, async () => {
  const stranger = await receiverKey({ privateKey: "11".repeat(32) });
  await refuses(
    openExportBundle(fx.exportWallet, { trustedKeys: fx.signerKeys, organizationId: fx.organizationId, receiver: stranger }),
    /does not decrypt with this frame's key/,
  );
});

test("import bundles: verified, bound to the organization and the user", needFixtures, async () => {
  const read = (bundle, o = {}) =>
    readImportBundle(bundle, { trustedKeys: fx.signerKeys, organizationId: fx.organizationId, userId: fx.userId, ...o });
  const target = await read(fx.importTargets.wallet);
  assert.equal(target.length, 65);
  assert.equal(target[0], 4);
  await refuses(read(fx.importOtherSigner), /does not trust/);
  await refuses(read(fx.importOtherUser), /another user/);
  await refuses(read(fx.importTargets.wallet, { organizationId: "another-org" }), /another organization/);
  await refuses(read(fx.importTargets.wallet, { userId: "another-user" }), /another user/);
  await refuses(read(fx.importTargets.wallet, { userId: undefined }), /userId is required/);
  await refuses(read(fx.importTargets.wallet, { organizationId: undefined }), /organizationId is required/);
  await refuses(read(fx.exportWallet), /another user|targetPublic/);
});

test("DER signatures: strict form", () => {
  const sig = (r, s) => Uint8Array.from([0x30, r.length + s.length + 4, 2, r.length, ...r, 2, s.length, ...s]);
  const raw = derToRaw(sig([0, 0x80, ...new Array(31).fill(1)], [5]));
  assert.equal(raw.length, 64);
  assert.equal(raw[0], 0x80);
  assert.equal(raw[63], 5);
  for (const bad of [
    sig([0, 1], [1]), // not minimal
    sig([0x80], [1]), // negative
    sig(new Array(34).fill(1), [1]), // too long
    sig([], [1]), // empty
    Uint8Array.from([0x31, 6, 2, 1, 1, 2, 1, 1]), // not a SEQUENCE
    Uint8Array.from([0x30, 7, 2, 1, 1, 2, 1, 1, 0]), // trailing byte
    Uint8Array.from([0x30, 0x81, 6, 2, 1, 1, 2, 1, 1]), // long-form length
  ]) {
    assert.throws(() => derToRaw(bad), FrameError);
  }
});

// A small seeded generator (mulberry32), so a failure can be replayed.
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// meaning is what a bundle says once parsed: its version, data and signature. A mutation that
// keeps it (hex digits in another case, white space between members, enclaveQuorumPublic
// emptied, which only makes the frame try each trusted key) may be accepted; one that changes it
// must not be.
function meaning(text) {
  const e = JSON.parse(text);
  return JSON.stringify([e.version, String(e.data).toLowerCase(), String(e.dataSignature).toLowerCase()]);
}

test("mutated bundles: never accepted with another meaning, refused cleanly", needFixtures, async () => {
  const seed = Number(process.env.LATCHKEY_FRAMES_SEED || Date.now() % 1e9);
  const rand = rng(seed);
  const pick = (n) => Math.floor(rand() * n);
  const original = fx.exportWallet;
  const env = JSON.parse(original);
  const alphabet = '0123456789abcdefABCDEF{}[]":,. \\nxv-';
  const mutators = [
    (s) => { const i = pick(s.length); return s.slice(0, i) + alphabet[pick(alphabet.length)] + s.slice(i + 1); },
    (s) => { const i = pick(s.length); return s.slice(0, i) + s.slice(i + 1); },
    (s) => { const i = pick(s.length); return s.slice(0, i) + alphabet[pick(alphabet.length)] + s.slice(i); },
    (s) => s.slice(0, pick(s.length)),
    () => { const e = { ...env }; const k = Object.keys(e)[pick(4)]; const v = e[k]; const i = pick(v.length);
      e[k] = v.slice(0, i) + "0123456789abcdef"[pick(16)] + v.slice(i + 1); return JSON.stringify(e); },
    () => { const e = { ...env }; const ks = ["data", "dataSignature", "enclaveQuorumPublic", "version"];
      const [a, b] = [ks[pick(4)], ks[pick(4)]]; [e[a], e[b]] = [e[b], e[a]]; return JSON.stringify(e); },
    () => { const e = { ...env }; e[["data", "dataSignature", "enclaveQuorumPublic", "version"][pick(4)]] =
      [null, 0, true, [], {}, "", "00"][pick(7)]; return JSON.stringify(e); },
  ];
  const want = meaning(original);
  let accepted = 0;
  for (let n = 0; n < 400; n++) {
    let s = original;
    for (let k = 1 + pick(3); k > 0; k--) s = mutators[pick(mutators.length)](s);
    let payload;
    try {
      payload = await verifyEnvelope(s, fx.signerKeys);
    } catch (e) {
      assert.ok(e instanceof FrameError, `seed ${seed} run ${n}: ${e && e.name}: ${e && e.message}`);
      assert.ok(e.message.length < 160, `seed ${seed} run ${n}: a long message`);
      for (const part of [env.data, env.dataSignature]) {
        for (let i = 0; i + 16 <= part.length; i += 16) assert.ok(!e.message.includes(part.slice(i, i + 16)), `seed ${seed} run ${n}: the message repeats the bundle`);
      }
      continue;
    }
    accepted++;
    assert.equal(meaning(s), want, `seed ${seed} run ${n}: a changed bundle was accepted`);
    assert.equal(payload.organizationId, fx.organizationId);
  }
  assert.ok(accepted < 400, `seed ${seed}: nothing was refused`);
});
