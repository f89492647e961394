// Shared helpers of the frames' tests: the fixtures Latchkey's Go code made (js_test.go), the
// key vectors, an embedded key from a fixture, and a fake window to drive the protocol.
import { readFileSync, writeFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { hexToBytes } from "../assets/util.mjs";
import { jwkPublicRaw, scalarToJwk } from "../assets/hpke.mjs";

const here = dirname(fileURLToPath(import.meta.url));

// fixtures are Go's fixtures, or null when the tests run without them (node --test alone).
export const fixtures = process.env.LATCHKEY_FRAMES_FIXTURES
  ? JSON.parse(readFileSync(process.env.LATCHKEY_FRAMES_FIXTURES, "utf8"))
  : null;
export const needFixtures = fixtures ? {} : { skip: "no fixtures: run through go test ./internal/frames" };

export const vectors = JSON.parse(readFileSync(join(here, "..", "testdata", "key_formats.json"), "utf8")).keys;

// writeOut leaves a result for the Go test to check (when it asked for them).
export function writeOut(name, value) {
  if (process.env.LATCHKEY_FRAMES_OUT) writeFileSync(join(process.env.LATCHKEY_FRAMES_OUT, name), JSON.stringify(value));
}

// receiverKey is an embedded key ({privateKey, publicRaw}) from a fixture's scalar.
export async function receiverKey({ privateKey }) {
  const jwk = await scalarToJwk(hexToBytes(privateKey, "fixture"));
  const key = await crypto.subtle.importKey("jwk", jwk, { name: "ECDH", namedCurve: "P-256" }, false, ["deriveBits"]);
  return { privateKey: key, publicRaw: jwkPublicRaw(jwk), jwk };
}

// fakeWindow is enough of a window for channel.serve: listeners, and a parent.
export function fakeWindow() {
  const listeners = new Set();
  const win = {
    parent: { name: "parent" },
    addEventListener: (type, f) => type === "message" && listeners.add(f),
    removeEventListener: (type, f) => type === "message" && listeners.delete(f),
    // post delivers a window message as the browser would.
    post: (data, { source = win.parent, origin = "https://app.example", ports = [] } = {}) => {
      for (const f of [...listeners]) f({ data, source, origin, ports });
    },
    listeners,
  };
  return win;
}

// connect performs the parent's side of the handshake and returns a client: request(type,
// fields) resolves to the reply, and ready is the PUBLIC_KEY_READY message.
export async function connect(win, opts = {}) {
  const { port1, port2 } = new MessageChannel();
  const pending = new Map();
  const unsolicited = [];
  let onReady;
  const ready = new Promise((r) => (onReady = r));
  port1.onmessage = (e) => {
    const m = e.data;
    if (m.type === "PUBLIC_KEY_READY") return onReady(m);
    if (pending.has(m.requestId)) {
      pending.get(m.requestId)(m);
      pending.delete(m.requestId);
    } else unsolicited.push(m);
  };
  win.post({ type: "TURNKEY_INIT_MESSAGE_CHANNEL", ...opts.init }, { ports: [port2], ...opts.event });
  const client = {
    ready,
    unsolicited,
    request(type, fields = {}) {
      const requestId = crypto.randomUUID();
      return new Promise((resolve) => {
        pending.set(requestId, resolve);
        port1.postMessage({ type, requestId, ...fields });
      });
    },
    close: () => port1.close(),
  };
  return client;
}

// memory is a localStorage stand-in that shows what was written.
export function memory(initial = {}) {
  const m = new Map(Object.entries(initial));
  return {
    getItem: (k) => (m.has(k) ? m.get(k) : null),
    setItem: (k, v) => void m.set(k, String(v)),
    removeItem: (k) => void m.delete(k),
    map: m,
  };
}
