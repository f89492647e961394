// A small app on the published @turnkey/react-wallet-kit, as a new user would write one against
// Latchkey (docs/compatibility.md, docs/frames.md). kit.test.mjs serves it with /config.json
// (the running server's addresses and ids) and drives it through the kit's own hook, which the
// app hands to the page as window.kit, and through the kit's modals.
import React, { useEffect } from "react";
import { createRoot } from "react-dom/client";
import { TurnkeyProvider, useTurnkey } from "@turnkey/react-wallet-kit";
import "@turnkey/react-wallet-kit/styles.css";
import { encryptOtpCodeToBundle } from "@turnkey/crypto";

const ETH = { curve: "CURVE_SECP256K1", pathFormat: "PATH_FORMAT_BIP32", path: "m/44'/60'/0'/0/0", addressFormat: "ADDRESS_FORMAT_ETHEREUM" };

const events = (window.kitEvents = []);

function Probe({ cfg }) {
  const kit = useTurnkey();
  useEffect(() => {
    window.kit = kit;
    // The e-mail one-time-code route of docs/compatibility.md: the kit's own calls, except that the
    // code is encrypted to Latchkey's OTP key (the kit's verifyOtp encrypts to Turnkey's, fixed).
    window.emailOtp = {
      start: (email) => kit.initOtp({ otpType: "OTP_TYPE_EMAIL", contact: email }),
      async finish({ email, otpId, otpEncryptionTargetBundle, code }) {
        const publicKey = await kit.createApiKeyPair();
        const encryptedOtpBundle = await encryptOtpCodeToBundle(code, otpEncryptionTargetBundle, publicKey, cfg.otpPublicKey);
        const { verificationToken } = await kit.httpClient.proxyVerifyOtpV2({ otpId, encryptedOtpBundle });
        const { organizationId } = await kit.httpClient.proxyGetAccount({ filterType: "EMAIL", filterValue: email, verificationToken });
        if (organizationId) {
          await kit.loginWithOtp({ verificationToken, organizationId });
          return { action: "login", organizationId };
        }
        const r = await kit.signUpWithOtp({ verificationToken, contact: email, otpType: "OTP_TYPE_EMAIL",
          createSubOrgParams: { userName: email, customWallet: { walletName: "e-mail wallet", walletAccounts: [ETH] } } });
        return { action: "signup", appProofs: r.appProofs?.length ?? 0 };
      },
    };
  });
  return (
    <div id="state" data-client={String(kit.clientState ?? "")} data-auth={String(kit.authState ?? "")}
      data-user={kit.user?.userName ?? ""} data-wallets={String(kit.wallets.length)}>
      <p>state: {String(kit.authState)}</p>
      <p>user: {kit.user?.userName}</p>
      <ul id="wallets">{kit.wallets.map((w) => <li key={w.walletId}>{w.walletName}</li>)}</ul>
      <button id="login" onClick={() => kit.handleLogin()}>Log in</button>
    </div>
  );
}

async function main() {
  const cfg = await (await fetch("/config.json")).json();
  const config = {
    apiBaseUrl: cfg.apiBaseUrl,
    authProxyUrl: cfg.authProxyUrl,
    authProxyConfigId: cfg.authProxyConfigId,
    organizationId: cfg.organizationId,
    exportIframeUrl: `${cfg.framesUrl}/export?organizationId=${cfg.organizationId}`,
    importIframeUrl: `${cfg.framesUrl}/import?organizationId=${cfg.organizationId}`,
    auth: { createSuborgParams: { passkeyAuth: { userName: "passkey user", passkeyName: "e2e passkey",
      customWallet: { walletName: "first wallet", walletAccounts: [ETH] } } } },
  };
  const callbacks = {
    beforeSessionExpiry: ({ sessionKey }) => events.push({ type: "beforeSessionExpiry", sessionKey, at: Date.now() }),
    onAuthenticationSuccess: ({ action, method }) => events.push({ type: "authenticated", action, method }),
    onError: (e) => events.push({ type: "error", message: String(e?.message ?? e), code: e?.code, cause: String(e?.cause?.message ?? "") }),
  };
  createRoot(document.getElementById("root")).render(
    <TurnkeyProvider config={config} callbacks={callbacks}>
      <Probe cfg={cfg} />
    </TurnkeyProvider>,
  );
}

main();
