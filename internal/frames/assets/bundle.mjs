// Signed enclave envelopes (docs/wire.md §3.2): {version, data, dataSignature,
// enclaveQuorumPublic}, where data is the hex of a JSON payload and dataSignature an ECDSA
// P-256 / SHA-256 signature over those bytes, DER in hex. The frames check them against the
// signer keys this deployment's server wrote into the page, never against a key the bundle or
// the parent page supplies.
import { FrameError, bytesToHex, hexToBytes, utf8Decode } from "./util.mjs";
import { importPublic, open, p256Uncompressed } from "./hpke.mjs";

export const BUNDLE_VERSION = "v1.0.0";
// An export or import bundle is a few hundred bytes; anything far larger is not one.
const MAX_BUNDLE = 64 * 1024;
const KEY_RE = /^04[0-9a-f]{128}$/;

// trustedSigners checks the keys the page was given: uncompressed P-256, lowercase hex.
export function trustedSigners(keys) {
  const out = (Array.isArray(keys) ? keys : []).map((k) => String(k).toLowerCase()).filter((k) => KEY_RE.test(k));
  if (out.length === 0) throw new FrameError("this frame was served without a signer key to trust");
  return out;
}

// derToRaw converts a DER ECDSA signature (SEQUENCE of two INTEGERs, minimal, short-form
// lengths) into the 64-byte r‖s WebCrypto verifies.
export function derToRaw(der) {
  const bad = () => new FrameError("the bundle signature is not a DER ECDSA signature");
  if (der.length < 8 || der.length > 72 || der[0] !== 0x30 || der[1] !== der.length - 2) throw bad();
  const out = new Uint8Array(64);
  let at = 2;
  for (let i = 0; i < 2; i++) {
    if (at + 2 > der.length || der[at] !== 0x02) throw bad();
    const len = der[at + 1];
    at += 2;
    if (len < 1 || len > 33 || at + len > der.length) throw bad();
    let v = der.subarray(at, at + len);
    at += len;
    if (v[0] & 0x80) throw bad(); // negative
    if (len > 1 && v[0] === 0 && !(v[1] & 0x80)) throw bad(); // not minimal
    if (v[0] === 0 && len > 1) v = v.subarray(1);
    if (v.length > 32) throw bad();
    out.set(v, 32 * i + 32 - v.length);
  }
  if (at !== der.length) throw bad();
  return out;
}

function str(v) {
  return typeof v === "string" ? v : null;
}

// verifyEnvelope parses and verifies a signed envelope against the trusted signer keys and
// returns its payload (the JSON object data holds).
export async function verifyEnvelope(text, trustedKeys) {
  const trusted = trustedSigners(trustedKeys);
  if (typeof text !== "string" || text.length === 0) throw new FrameError("the bundle is missing");
  if (text.length > MAX_BUNDLE) throw new FrameError("the bundle is too large");
  let env;
  try {
    env = JSON.parse(text);
  } catch {
    throw new FrameError("the bundle is not JSON");
  }
  if (env === null || typeof env !== "object" || Array.isArray(env)) {
    throw new FrameError("the bundle is not a JSON object");
  }
  if (env.version !== BUNDLE_VERSION) {
    throw new FrameError(`unsupported bundle version (this frame reads ${BUNDLE_VERSION})`);
  }
  const dataHex = str(env.data);
  const sigHex = str(env.dataSignature);
  if (!dataHex) throw new FrameError("the bundle has no data");
  if (!sigHex) throw new FrameError("the bundle has no dataSignature");
  const signer = env.enclaveQuorumPublic ?? "";
  if (typeof signer !== "string") throw new FrameError("the bundle's enclaveQuorumPublic is not a string");
  const data = hexToBytes(dataHex, "the bundle data");
  const sig = derToRaw(hexToBytes(sigHex, "the bundle signature"));
  let candidates = trusted;
  if (signer !== "") {
    const s = signer.toLowerCase();
    if (!trusted.includes(s)) throw new FrameError("the bundle is signed by a key this deployment does not trust");
    candidates = [s];
  }
  let ok = false;
  for (const k of candidates) {
    const key = await importPublic(hexToBytes(k, "the signer key"), "ECDSA", ["verify"], "the signer key");
    if (await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, sig, data)) {
      ok = true;
      break;
    }
  }
  if (!ok) throw new FrameError("the bundle's signature does not verify with this deployment's signer key");
  let payload;
  try {
    payload = JSON.parse(utf8Decode(data, "the bundle data"));
  } catch (e) {
    throw e instanceof FrameError ? e : new FrameError("the bundle data is not JSON");
  }
  if (payload === null || typeof payload !== "object" || Array.isArray(payload)) {
    throw new FrameError("the bundle data is not a JSON object");
  }
  return payload;
}

function expectID(v, name) {
  if (typeof v !== "string" || v === "") throw new FrameError(`${name} is required`);
  return v;
}

// openExportBundle verifies an export bundle, checks it is for organizationId and decrypts it
// with the frame's embedded key ({privateKey, publicRaw}).
export async function openExportBundle(text, { trustedKeys, organizationId, receiver }) {
  const org = expectID(organizationId, "organizationId");
  const p = await verifyEnvelope(text, trustedKeys);
  if (str(p.organizationId) !== org) throw new FrameError("the bundle is for another organization");
  const enc = hexToBytes(str(p.encappedPublic) ?? "", "the bundle's encappedPublic");
  const ct = hexToBytes(str(p.ciphertext) ?? "", "the bundle's ciphertext");
  if (enc.length === 0 || ct.length === 0) throw new FrameError("the bundle has no encappedPublic or ciphertext");
  return open(receiver, enc, ct);
}

// readImportBundle verifies an import bundle, checks it is for organizationId and userId, and
// returns the target key to encrypt to (65 bytes, uncompressed).
export async function readImportBundle(text, { trustedKeys, organizationId, userId }) {
  const org = expectID(organizationId, "organizationId");
  const user = expectID(userId, "userId");
  const p = await verifyEnvelope(text, trustedKeys);
  if (str(p.organizationId) !== org) throw new FrameError("the bundle is for another organization");
  if (str(p.userId) !== user) throw new FrameError("the bundle is for another user");
  const target = hexToBytes(str(p.targetPublic) ?? "", "the bundle's targetPublic");
  if (target.length === 0) throw new FrameError("the bundle has no targetPublic");
  const raw = p256Uncompressed(target, "the bundle's targetPublic");
  await importPublic(raw, "ECDH", [], "the bundle's targetPublic"); // on the curve
  return raw;
}

// encryptedBundle is the JSON string the SDKs hand to import_wallet / import_private_key.
export function encryptedBundle({ enc, ciphertext }) {
  return JSON.stringify({ encappedPublic: bytesToHex(enc), ciphertext: bytesToHex(ciphertext) });
}
