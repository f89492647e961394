// APPLY_SETTINGS: safe styles pass, unsafe or unknown ones are left out without failing.
import { test } from "node:test";
import assert from "node:assert/strict";
import { sanitizeSettings } from "../assets/settings.mjs";
import { FrameError } from "../assets/util.mjs";

test("the kit's defaults and ordinary styles pass", () => {
  const styles = {
    fontSize: "16px", backgroundColor: "#e5e7eb", color: "#828282", labelColor: "#A3A3A5", padding: "4px 8px",
    margin: "0 auto", borderWidth: "1px", borderStyle: "solid", borderColor: "rgb(10, 20, 30)", borderRadius: "8px",
    fontWeight: "600", fontFamily: "'Inter', system-ui, sans-serif", width: "100%", height: "120px", maxWidth: "300px",
    maxHeight: "none", lineHeight: "1.5", boxShadow: "0 1px 2px rgba(0, 0, 0, 0.2), inset 0 0 1px hsl(0 0% 50%)",
    textAlign: "center", overflowWrap: "anywhere", wordWrap: "break-word", resize: "none",
  };
  const { styles: got, ignored } = sanitizeSettings(JSON.stringify({ styles }));
  assert.deepEqual(got, styles);
  assert.deepEqual(ignored, []);
});

test("unsafe values and unknown keys are ignored, by name", () => {
  const styles = {
    color: "url(https://evil.example/x)", backgroundColor: "red; background: url(x)", fontSize: "expression(alert(1))",
    boxShadow: "0 0 1px url(x)", fontFamily: "x</style>", width: "calc(100% - var(--x))", position: "fixed",
    borderColor: 7, padding: "1px 1px 1px 1px 1px", margin: "x".repeat(300), __proto__: "x",
  };
  const { styles: got, ignored } = sanitizeSettings(JSON.stringify({ styles, passphraseStyles: {}, enablePassphrase: true }));
  assert.deepEqual(got, {});
  for (const k of ["color", "backgroundColor", "fontSize", "boxShadow", "fontFamily", "width", "position", "borderColor", "padding", "margin"]) {
    assert.ok(ignored.includes(`styles.${k}`), k);
  }
  assert.ok(ignored.includes("passphraseStyles") && ignored.includes("enablePassphrase"));
});

test("settings that are not a JSON object are an error", () => {
  for (const v of ["{", "[]", "null", "3", 4]) assert.throws(() => sanitizeSettings(v), FrameError);
  assert.deepEqual(sanitizeSettings("{}"), { styles: {}, ignored: [] });
  assert.deepEqual(sanitizeSettings(JSON.stringify({ styles: [] })).ignored, ["styles"]);
});
