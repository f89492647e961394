// Key encodings against the Go-made vectors (testdata/key_formats.json), both ways, and the
// refusals of what is not a key in the format asked for.
import { test } from "node:test";
import assert from "node:assert/strict";
import { vectors } from "./helpers.mjs";
import { FrameError, bytesToHex, hexToBytes } from "../assets/util.mjs";
import {
  base58Decode,
  base58Encode,
  base58checkDecode,
  bech32Decode,
  decodeCredentialBundle,
  decodePrivateKey,
  ed25519PublicKey,
  encodePrivateKey,
  KEY_FORMATS,
} from "../assets/encoding.mjs";

const FORMATS = ["HEXADECIMAL", "SOLANA", "BITCOIN_MAINNET_WIF", "BITCOIN_TESTNET_WIF", "SUI_BECH32"];

test("every KeyFormat is covered", () => assert.deepEqual(KEY_FORMATS, FORMATS));

for (const v of vectors) {
  test(`encode and decode: ${v.note}`, async () => {
    const raw = hexToBytes(v.hex, "vector");
    assert.equal(bytesToHex(await ed25519PublicKey(raw)), v.ed25519PublicKey);
    for (const f of FORMATS) {
      assert.equal(await encodePrivateKey(raw, f), v[f], `encode ${f}`);
      assert.equal(bytesToHex(await decodePrivateKey(v[f], f)), v.hex, `decode ${f}`);
      // Pasted text may carry white space around it.
      assert.equal(bytesToHex(await decodePrivateKey(`  ${v[f]}\n`, f)), v.hex, `decode ${f} with spaces`);
    }
    for (const absent of [undefined, null, ""]) assert.equal(await encodePrivateKey(raw, absent), v.HEXADECIMAL);
    assert.equal(bytesToHex(await decodePrivateKey(v.hex, undefined)), v.hex);
    assert.equal(bytesToHex(await decodePrivateKey(v.hex.toUpperCase(), "HEXADECIMAL")), v.hex);
    assert.equal(bytesToHex(await decodePrivateKey("0X" + v.hex, "HEXADECIMAL")), v.hex);
  });

  test(`refusals: ${v.note}`, async () => {
    const refuse = async (text, format, re) => {
      await assert.rejects(decodePrivateKey(text, format), (e) => e instanceof FrameError && re.test(e.message));
    };
    await refuse(v.uncompressedMainnetWif, "BITCOIN_MAINNET_WIF", /uncompressed WIF/);
    await refuse(v.BITCOIN_TESTNET_WIF, "BITCOIN_MAINNET_WIF", /not a mainnet key/);
    await refuse(v.BITCOIN_MAINNET_WIF, "BITCOIN_TESTNET_WIF", /not a testnet key/);
    await refuse(v.BITCOIN_MAINNET_WIF.slice(0, -1) + (v.BITCOIN_MAINNET_WIF.endsWith("1") ? "2" : "1"), "BITCOIN_MAINNET_WIF", /checksum/);
    await refuse(v.solanaWrongKeypair, "SOLANA", /second half is not its public key/);
    await refuse(v.BITCOIN_MAINNET_WIF, "SOLANA", /64 bytes/);
    await refuse(v.suiSecp256k1Flagged, "SUI_BECH32", /only Ed25519/);
    await refuse(v.SUI_BECH32.slice(0, -1) + (v.SUI_BECH32.endsWith("q") ? "p" : "q"), "SUI_BECH32", /checksum/);
    await refuse(v.SUI_BECH32.toUpperCase().slice(0, 20) + v.SUI_BECH32.slice(20), "SUI_BECH32", /not bech32/);
    await refuse("0x" + v.hex.slice(1), "HEXADECIMAL", /not hex/);
    await refuse("0x", "HEXADECIMAL", /not hex/);
    await refuse("   ", "SOLANA", /no private key entered/);
    await refuse(v.hex, "ETHEREUM", /unsupported key format: ETHEREUM/);
    await refuse(v.hex, "<b>", /unsupported key format: \(not a name\)/);
  });
}

test("error messages never repeat the key", async () => {
  for (const v of vectors) {
    for (const [text, format] of [
      [v.uncompressedMainnetWif, "BITCOIN_MAINNET_WIF"],
      [v.solanaWrongKeypair, "SOLANA"],
      [v.suiSecp256k1Flagged, "SUI_BECH32"],
      [v.hex + "zz", "HEXADECIMAL"],
    ]) {
      await assert.rejects(decodePrivateKey(text, format), (e) => !e.message.includes(text.slice(0, 12)));
    }
  }
});

test("base58: leading zeros and the alphabet", () => {
  assert.equal(base58Encode(new Uint8Array([0, 0, 1])), "112");
  assert.deepEqual([...base58Decode("112")], [0, 0, 1]);
  assert.equal(base58Encode(new Uint8Array(0)), "");
  for (const bad of ["0", "O", "I", "l", "abc+", "x".repeat(2000)]) assert.throws(() => base58Decode(bad), FrameError);
  for (let n = 0; n < 200; n++) {
    const b = crypto.getRandomValues(new Uint8Array(n % 70));
    if (n % 7 === 0 && b.length) b[0] = 0;
    assert.deepEqual([...base58Decode(base58Encode(b))], [...b]);
  }
});

test("base58check and bech32 refuse what is malformed", async () => {
  await assert.rejects(base58checkDecode("1"), FrameError);
  await assert.rejects(base58checkDecode("11111111"), /checksum/);
  for (const bad of ["", "a1qqqqqq", "1qqqqqqqq", "suiprivkey1b", "x".repeat(100)]) assert.throws(() => bech32Decode(bad), FrameError);
});

test("credential bundles: base58check, or legacy base64url", async () => {
  assert.deepEqual([...(await decodeCredentialBundle("AQID"))], [1, 2, 3]); // base64url (has no base58 meaning here)
  await assert.rejects(decodeCredentialBundle("3yZe7d"), /checksum/);
  await assert.rejects(decodeCredentialBundle("not a bundle!"), /not base64url/);
  await assert.rejects(decodeCredentialBundle(""), FrameError);
  await assert.rejects(decodeCredentialBundle(42), FrameError);
});
