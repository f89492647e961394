// HPKE: round trips in the frames' own code, P-256 point forms, and the credential bundle Go's
// custody made (NewSessionCredential), opened with the embedded key it was made for.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixtures as fx, needFixtures, receiverKey } from "./helpers.mjs";
import { FrameError, bytesToHex, hexToBytes, utf8Encode } from "../assets/util.mjs";
import { newKeyPair, open, p256Compressed, p256Uncompressed, seal } from "../assets/hpke.mjs";
import { decodeCredentialBundle } from "../assets/encoding.mjs";

test("seal and open round trip, with the enc compressed or not", async () => {
  const r = await newKeyPair(false);
  for (const n of [0, 1, 32, 64, 1000]) {
    const pt = crypto.getRandomValues(new Uint8Array(n));
    const { enc, ciphertext } = await seal(r.publicRaw, pt);
    assert.equal(enc.length, 65);
    assert.equal(ciphertext.length, n + 16);
    assert.deepEqual([...(await open(r, enc, ciphertext))], [...pt]);
    assert.deepEqual([...(await open(r, p256Compressed(enc), ciphertext))], [...pt]);
    const bad = ciphertext.slice();
    bad[0] ^= 1;
    await assert.rejects(open(r, enc, bad), /does not decrypt/);
    await assert.rejects(open(r, enc, ciphertext.subarray(0, 10)), /does not decrypt/);
  }
});

test("P-256 keys: compressed points decompress; points off the curve are refused", async () => {
  for (let i = 0; i < 20; i++) {
    const { publicRaw } = await newKeyPair(false);
    assert.equal(bytesToHex(p256Uncompressed(p256Compressed(publicRaw))), bytesToHex(publicRaw));
  }
  // x = 1 has no y on P-256 (x = 0 and x = 5 do; Go's elliptic.UnmarshalCompressed agrees).
  const notOnCurve = hexToBytes("02" + "00".repeat(31) + "01", "x");
  assert.equal(p256Uncompressed(hexToBytes("02" + "00".repeat(31) + "05", "x")).length, 65);
  assert.throws(() => p256Uncompressed(notOnCurve), FrameError);
  assert.throws(() => p256Uncompressed(hexToBytes("02" + "ff".repeat(32), "x")), FrameError);
  assert.throws(() => p256Uncompressed(new Uint8Array(64)), FrameError);
  const r = await newKeyPair(false);
  await assert.rejects(seal(hexToBytes("04" + "01".repeat(64), "x"), utf8Encode("x")), /not a point on P-256/);
  await assert.rejects(open(r, hexToBytes("04" + "01".repeat(64), "x"), new Uint8Array(20)), /not a point on P-256/);
});

test("a credential bundle made by Go opens with its embedded key", needFixtures, async () => {
  const receiver = await receiverKey(fx.credential.receiver);
  const bytes = await decodeCredentialBundle(fx.credential.bundle);
  const scalar = await open(receiver, bytes.subarray(0, 33), bytes.subarray(33));
  assert.equal(scalar.length, 32);
});
