// The import frame: the parent injects an import bundle (verified against this deployment's
// signer keys, for the organization and user the parent names), the user types or pastes a
// mnemonic or private key into the frame, and the parent asks for it encrypted to the bundle's
// target key. The target is kept in memory and used once; the parent only ever receives the
// encrypted bundle. There is no passphrase box: Latchkey stores no wallet passphrases.
import { FrameError, utf8Encode, wipe } from "./util.mjs";
import { seal } from "./hpke.mjs";
import { encryptedBundle, readImportBundle } from "./bundle.mjs";
import { decodePrivateKey, keyFormat } from "./encoding.mjs";
import { sanitizeSettings } from "./settings.mjs";

const WORD_COUNTS = [12, 15, 18, 21, 24];
const NO_TARGET = "no import bundle has been injected (or it was used): start the import again";

// normalizeMnemonic joins the words of what the user typed by single spaces.
export function normalizeMnemonic(text) {
  const words = (typeof text === "string" ? text : "").trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) throw new FrameError("no wallet mnemonic entered");
  if (!WORD_COUNTS.includes(words.length)) {
    throw new FrameError(`a wallet mnemonic has 12, 15, 18, 21 or 24 words, not ${words.length}`);
  }
  return words.join(" ");
}

// ui: readSecret() returns the text in the box; applyStyles(styles) applies sanitized styles.
export function importFrame({ trustedKeys, ui, log = () => {} }) {
  let target = null; // the import bundle's target key (65 bytes), used once
  const encryptTo = async (plaintext) => {
    const t = target;
    if (!t) throw new FrameError(NO_TARGET);
    target = null;
    try {
      return encryptedBundle(await seal(t, plaintext));
    } finally {
      wipe(plaintext);
    }
  };
  return {
    async ready() {
      return "";
    },
    handlers: {
      async INJECT_IMPORT_BUNDLE(m) {
        target = await readImportBundle(m.value, {
          trustedKeys,
          organizationId: m.organizationId,
          userId: m.userId,
        });
        return ["BUNDLE_INJECTED", true];
      },
      async EXTRACT_WALLET_ENCRYPTED_BUNDLE() {
        const mnemonic = normalizeMnemonic(ui.readSecret());
        if (!target) throw new FrameError(NO_TARGET);
        return ["ENCRYPTED_BUNDLE_EXTRACTED", await encryptTo(utf8Encode(mnemonic))];
      },
      async EXTRACT_KEY_ENCRYPTED_BUNDLE(m) {
        const raw = await decodePrivateKey(ui.readSecret(), keyFormat(m.keyFormat));
        if (!target) {
          wipe(raw);
          throw new FrameError(NO_TARGET);
        }
        return ["ENCRYPTED_BUNDLE_EXTRACTED", await encryptTo(raw)];
      },
      APPLY_SETTINGS(m) {
        const { styles, ignored } = sanitizeSettings(m.value);
        if (ignored.length) log(`ignored settings: ${ignored.join(", ")}`);
        ui.applyStyles(styles);
        return ["SETTINGS_APPLIED", true];
      },
    },
  };
}
