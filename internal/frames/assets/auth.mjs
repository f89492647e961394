// The auth frame of the older SDKs (@turnkey/sdk-browser's iframe client, @turnkey/sdk-react's
// provider): it keeps a P-256 key in this origin's localStorage with an expiry (48 hours, or the
// parent's dangerouslyOverrideIframeKeyTtl in milliseconds when the key is made), opens the
// credential bundles encrypted to it (e-mail auth, OTP, recovery, sessions) and stamps requests
// with the credential, which stays in memory. Stamps are X-Stamp values (docs/wire.md §1).
import { FrameError, base64urlEncode, bytesToHex, concat, utf8Encode, wipe } from "./util.mjs";
import { jwkPublicRaw, newKeyPair, open, p256Compressed, scalarToJwk } from "./hpke.mjs";
import { decodeCredentialBundle } from "./encoding.mjs";
import { sanitizeSettings } from "./settings.mjs";

export const STORAGE_KEY = "latchkey-frames.auth.embedded-key";
export const DEFAULT_TTL_MS = 48 * 60 * 60 * 1000;

// rawToDer encodes a 64-byte r‖s signature as DER.
export function rawToDer(raw) {
  const int = (b) => {
    let i = 0;
    while (i < b.length - 1 && b[i] === 0) i++;
    const v = b.subarray(i);
    return v[0] & 0x80 ? concat([0x02, v.length + 1, 0], v) : concat([0x02, v.length], v);
  };
  const body = concat(int(raw.subarray(0, 32)), int(raw.subarray(32, 64)));
  return concat([0x30, body.length], body);
}

function validTTL(v) {
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? v : null;
}

// storage: getItem/setItem/removeItem (localStorage); now() in milliseconds.
export function authFrame({ storage, now = () => Date.now(), log = () => {} }) {
  let ttl = DEFAULT_TTL_MS;
  let cached = null; // {stored, key: {privateKey, publicRaw}}: the stored text it was read from
  let credential = null; // {key: ECDSA CryptoKey, publicKey: compressed hex}
  let queue = Promise.resolve();
  // serial runs key operations one at a time (two INIT_EMBEDDED_KEY must not make two keys).
  const serial = (fn) => {
    const p = queue.then(fn);
    queue = p.catch(() => {});
    return p;
  };

  // current is the stored key if it is there and unexpired (an expired one is removed).
  const current = async () => {
    let stored;
    try {
      stored = storage.getItem(STORAGE_KEY);
    } catch {
      stored = null;
    }
    if (!stored) return null;
    if (cached && cached.stored === stored && cached.expiry > now()) return cached.key;
    try {
      const { jwk, expiry } = JSON.parse(stored);
      if (typeof expiry !== "number" || !(expiry > now())) throw new Error("expired");
      const privateKey = await crypto.subtle.importKey("jwk", jwk, { name: "ECDH", namedCurve: "P-256" }, false, [
        "deriveBits",
      ]);
      const key = { privateKey, publicRaw: jwkPublicRaw(jwk) };
      cached = { stored, expiry, key };
      return key;
    } catch {
      storage.removeItem(STORAGE_KEY);
      cached = null;
      return null;
    }
  };
  const create = async () => {
    const kp = await newKeyPair(true);
    const jwk = await crypto.subtle.exportKey("jwk", kp.privateKey);
    const expiry = now() + ttl;
    const stored = JSON.stringify({ jwk, expiry });
    storage.setItem(STORAGE_KEY, stored);
    const key = { privateKey: kp.privateKey, publicRaw: kp.publicRaw };
    cached = { stored, expiry, key };
    return key;
  };
  const ensure = () => serial(async () => (await current()) ?? (await create()));

  const inject = async (m) => {
    const bytes = await decodeCredentialBundle(m.value);
    if (bytes.length <= 33 + 16) throw new FrameError("the credential bundle is too short");
    const key = await serial(current);
    if (!key) {
      throw new FrameError("this frame has no embedded key (it expired or was reset): make a new one and ask again");
    }
    const scalar = await open(key, bytes.subarray(0, 33), bytes.subarray(33));
    try {
      if (scalar.length !== 32) throw new FrameError("the credential bundle does not hold a P-256 private key");
      const jwk = await scalarToJwk(scalar);
      const signing = await crypto.subtle.importKey("jwk", jwk, { name: "ECDSA", namedCurve: "P-256" }, false, [
        "sign",
      ]);
      credential = { key: signing, publicKey: bytesToHex(p256Compressed(jwkPublicRaw(jwk))) };
    } finally {
      wipe(scalar, bytes);
    }
    return ["BUNDLE_INJECTED", true];
  };

  return {
    async ready(init) {
      const override = validTTL(init && init.dangerouslyOverrideIframeKeyTtl);
      if (override !== null) ttl = override;
      return bytesToHex((await ensure()).publicRaw);
    },
    handlers: {
      INJECT_CREDENTIAL_BUNDLE: inject,
      INJECT_RECOVERY_BUNDLE: inject,
      async STAMP_REQUEST(m) {
        if (!credential) throw new FrameError("cannot stamp: no credential bundle has been injected");
        if (typeof m.value !== "string") throw new FrameError("the request to stamp is not a string");
        const raw = new Uint8Array(
          await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, credential.key, utf8Encode(m.value)),
        );
        const stamp = JSON.stringify({
          publicKey: credential.publicKey,
          scheme: "SIGNATURE_SCHEME_TK_API_P256",
          signature: bytesToHex(rawToDer(raw)),
        });
        return ["STAMP", base64urlEncode(utf8Encode(stamp))];
      },
      async GET_EMBEDDED_PUBLIC_KEY() {
        const key = await serial(current);
        return ["EMBEDDED_PUBLIC_KEY", key ? bytesToHex(key.publicRaw) : ""];
      },
      async INIT_EMBEDDED_KEY() {
        return ["EMBEDDED_PUBLIC_KEY", bytesToHex((await ensure()).publicRaw)];
      },
      async RESET_EMBEDDED_KEY() {
        await serial(async () => {
          storage.removeItem(STORAGE_KEY);
          cached = null;
        });
        return ["EMBEDDED_KEY_RESET", true];
      },
      APPLY_SETTINGS(m) {
        const { ignored } = sanitizeSettings(m.value); // nothing of the auth frame is visible
        if (ignored.length) log(`ignored settings: ${ignored.join(", ")}`);
        return ["SETTINGS_APPLIED", true];
      },
    },
  };
}

// memoryStorage stands in for localStorage where a browser refuses it to the frame (storage
// blocked for third-party frames): the key then lasts as long as the page.
export function memoryStorage() {
  const m = new Map();
  return {
    getItem: (k) => (m.has(k) ? m.get(k) : null),
    setItem: (k, v) => void m.set(k, String(v)),
    removeItem: (k) => void m.delete(k),
  };
}
