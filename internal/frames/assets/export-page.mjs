// The export page: wires the export frame (export.mjs) to the document.
import { serve } from "./channel.mjs";
import { exportFrame } from "./export.mjs";
import { applyStyles } from "./settings.mjs";
import { embedded, log, pageConfig } from "./page.mjs";

const cfg = pageConfig(document);
const secret = document.getElementById("secret");
const status = document.getElementById("status");
const frame = exportFrame({
  trustedKeys: cfg.signerKeys,
  log,
  ui: {
    showSecret(text) {
      secret.textContent = text;
      secret.hidden = false;
      status.hidden = true;
    },
    applyStyles: (styles) => applyStyles(document, secret, styles),
  },
});
if (embedded(window, document)) serve(window, frame, { parentOrigins: cfg.parentOrigins });
