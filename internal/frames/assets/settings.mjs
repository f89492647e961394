// APPLY_SETTINGS: the styles a parent page may set on a frame (the keys of iframe-stamper's
// TIframeStyles). Each value is checked against a narrow grammar for its property; a value that
// fails, or an unknown key, is left out (and named in `ignored`) instead of failing the request,
// so one unusual colour does not break an app's export dialog. The page applies what is left
// through the CSSOM, which the frames' Content-Security-Policy allows (no style attributes).
import { FrameError } from "./util.mjs";

const NUM = String.raw`(?:\d+|\d*\.\d+)`;
const LEN = String.raw`(?:0|-?${NUM}(?:px|em|rem|%|vh|vw|vmin|vmax|ch|ex|pt))`;
const POS_LEN = String.raw`(?:0|${NUM}(?:px|em|rem|%|vh|vw|vmin|vmax|ch|ex|pt))`;
const upTo4 = (one) => new RegExp(`^${one}(?:\\s+${one}){0,3}$`);
const oneOf = (...words) => new RegExp(`^(?:${words.join("|")})$`);

// A colour: hex (any case), rgb()/rgba()/hsl()/hsla() of numbers, or a keyword (named colours,
// transparent, currentcolor, inherit…). The browser drops a keyword it does not know.
const COLOR =
  /^(?:#[0-9a-fA-F]{3,4}|#[0-9a-fA-F]{6}|#[0-9a-fA-F]{8}|(?:rgb|rgba|hsl|hsla)\([0-9.,%\s/+-]{1,60}\)|[a-zA-Z]{3,30})$/;
const SIZE = new RegExp(`^(?:${POS_LEN}|auto|none|min-content|max-content|fit-content)$`);
const BORDER_STYLE = "none|hidden|dotted|dashed|solid|double|groove|ridge|inset|outset";

const RULES = {
  padding: upTo4(POS_LEN),
  margin: upTo4(`(?:${LEN}|auto)`),
  borderWidth: upTo4(`(?:${POS_LEN}|thin|medium|thick)`),
  borderStyle: upTo4(`(?:${BORDER_STYLE})`),
  borderColor: COLOR,
  borderRadius: upTo4(POS_LEN),
  fontSize: new RegExp(
    `^(?:${POS_LEN}|xx-small|x-small|small|medium|large|x-large|xx-large|xxx-large|smaller|larger)$`,
  ),
  fontWeight: oneOf("normal", "bold", "bolder", "lighter", "[1-9]00"),
  fontFamily: /^[A-Za-z0-9 ,'"_-]{1,200}$/,
  color: COLOR,
  labelColor: COLOR,
  backgroundColor: COLOR,
  width: SIZE,
  height: SIZE,
  maxWidth: SIZE,
  maxHeight: SIZE,
  lineHeight: new RegExp(`^(?:normal|${NUM}|${POS_LEN})$`),
  boxShadow: /^(?:none|[A-Za-z0-9#.,%()\s/-]{1,200})$/,
  textAlign: oneOf("left", "right", "center", "justify", "start", "end"),
  overflowWrap: oneOf("normal", "break-word", "anywhere"),
  wordWrap: oneOf("normal", "break-word", "anywhere"),
  resize: oneOf("none", "both", "horizontal", "vertical", "block", "inline"),
};

// The only functions a box shadow may call (its colours).
const SHADOW_FUNCS = new Set(["rgb", "rgba", "hsl", "hsla"]);

function allowed(key, value) {
  const rule = RULES[key];
  if (!rule || typeof value !== "string" || value.length > 200) return false;
  const v = value.trim();
  if (!rule.test(v)) return false;
  if (key === "boxShadow") {
    for (const m of v.matchAll(/([A-Za-z-]*)\s*\(/g)) if (!SHADOW_FUNCS.has(m[1].toLowerCase())) return false;
  }
  return true;
}

// sanitizeSettings reads APPLY_SETTINGS' value (a JSON string of {styles, passphraseStyles,
// enablePassphrase}) and returns {styles, ignored}: the styles that passed, and the keys left
// out. passphraseStyles and enablePassphrase are ignored: Latchkey's import frame has no
// passphrase box (the server does not store wallet passphrases).
export function sanitizeSettings(value) {
  let s;
  try {
    s = typeof value === "string" ? JSON.parse(value) : value;
  } catch {
    throw new FrameError("the settings are not JSON");
  }
  if (s === null || typeof s !== "object" || Array.isArray(s)) {
    throw new FrameError("the settings are not a JSON object");
  }
  const styles = {};
  const ignored = [];
  const given = s.styles ?? {};
  if (given === null || typeof given !== "object" || Array.isArray(given)) {
    ignored.push("styles");
  } else {
    for (const [k, v] of Object.entries(given)) {
      if (Object.hasOwn(RULES, k) && allowed(k, v)) styles[k] = v.trim();
      else ignored.push(`styles.${k}`.slice(0, 80));
    }
  }
  for (const k of ["passphraseStyles", "enablePassphrase"]) if (k in s) ignored.push(k);
  return { styles, ignored };
}

// applyStyles sets the sanitized styles: on target (the secret, or the import box), the
// background also on the page, the label colour as a custom property the page's CSS reads.
export function applyStyles(doc, target, styles) {
  for (const [k, v] of Object.entries(styles)) {
    if (k === "labelColor") {
      doc.documentElement.style.setProperty("--label-color", v);
      continue;
    }
    target.style[k] = v;
    if (k === "backgroundColor") {
      doc.documentElement.style.backgroundColor = v;
      doc.body.style.backgroundColor = v;
    }
  }
}
