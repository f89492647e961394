// Text encodings of private keys (the KeyFormat values of Turnkey's frame protocol) and of
// credential bundles: base58 (Bitcoin alphabet), base58check, bech32 (BIP-173, not bech32m),
// compressed WIF, and Solana's 64-byte secret key, whose public half is derived with WebCrypto
// Ed25519. Errors never repeat the text they were given.
import {
  FrameError,
  base64urlDecode,
  bytesToHex,
  concat,
  equalBytes,
  hexToBytes,
  safeName,
  sha256,
  wipe,
} from "./util.mjs";

const B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const B58_RE = /^[1-9A-HJ-NP-Za-km-z]*$/;
// Keys and credential bundles are short; a bound keeps the quadratic conversion cheap.
const MAX_B58 = 1024;

export function base58Encode(bytes) {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  const digits = []; // base 58, least significant first
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i];
    for (let j = 0; j < digits.length; j++) {
      carry += digits[j] * 256;
      digits[j] = carry % 58;
      carry = Math.floor(carry / 58);
    }
    while (carry > 0) {
      digits.push(carry % 58);
      carry = Math.floor(carry / 58);
    }
  }
  let s = "1".repeat(zeros);
  for (let i = digits.length - 1; i >= 0; i--) s += B58[digits[i]];
  return s;
}

export function base58Decode(s, what = "the value") {
  if (typeof s !== "string" || !B58_RE.test(s) || s.length > MAX_B58) throw new FrameError(`${what} is not base58`);
  let zeros = 0;
  while (zeros < s.length && s[zeros] === "1") zeros++;
  const bytes = []; // base 256, least significant first
  for (let i = zeros; i < s.length; i++) {
    let carry = B58.indexOf(s[i]);
    for (let j = 0; j < bytes.length; j++) {
      carry += bytes[j] * 58;
      bytes[j] = carry & 0xff;
      carry >>= 8;
    }
    while (carry > 0) {
      bytes.push(carry & 0xff);
      carry >>= 8;
    }
  }
  const out = new Uint8Array(zeros + bytes.length);
  for (let i = 0; i < bytes.length; i++) out[out.length - 1 - i] = bytes[i];
  return out;
}

async function checksum(payload) {
  return (await sha256(await sha256(payload))).subarray(0, 4);
}

export async function base58checkEncode(payload) {
  return base58Encode(concat(payload, await checksum(payload)));
}

export async function base58checkDecode(s, what = "the value") {
  const raw = base58Decode(s, what);
  if (raw.length < 4) throw new FrameError(`${what} is not base58check`);
  const payload = raw.slice(0, raw.length - 4);
  if (!equalBytes(await checksum(payload), raw.subarray(raw.length - 4))) {
    wipe(raw, payload);
    throw new FrameError(`${what} fails its base58check checksum`);
  }
  wipe(raw);
  return payload;
}

// ---- bech32 (BIP-173) ----

const BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";
const GEN = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];

function polymod(values) {
  let chk = 1;
  for (const v of values) {
    const top = chk >>> 25;
    chk = ((chk & 0x1ffffff) << 5) ^ v;
    for (let i = 0; i < 5; i++) if ((top >>> i) & 1) chk ^= GEN[i];
  }
  return chk >>> 0;
}

function hrpExpand(hrp) {
  const out = [];
  for (const c of hrp) out.push(c.charCodeAt(0) >> 5);
  out.push(0);
  for (const c of hrp) out.push(c.charCodeAt(0) & 31);
  return out;
}

// convertBits regroups bits (RFC: BIP-173's convertbits); pad adds zero bits at the end,
// otherwise leftover bits must be fewer than from and zero.
export function convertBits(data, from, to, pad) {
  let acc = 0;
  let bits = 0;
  const out = [];
  const max = (1 << to) - 1;
  for (const v of data) {
    if (v < 0 || v >> from !== 0) throw new FrameError("bad bech32 data");
    acc = ((acc << from) | v) & 0xffffff;
    bits += from;
    while (bits >= to) {
      bits -= to;
      out.push((acc >> bits) & max);
    }
  }
  if (pad) {
    if (bits > 0) out.push((acc << (to - bits)) & max);
  } else if (bits >= from || ((acc << (to - bits)) & max) !== 0) {
    throw new FrameError("bad bech32 padding");
  }
  return out;
}

export function bech32Encode(hrp, data5) {
  const mod = polymod([...hrpExpand(hrp), ...data5, 0, 0, 0, 0, 0, 0]) ^ 1;
  let s = hrp + "1";
  for (const d of data5) s += BECH32[d];
  for (let i = 0; i < 6; i++) s += BECH32[(mod >>> (5 * (5 - i))) & 31];
  return s;
}

// bech32Decode returns {hrp, data} (5-bit groups, checksum removed) of a bech32 string.
export function bech32Decode(s, what = "the value") {
  const bad = () => new FrameError(`${what} is not bech32`);
  if (typeof s !== "string" || s.length < 8 || s.length > 90) throw bad();
  if (s !== s.toLowerCase() && s !== s.toUpperCase()) throw bad();
  const t = s.toLowerCase();
  const sep = t.lastIndexOf("1");
  if (sep < 1 || sep + 7 > t.length) throw bad();
  const hrp = t.slice(0, sep);
  for (const c of hrp) {
    const code = c.charCodeAt(0);
    if (code < 33 || code > 126) throw bad();
  }
  const data = [];
  for (const c of t.slice(sep + 1)) {
    const v = BECH32.indexOf(c);
    if (v < 0) throw bad();
    data.push(v);
  }
  if (polymod([...hrpExpand(hrp), ...data]) !== 1) throw new FrameError(`${what} fails its bech32 checksum`);
  return { hrp, data: data.slice(0, data.length - 6) };
}

