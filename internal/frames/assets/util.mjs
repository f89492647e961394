// Byte helpers shared by Latchkey's frames. Nothing here touches the page or the network.

// FrameError is an error whose message may be shown to the parent page: short, and never
// holding key material or bundle contents. Anything else that is thrown is reported by its
// name only (channel.mjs).
export class FrameError extends Error {
  constructor(message) {
    super(message);
    this.name = "FrameError";
  }
}

const HEX_RE = /^[0-9a-fA-F]*$/;

// hexToBytes decodes hex (either case, even length); what names the value in the error.
export function hexToBytes(s, what) {
  if (typeof s !== "string" || s.length % 2 !== 0 || !HEX_RE.test(s)) {
    throw new FrameError(`${what} is not hex`);
  }
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.substr(2 * i, 2), 16);
  return out;
}

export function bytesToHex(b) {
  let s = "";
  for (const x of b) s += x.toString(16).padStart(2, "0");
  return s;
}

export function concat(...parts) {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export function equalBytes(a, b) {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
  return d === 0;
}

export const utf8Encode = (s) => new TextEncoder().encode(s);

export function utf8Decode(b, what) {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(b);
  } catch {
    throw new FrameError(`${what} is not UTF-8`);
  }
}

export function base64urlEncode(bytes) {
  let bin = "";
  for (const x of bytes) bin += String.fromCharCode(x);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function base64urlDecode(s, what = "the value") {
  if (typeof s !== "string" || !/^[A-Za-z0-9_-]*={0,2}$/.test(s)) throw new FrameError(`${what} is not base64url`);
  const t = s.replace(/=+$/, "").replace(/-/g, "+").replace(/_/g, "/");
  if (t.length % 4 === 1) throw new FrameError(`${what} is not base64url`);
  let bin;
  try {
    bin = atob(t + "===".slice((t.length + 3) % 4));
  } catch {
    throw new FrameError(`${what} is not base64url`);
  }
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// wipe overwrites a buffer that held secret bytes (best effort: JavaScript strings cannot be).
export function wipe(...bufs) {
  for (const b of bufs) if (b && typeof b.fill === "function") b.fill(0);
}

export async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

// safeName is a message type or format name fit to repeat in an error: an identifier, or a
// placeholder for anything else.
export function safeName(v) {
  return typeof v === "string" && /^[A-Za-z0-9_]{1,64}$/.test(v) ? v : "(not a name)";
}
