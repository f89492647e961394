// HPKE as Turnkey's enclaves use it (docs/wire.md §3.1): RFC 9180 base mode, single shot,
// DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-256-GCM, info "turnkey_hpke", and the AAD the
// sender's encapsulated key followed by the receiver's public key, both uncompressed. Written on
// WebCrypto alone; P-256 point decompression is done here with BigInt.
import { FrameError, base64urlDecode, concat, utf8Encode, wipe } from "./util.mjs";

const subtle = () => crypto.subtle;

// ---- P-256 public keys ----

const P = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn;
const B = 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn;

function modPow(b, e, m) {
  let r = 1n;
  b %= m;
  while (e > 0n) {
    if (e & 1n) r = (r * b) % m;
    b = (b * b) % m;
    e >>= 1n;
  }
  return r;
}

function toBigInt(bytes) {
  let v = 0n;
  for (const x of bytes) v = (v << 8n) | BigInt(x);
  return v;
}

function toBytes32(v) {
  const out = new Uint8Array(32);
  for (let i = 31; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

// p256Uncompressed returns the 65-byte uncompressed form of a P-256 public key given
// compressed (33 bytes) or uncompressed (65 bytes). A compressed point is checked to be on the
// curve here; an uncompressed one is checked by WebCrypto when it is imported.
export function p256Uncompressed(key, what = "the public key") {
  if (key.length === 65 && key[0] === 4) return key;
  if (key.length === 33 && (key[0] === 2 || key[0] === 3)) {
    const x = toBigInt(key.subarray(1));
    if (x >= P) throw new FrameError(`${what} is not a point on P-256`);
    // y² = x³ - 3x + b, never negative for 0 <= x < p; p ≡ 3 (mod 4), so y = (y²)^((p+1)/4).
    const y2 = (x ** 3n - 3n * x + B) % P;
    let y = modPow(y2, (P + 1n) / 4n, P);
    if ((y * y) % P !== y2) throw new FrameError(`${what} is not a point on P-256`);
    if (Number(y & 1n) !== (key[0] & 1)) y = (P - y) % P;
    return concat([4], key.subarray(1), toBytes32(y));
  }
  throw new FrameError(`${what} is not a P-256 key (33 bytes compressed or 65 uncompressed)`);
}

// p256Compressed is the 33-byte form of an uncompressed key.
export function p256Compressed(uncompressed) {
  return concat([2 | (uncompressed[64] & 1)], uncompressed.subarray(1, 33));
}

export async function importPublic(raw65, name, usages, what = "the public key") {
  try {
    return await subtle().importKey("raw", raw65, { name, namedCurve: "P-256" }, true, usages);
  } catch {
    throw new FrameError(`${what} is not a point on P-256`);
  }
}

// The PKCS#8 wrapping of a bare P-256 scalar (an ECPrivateKey without its public key), which
// WebCrypto imports and completes.
const P256_PKCS8_PREFIX = Uint8Array.from([
  0x30, 0x41, 0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
  0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x04, 0x27, 0x30, 0x25, 0x02, 0x01, 0x01, 0x04, 0x20,
]);

// scalarToJwk completes a 32-byte P-256 private key into its JWK (d, x, y), from which callers
// import the key they keep (for ECDSA or ECDH) and read its public key.
export async function scalarToJwk(scalar) {
  if (scalar.length !== 32) throw new FrameError("a P-256 private key is 32 bytes");
  const der = concat(P256_PKCS8_PREFIX, scalar);
  try {
    const k = await subtle().importKey("pkcs8", der, { name: "ECDSA", namedCurve: "P-256" }, true, ["sign"]);
    const { kty, crv, x, y, d } = await subtle().exportKey("jwk", k);
    return { kty, crv, x, y, d }; // without key_ops: the caller imports it for its own use
  } catch {
    throw new FrameError("not a valid P-256 private key");
  }
}

// jwkPublicRaw is the uncompressed public key of a P-256 JWK.
export function jwkPublicRaw(jwk) {
  const x = base64urlDecode(jwk.x, "the key");
  const y = base64urlDecode(jwk.y, "the key");
  if (x.length !== 32 || y.length !== 32) throw new FrameError("not a P-256 key");
  return concat([4], x, y);
}

// ---- the HPKE suite ----

const i2osp2 = (n) => Uint8Array.from([(n >> 8) & 0xff, n & 0xff]);
const KEM_ID = 0x0010;
const KEM_SUITE = concat(utf8Encode("KEM"), i2osp2(KEM_ID));
const HPKE_SUITE = concat(utf8Encode("HPKE"), i2osp2(KEM_ID), i2osp2(0x0001), i2osp2(0x0002));
const VERSION = utf8Encode("HPKE-v1");
const INFO = utf8Encode("turnkey_hpke");
const EMPTY = new Uint8Array(0);

async function hmac(key, data) {
  // An empty HMAC key is the hash-length zero key (RFC 5869); WebCrypto refuses empty keys.
  const k = await subtle().importKey(
    "raw",
    key.length ? key : new Uint8Array(32),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return new Uint8Array(await subtle().sign("HMAC", k, data));
}

async function labeledExtract(suite, salt, label, ikm) {
  return hmac(salt, concat(VERSION, suite, utf8Encode(label), ikm));
}

async function labeledExpand(suite, prk, label, info, length) {
  const labeled = concat(i2osp2(length), VERSION, suite, utf8Encode(label), info);
  const blocks = [];
  let t = EMPTY;
  for (let i = 1, n = 0; n < length; i++) {
    t = await hmac(prk, concat(t, labeled, [i]));
    blocks.push(t);
    n += t.length;
  }
  return concat(...blocks).slice(0, length);
}

// context derives the AEAD key and nonce from the DH result (RFC 9180 §4.1, §5.1, base mode).
async function context(dh, enc, receiverRaw) {
  const eae = await labeledExtract(KEM_SUITE, EMPTY, "eae_prk", dh);
  const shared = await labeledExpand(KEM_SUITE, eae, "shared_secret", concat(enc, receiverRaw), 32);
  const pskIDHash = await labeledExtract(HPKE_SUITE, EMPTY, "psk_id_hash", EMPTY);
  const infoHash = await labeledExtract(HPKE_SUITE, EMPTY, "info_hash", INFO);
  const ksc = concat([0], pskIDHash, infoHash);
  const secret = await labeledExtract(HPKE_SUITE, shared, "secret", EMPTY);
  const key = await labeledExpand(HPKE_SUITE, secret, "key", ksc, 32);
  const nonce = await labeledExpand(HPKE_SUITE, secret, "base_nonce", ksc, 12);
  wipe(eae, shared, secret);
  const aesKey = await subtle().importKey("raw", key, { name: "AES-GCM" }, false, ["encrypt", "decrypt"]);
  wipe(key);
  return { aesKey, nonce };
}

async function dh(privateKey, publicKey) {
  return new Uint8Array(await subtle().deriveBits({ name: "ECDH", public: publicKey }, privateKey, 256));
}

// newKeyPair makes a P-256 ECDH key pair; extractable only when asked (the auth frame keeps its
// key in localStorage). It returns {privateKey, publicRaw}.
export async function newKeyPair(extractable = false) {
  const kp = await subtle().generateKey({ name: "ECDH", namedCurve: "P-256" }, extractable, ["deriveBits"]);
  const publicRaw = new Uint8Array(await subtle().exportKey("raw", kp.publicKey));
  return { privateKey: kp.privateKey, publicRaw };
}

// seal encrypts plaintext to the uncompressed P-256 key receiverRaw and returns
// {enc, ciphertext} (enc uncompressed, ciphertext with its 16-byte tag).
export async function seal(receiverRaw, plaintext) {
  const receiver = await importPublic(receiverRaw, "ECDH", [], "the import target");
  const eph = await newKeyPair(false);
  const shared = await dh(eph.privateKey, receiver);
  const { aesKey, nonce } = await context(shared, eph.publicRaw, receiverRaw);
  wipe(shared);
  const ct = await subtle().encrypt(
    { name: "AES-GCM", iv: nonce, additionalData: concat(eph.publicRaw, receiverRaw), tagLength: 128 },
    aesKey,
    plaintext,
  );
  return { enc: eph.publicRaw, ciphertext: new Uint8Array(ct) };
}

// open decrypts a ciphertext sealed to receiver ({privateKey, publicRaw}); enc may be
// compressed (credential bundles) or uncompressed.
export async function open(receiver, enc, ciphertext) {
  const encRaw = p256Uncompressed(enc, "the encapsulated key");
  const pkE = await importPublic(encRaw, "ECDH", [], "the encapsulated key");
  const shared = await dh(receiver.privateKey, pkE);
  const { aesKey, nonce } = await context(shared, encRaw, receiver.publicRaw);
  wipe(shared);
  try {
    const pt = await subtle().decrypt(
      { name: "AES-GCM", iv: nonce, additionalData: concat(encRaw, receiver.publicRaw), tagLength: 128 },
      aesKey,
      ciphertext,
    );
    return new Uint8Array(pt);
  } catch {
    throw new FrameError("the bundle does not decrypt with this frame's key (was it made for another frame?)");
  }
}