// ---- Ed25519 ----

const ED25519_PKCS8_PREFIX = Uint8Array.from([
  0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
]);

// ed25519PublicKey derives the 32-byte public key of a 32-byte Ed25519 seed with WebCrypto.
export async function ed25519PublicKey(seed) {
  if (seed.length !== 32) throw new FrameError("an Ed25519 private key is 32 bytes");
  const der = concat(ED25519_PKCS8_PREFIX, seed);
  let jwk;
  try {
    const k = await crypto.subtle.importKey("pkcs8", der, { name: "Ed25519" }, true, ["sign"]);
    jwk = await crypto.subtle.exportKey("jwk", k);
  } catch {
    throw new FrameError("this browser cannot derive Ed25519 keys (WebCrypto Ed25519 is missing)");
  } finally {
    wipe(der);
  }
  return base64urlDecode(jwk.x, "the Ed25519 public key");
}

// ---- private key formats ----

export const KEY_FORMATS = ["HEXADECIMAL", "SOLANA", "BITCOIN_MAINNET_WIF", "BITCOIN_TESTNET_WIF", "SUI_BECH32"];
const WIF_VERSION = { BITCOIN_MAINNET_WIF: 0x80, BITCOIN_TESTNET_WIF: 0xef };
const SUI_HRP = "suiprivkey";

// keyFormat is the format a message asks for: absent (undefined, null or "") is hexadecimal;
// a value outside KeyFormat is refused, naming it.
export function keyFormat(v) {
  if (v === undefined || v === null || v === "") return "HEXADECIMAL";
  if (!KEY_FORMATS.includes(v)) throw new FrameError(`unsupported key format: ${safeName(v)}`);
  return v;
}

function need32(raw, format) {
  if (raw.length !== 32) throw new FrameError(`a ${format} key is 32 bytes; this key is ${raw.length}`);
}

// encodePrivateKey is the text a user is shown for an exported private key (raw bytes).
export async function encodePrivateKey(raw, format) {
  switch (keyFormat(format)) {
    case "HEXADECIMAL":
      return "0x" + bytesToHex(raw);
    case "SOLANA": {
      need32(raw, "SOLANA");
      const full = concat(raw, await ed25519PublicKey(raw));
      try {
        return base58Encode(full);
      } finally {
        wipe(full);
      }
    }
    case "BITCOIN_MAINNET_WIF":
    case "BITCOIN_TESTNET_WIF": {
      need32(raw, format);
      const payload = concat([WIF_VERSION[format]], raw, [0x01]);
      try {
        return await base58checkEncode(payload);
      } finally {
        wipe(payload);
      }
    }
    case "SUI_BECH32": {
      need32(raw, "SUI_BECH32");
      return bech32Encode(SUI_HRP, convertBits(concat([0x00], raw), 8, 5, true));
    }
  }
}

// decodePrivateKey reads the private key a user typed in format and returns its raw bytes
// (32, except hexadecimal, which the server checks for its curve).
export async function decodePrivateKey(text, format) {
  const f = keyFormat(format);
  const s = typeof text === "string" ? text.trim() : "";
  if (!s) throw new FrameError("no private key entered");
  switch (f) {
    case "HEXADECIMAL": {
      const h = s.startsWith("0x") || s.startsWith("0X") ? s.slice(2) : s;
      if (!h) throw new FrameError("the private key is not hex");
      return hexToBytes(h, "the private key");
    }
    case "SOLANA": {
      const full = base58Decode(s, "the Solana private key");
      if (full.length !== 64) {
        wipe(full);
        throw new FrameError("a Solana private key is 64 bytes in base58 (the key and its public key)");
      }
      const seed = full.slice(0, 32);
      const pub = await ed25519PublicKey(seed);
      const ok = equalBytes(pub, full.subarray(32));
      wipe(full);
      if (!ok) {
        wipe(seed);
        throw new FrameError("the Solana private key's second half is not its public key");
      }
      return seed;
    }
    case "BITCOIN_MAINNET_WIF":
    case "BITCOIN_TESTNET_WIF": {
      const payload = await base58checkDecode(s, "the WIF private key");
      try {
        if (payload.length === 33) {
          throw new FrameError("uncompressed WIF keys are not supported; use the compressed form");
        }
        if (payload.length !== 34 || payload[33] !== 0x01) throw new FrameError("the WIF private key is malformed");
        if (payload[0] !== WIF_VERSION[f]) {
          const net = f === "BITCOIN_MAINNET_WIF" ? "mainnet" : "testnet";
          throw new FrameError(`the WIF private key is not a ${net} key`);
        }
        return payload.slice(1, 33);
      } finally {
        wipe(payload);
      }
    }
    case "SUI_BECH32": {
      const { hrp, data } = bech32Decode(s, "the Sui private key");
      if (hrp !== SUI_HRP) throw new FrameError(`a Sui private key starts with ${SUI_HRP}1`);
      const bytes = Uint8Array.from(convertBits(data, 5, 8, false));
      try {
        if (bytes.length !== 33) throw new FrameError("the Sui private key is malformed");
        if (bytes[0] !== 0x00) throw new FrameError("only Ed25519 Sui private keys (flag 0) are supported");
        return bytes.slice(1);
      } finally {
        wipe(bytes);
      }
    }
  }
}

// decodeCredentialBundle reads a credential bundle (docs/wire.md §3.4): base58check, or the
// legacy base64url when the text holds characters base58 does not.
export async function decodeCredentialBundle(s) {
  if (typeof s !== "string" || !s || s.length > MAX_B58) throw new FrameError("the credential bundle is not a string");
  if (B58_RE.test(s)) return base58checkDecode(s, "the credential bundle");
  return base64urlDecode(s, "the credential bundle");
}
