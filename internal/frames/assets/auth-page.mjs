// The auth page: wires the auth frame (auth.mjs) to this origin's localStorage.
import { serve } from "./channel.mjs";
import { authFrame, memoryStorage } from "./auth.mjs";
import { embedded, log, pageConfig } from "./page.mjs";

function storage() {
  try {
    const s = window.localStorage;
    const probe = "latchkey-frames.probe";
    s.setItem(probe, "1");
    s.removeItem(probe);
    return s;
  } catch {
    log("localStorage is not available to this frame: the embedded key lasts as long as the page");
    return memoryStorage();
  }
}

const cfg = pageConfig(document);
const frame = authFrame({ storage: storage(), log });
if (embedded(window, document)) serve(window, frame, { parentOrigins: cfg.parentOrigins });
