// The parent-frame protocol of @turnkey/iframe-stamper 2.11 (docs/frames.md, "The protocol"):
// the parent posts TURNKEY_INIT_MESSAGE_CHANNEL to the frame's window with a MessagePort; the
// frame keeps that port, answers PUBLIC_KEY_READY on it, and from then on answers every request
// {type, requestId, ...} on it with {type, value, requestId}, errors as {type: "ERROR", value:
// "<short message>", requestId}.
import { FrameError, safeName } from "./util.mjs";

export const INIT = "TURNKEY_INIT_MESSAGE_CHANNEL";

// Messages of Turnkey's export-and-sign frame, which Latchkey does not serve: they are refused
// by name rather than as unknown.
const UNSUPPORTED = new Set([
  "SIGN_TRANSACTION",
  "SIGN_MESSAGE",
  "CLEAR_EMBEDDED_PRIVATE_KEY",
  "SET_EMBEDDED_KEY_OVERRIDE",
  "RESET_TO_DEFAULT_EMBEDDED_KEY",
]);

// errorText is what the parent is told of a failure: a FrameError's message, or for anything
// unexpected only its name (a WebCrypto error's message could say more than it should).
export function errorText(e) {
  if (e instanceof FrameError) return e.message;
  return `unexpected error in the frame (${safeName(e && e.name)})`;
}

// serve answers the parent on behalf of frame:
// - frame.ready(initMessage) resolves to the PUBLIC_KEY_READY value;
// - frame.handlers[type](message) resolves to [replyType, value] for each request type.
// Only the first init from win.parent (from an origin in parentOrigins, unless that list is
// empty or "*") is taken; every other window message is ignored, before and after it.
export function serve(win, frame, { parentOrigins = [] } = {}) {
  let port = null;
  const anyOrigin = parentOrigins.length === 0 || parentOrigins.includes("*");
  const onWindowMessage = (event) => {
    if (port) return;
    const data = event.data;
    if (data === null || typeof data !== "object" || data.type !== INIT) return;
    if (win.parent === win || event.source !== win.parent) return;
    if (!anyOrigin && !parentOrigins.includes(event.origin)) return;
    const p = event.ports && event.ports[0];
    if (!p) return;
    port = p;
    win.removeEventListener("message", onWindowMessage);
    const ready = Promise.resolve().then(() => frame.ready(data));
    port.onmessage = (e) => answer(port, frame, ready, e.data);
    ready.then(
      (value) => port.postMessage({ type: "PUBLIC_KEY_READY", value }),
      (e) => port.postMessage({ type: "ERROR", value: errorText(e) }),
    );
  };
  win.addEventListener("message", onWindowMessage);
  return { get established() { return port !== null; } };
}

async function answer(port, frame, ready, msg) {
  if (msg === null || typeof msg !== "object") return;
  const requestId = msg.requestId;
  let reply;
  try {
    await ready;
    const known = typeof msg.type === "string" && Object.hasOwn(frame.handlers, msg.type);
    const handler = known ? frame.handlers[msg.type] : null;
    if (!handler && UNSUPPORTED.has(msg.type)) {
      throw new FrameError(
        `${msg.type} is not supported by Latchkey's frames (it belongs to Turnkey's export-and-sign frame)`,
      );
    }
    if (!handler) throw new FrameError(`unknown message type: ${safeName(msg.type)}`);
    const [type, value] = await handler(msg);
    reply = { type, value, requestId };
  } catch (e) {
    reply = { type: "ERROR", value: errorText(e), requestId };
  }
  port.postMessage(reply);
}
