// What the three pages share in the browser: the configuration the server wrote into the page
// (<meta> elements; never anything from the parent) and a console for ignored settings.

// pageConfig reads the signer keys this deployment trusts and the origins that may frame the
// page ("*": any), as the server wrote them at request time.
export function pageConfig(doc) {
  const list = (name) => {
    const el = doc.querySelector(`meta[name="${name}"]`);
    return el ? el.content.split(/\s+/).filter(Boolean) : [];
  };
  return { signerKeys: list("latchkey-signer-keys"), parentOrigins: list("latchkey-frame-ancestors") };
}

export const log = (msg) => console.warn(`latchkey frame: ${msg}`);

// embedded says whether the page runs in a frame; a page opened on its own says what it is.
export function embedded(win, doc) {
  if (win.parent !== win) return true;
  const status = doc.getElementById("status");
  if (status) status.textContent = "This page is meant to be embedded by a Turnkey SDK as an iframe.";
  return false;
}
