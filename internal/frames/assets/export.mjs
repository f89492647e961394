// The export frame: makes a P-256 key that lives in this page's memory only, tells the parent
// its public key, and opens the export bundle the parent injects (verified against this
// deployment's signer keys, for the organization the parent names) with it, once. The mnemonic
// or private key is shown in the page; the parent is only told `true`.
import { FrameError, bytesToHex, utf8Decode, wipe } from "./util.mjs";
import { newKeyPair } from "./hpke.mjs";
import { openExportBundle } from "./bundle.mjs";
import { encodePrivateKey, keyFormat } from "./encoding.mjs";
import { sanitizeSettings } from "./settings.mjs";

// ui: showSecret(text) displays the secret; applyStyles(styles) applies sanitized styles.
// newKey makes the embedded key (tests give one of their own).
export function exportFrame({ trustedKeys, ui, log = () => {}, newKey = () => newKeyPair(false) }) {
  let embedded = null; // {privateKey, publicRaw}, used once
  const ensureKey = async () => {
    if (!embedded) embedded = await newKey();
    return embedded;
  };
  const open = async (m) => {
    const k = embedded;
    if (!k) throw new FrameError("this frame's key was used or reset: start the export again");
    const plain = await openExportBundle(m.value, { trustedKeys, organizationId: m.organizationId, receiver: k });
    if (embedded === k) embedded = null;
    return plain;
  };
  return {
    async ready() {
      return bytesToHex((await ensureKey()).publicRaw);
    },
    handlers: {
      async INJECT_WALLET_EXPORT_BUNDLE(m) {
        const plain = await open(m);
        let text;
        try {
          text = utf8Decode(plain, "the exported wallet");
        } finally {
          wipe(plain);
        }
        // The mnemonic, without a passphrase that may follow it on a second line.
        const mnemonic = text.split("\n")[0].trim();
        if (!mnemonic) throw new FrameError("the exported wallet is empty");
        ui.showSecret(mnemonic);
        return ["BUNDLE_INJECTED", true];
      },
      async INJECT_KEY_EXPORT_BUNDLE(m) {
        const format = keyFormat(m.keyFormat); // before the key is used
        const plain = await open(m);
        let text;
        try {
          text = await encodePrivateKey(plain, format);
        } finally {
          wipe(plain);
        }
        ui.showSecret(text);
        return ["BUNDLE_INJECTED", true];
      },
      APPLY_SETTINGS(m) {
        const { styles, ignored } = sanitizeSettings(m.value);
        if (ignored.length) log(`ignored settings: ${ignored.join(", ")}`);
        ui.applyStyles(styles);
        return ["SETTINGS_APPLIED", true];
      },
      GET_EMBEDDED_PUBLIC_KEY() {
        return ["EMBEDDED_PUBLIC_KEY", embedded ? bytesToHex(embedded.publicRaw) : ""];
      },
      async INIT_EMBEDDED_KEY() {
        return ["EMBEDDED_PUBLIC_KEY", bytesToHex((await ensureKey()).publicRaw)];
      },
      RESET_EMBEDDED_KEY() {
        embedded = null;
        return ["EMBEDDED_KEY_RESET", true];
      },
    },
  };
}
