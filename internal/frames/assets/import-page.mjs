// The import page: wires the import frame (import.mjs) to the document's text box.
import { serve } from "./channel.mjs";
import { importFrame } from "./import.mjs";
import { applyStyles } from "./settings.mjs";
import { embedded, log, pageConfig } from "./page.mjs";

const cfg = pageConfig(document);
const box = document.getElementById("secret");
const frame = importFrame({
  trustedKeys: cfg.signerKeys,
  log,
  ui: {
    readSecret: () => box.value,
    applyStyles: (styles) => applyStyles(document, box, styles),
  },
});
// After a paste, the clipboard is emptied where the parent delegated clipboard-write (the
// stamper's clearClipboardOnPaste, on by default); a refusal is of no consequence.
box.addEventListener("paste", () => {
  setTimeout(() => {
    if (navigator.clipboard) navigator.clipboard.writeText("").catch(() => {});
  }, 0);
});
if (embedded(window, document)) serve(window, frame, { parentOrigins: cfg.parentOrigins });
