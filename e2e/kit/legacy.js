// The older @turnkey/sdk-browser e-mail auth, through Latchkey's auth frame (docs/frames.md):
// the frame holds the key the credential bundle is encrypted to, and stamps the app's requests.
import { Turnkey } from "@turnkey/sdk-browser";

async function main() {
  const cfg = await (await fetch("/config.json")).json();
  const turnkey = new Turnkey({ apiBaseUrl: cfg.apiBaseUrl, defaultOrganizationId: cfg.organizationId });
  const auth = await turnkey.iframeClient({ iframeContainer: document.getElementById("turnkey-auth"),
    iframeUrl: `${cfg.framesUrl}/auth` });
  window.legacy = {
    publicKey: () => auth.iframePublicKey ?? auth.getEmbeddedPublicKey(),
    async login(bundle, organizationId) {
      await auth.injectCredentialBundle(bundle);
      return auth.getWhoami({ organizationId });
    },
    whoami: (organizationId) => auth.getWhoami({ organizationId }),
  };
}

main();
