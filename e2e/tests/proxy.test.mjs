// The auth proxy end to end: a real `latchkey serve --dev` with its proxy enabled by
// the `latchkey proxy` CLI while it runs, one-time codes delivered over real SMTP to a small
// SMTP server in this file, sessions checked with @turnkey/crypto.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { generateP256KeyPair, encryptOtpCodeToBundle, verifySessionJwtSignature, decryptCredentialBundle, getPublicKey } from "@turnkey/crypto";
import { signWithApiKey } from "@turnkey/api-key-stamper";
import { TurnkeyClient, getAuthProxyConfig, getClientSignatureMessageForLogin, getClientSignatureMessageForSignup } from "@turnkey/core";
import { AttestedStamper, AttestedScheme } from "@turnkey/core/dist/__stampers__/attested/base.mjs";
import { startLatchkey } from "./lib.mjs";
import { startSMTP } from "./smtp.mjs";

const ORIGIN = "http://localhost:3000";
let lk, smtp, configId;
const codes = [];

// The code in an e-mail: the text part puts it alone on an indented line.
function codeOf(message) {
  const m = message.data.match(/^ {4}([0-9A-Z]{6,9})\s*$/m);
  assert.ok(m, `no code in ${message.data}`);
  codes.push(m[1]);
  return m[1];
}

async function proxy(op, body, { origin = ORIGIN, config = configId } = {}) {
  const headers = { "Content-Type": "application/json" };
  if (config) headers["X-Auth-Proxy-Config-ID"] = config;
  if (origin) headers["Origin"] = origin;
  const resp = await fetch(`${lk.proxyUrl}/v1/${op}`, { method: "POST", headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: resp.status, body: await resp.json(), headers: resp.headers };
}

async function ok(op, body) {
  const r = await proxy(op, body);
  assert.equal(r.status, 200, `${op}: ${JSON.stringify(r.body)}`);
  return r.body;
}

const tokenClaims = (tok) => JSON.parse(Buffer.from(tok.split(".")[1], "base64url").toString());

before(async () => {
  smtp = await startSMTP();
  lk = await startLatchkey(["--smtp-addr", `127.0.0.1:${smtp.port}`, "--smtp-from", "auth@latchkey.test", "--smtp-mode", "plain"]);
  ({ configId } = lk.proxy("enable", ["--allowed-origins", ORIGIN, "--session-expiration-seconds", "1200", "--otp-length", "8",
    "--email-app-name", "E2E Wallet", "--enabled-providers", "email,passkey,google", "--oauth-client-ids", "google=e2e-google-client"]));
  assert.match(configId, /^[0-9a-f-]{36}$/);
});

after(async () => {
  const code = await lk.stop();
  await smtp.close();
  assert.equal(code, 0, "SIGTERM must drain and exit cleanly");
});

// signUpWith signs the verified contact up through signup_v2 with the verification token and
// the sign-up client signature core's signUpWithOtp makes (USAGE_TYPE_SIGNUP, by the key the
// token is bound to). Without the token the contact would be stored unproven.
async function signUpWith(email, verificationToken, device) {
  const body = { userEmail: email, apiKeys: [], authenticators: [], oauthProviders: [], verificationToken };
  const { message } = getClientSignatureMessageForSignup({ verificationToken, email, apiKeys: [], authenticators: [], oauthProviders: [] });
  const signature = await signWithApiKey({ content: message, publicKey: device.publicKey, privateKey: device.privateKey });
  return ok("signup_v2", { ...body, clientSignature: { publicKey: device.publicKey, scheme: "CLIENT_SIGNATURE_SCHEME_API_P256", message, signature } });
}

test("wallet_kit_config reports the configuration; refusals are clear", async () => {
  // The SDK's utils send it with no body at all.
  const cfg = await ok("wallet_kit_config");
  assert.deepEqual(cfg.enabledProviders, ["email", "google", "passkey"]);
  assert.equal(cfg.sessionExpirationSeconds, "1200");
  assert.equal(cfg.organizationId, lk.creds.organizationId);
  assert.equal(cfg.oauthClientIds.google, "e2e-google-client");
  assert.equal(cfg.otpLength, "8");

  let r = await proxy("wallet_kit_config", {}, { origin: "https://evil.example" });
  assert.equal(r.status, 403);
  assert.equal(r.body.details[0].turnkeyErrorCode, "ORIGIN_NOT_ALLOWED");
  r = await proxy("wallet_kit_config", {}, { config: "00000000-0000-4000-8000-000000000000" });
  assert.equal(r.status, 404);
  assert.equal(r.body.details[0].turnkeyErrorCode, "AUTH_PROXY_CONFIG_NOT_FOUND");
  r = await proxy("wallet_kit_config", {}, { config: null });
  assert.equal(r.status, 400);
  assert.equal(r.body.details[0].turnkeyErrorCode, "AUTH_PROXY_CONFIG_ID_MISSING");

  // A browser's preflight for the SDK's headers.
  const pre = await fetch(`${lk.proxyUrl}/v1/otp_init_v2`, { method: "OPTIONS", headers: { Origin: ORIGIN, "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "content-type,x-auth-proxy-config-id" } });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers.get("access-control-allow-origin"), ORIGIN);
  assert.match(pre.headers.get("access-control-allow-headers").toLowerCase(), /x-auth-proxy-config-id/);
});

test("otp_init → e-mail over SMTP → otp_verify → signup with a wallet → otp_login → session → whoami", async () => {
  const email = "alice@example.com";
  let seen = smtp.messages.length;
  const init = await ok("otp_init", { otpType: "OTP_TYPE_EMAIL", contact: email });
  const mail = await smtp.next(email, seen);
  assert.match(mail.data, /E2E Wallet/);
  const code = codeOf(mail);
  assert.equal(code.length, 8);

  // The spec's spellings: public_key on verify, a hex client_signature over the token on login.
  const device = generateP256KeyPair();
  const { verificationToken } = await ok("otp_verify", { otpId: init.otpId, otpCode: code, public_key: device.publicKey });
  assert.equal(tokenClaims(verificationToken).contact, email);

  // Nobody has this e-mail yet: sign up, with a wallet in the spec's {path, curve} shape.
  assert.deepEqual(await ok("account", { filterType: "EMAIL", filterValue: email, verificationToken }), {});
  // The sign-up carries the token (a contact is only ever stored as proven with one) and the
  // spec's hex client_signature over it by the device key the token is bound to.
  const signupSignature = await signWithApiKey({ content: verificationToken, publicKey: device.publicKey, privateKey: device.privateKey });
  const signup = await ok("signup", { userEmail: email, userName: "alice", apiKeys: [], authenticators: [], oauthProviders: [],
    verificationToken, client_signature: signupSignature, wallet: { path: "m/44'/501'/0'/0'", curve: "CURVE_TYPE_ED25519" } });
  assert.ok(signup.organizationId && signup.userId && signup.wallet.walletId);
  assert.equal(signup.wallet.addresses.length, 1);
  const { organizationId } = await ok("account", { filterType: "EMAIL", filterValue: email });
  assert.equal(organizationId, signup.organizationId);

  const sessionKey = generateP256KeyPair();
  const clientSignature = await signWithApiKey({ content: verificationToken, publicKey: device.publicKey, privateKey: device.privateKey });
  const { session } = await ok("otp_login", { verificationToken, public_key: sessionKey.publicKey, client_signature: clientSignature });
  assert.equal(await verifySessionJwtSignature(session, lk.keys.notarizerPublicKey), true);
  const claims = JSON.parse(Buffer.from(session.split(".")[1], "base64url").toString());
  assert.equal(claims.organization_id, signup.organizationId);
  assert.equal(claims.user_id, signup.userId);
  assert.ok(Math.abs(claims.exp - Date.now() / 1000 - 1200) < 60, "the configured session lifetime");

  const me = await lk.client({ privateKey: sessionKey.privateKey, publicKey: sessionKey.publicKey }, signup.organizationId).getWhoami({});
  assert.equal(me.organizationId, signup.organizationId);
  assert.equal(me.userId, signup.userId);
});

test("the v2 endpoints: the code encrypted to the target bundle, the clientSignature object", async () => {
  const email = "bob@example.com";
  const seen = smtp.messages.length;
  const init = await ok("otp_init_v2", { otpType: "OTP_TYPE_EMAIL", contact: email });
  assert.ok(init.otpEncryptionTargetBundle);
  const code = codeOf(await smtp.next(email, seen));
  const device = generateP256KeyPair();
  const encryptedOtpBundle = await encryptOtpCodeToBundle(code, init.otpEncryptionTargetBundle, device.publicKey, lk.keys.otpPublicKey);
  const { verificationToken } = await ok("otp_verify_v2", { otpId: init.otpId, encryptedOtpBundle });
  const signup = await signUpWith(email, verificationToken, device);

  const sessionKey = generateP256KeyPair();
  const message = JSON.stringify({ login: { publicKey: sessionKey.publicKey }, tokenId: tokenClaims(verificationToken).id, type: "USAGE_TYPE_LOGIN" });
  const signature = await signWithApiKey({ content: message, publicKey: device.publicKey, privateKey: device.privateKey });
  const { session } = await ok("otp_login_v2", { verificationToken, publicKey: sessionKey.publicKey, organizationId: signup.organizationId,
    clientSignature: { publicKey: device.publicKey, scheme: "CLIENT_SIGNATURE_SCHEME_API_P256", message, signature } });
  assert.equal(await verifySessionJwtSignature(session, lk.keys.notarizerPublicKey), true);
  const me = await lk.client({ privateKey: sessionKey.privateKey, publicKey: sessionKey.publicKey }, signup.organizationId).getWhoami({});
  assert.equal(me.userId, signup.userId);
});

// What @turnkey/core 2.8's loginWithOtp does after otp_verify: stamp_login on the public API,
// naming the parent organization, stamped by core's own AttestedStamper with the verification
// token attesting the key (docs/wire.md §2b). The token logs in once.
test("stamp_login with X-Stamp-Attested (core's AttestedStamper): a session for the sub-organization, once", async () => {
  const email = "dave@example.com";
  const seen = smtp.messages.length;
  const init = await ok("otp_init_v2", { otpType: "OTP_TYPE_EMAIL", contact: email });
  const code = codeOf(await smtp.next(email, seen));
  const device = generateP256KeyPair();
  const encryptedOtpBundle = await encryptOtpCodeToBundle(code, init.otpEncryptionTargetBundle, device.publicKey, lk.keys.otpPublicKey);
  const { verificationToken } = await ok("otp_verify_v2", { otpId: init.otpId, encryptedOtpBundle });
  const signup = await signUpWith(email, verificationToken, device);

  const stamper = new AttestedStamper({ sign: (payload, _format, publicKey) => {
    assert.equal(publicKey, device.publicKey);
    return signWithApiKey({ content: payload, publicKey: device.publicKey, privateKey: device.privateKey });
  } });
  stamper.configure({ attestedIdentity: verificationToken, publicKey: device.publicKey, scheme: AttestedScheme.P256_VERIFICATION_TOKEN });
  const login = async () => {
    const body = JSON.stringify({ type: "ACTIVITY_TYPE_STAMP_LOGIN", timestampMs: String(Date.now()), organizationId: lk.creds.organizationId,
      parameters: { publicKey: device.publicKey, expirationSeconds: "900", invalidateExisting: true } });
    const { stampHeaderName, stampHeaderValue } = await stamper.stamp(body);
    const resp = await fetch(`${lk.url}/public/v1/submit/stamp_login`, { method: "POST", headers: { [stampHeaderName]: stampHeaderValue }, body });
    return { status: resp.status, body: await resp.json() };
  };
  const r = await login();
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.activity.status, "ACTIVITY_STATUS_COMPLETED");
  assert.equal(r.body.activity.organizationId, signup.organizationId);
  const { session } = r.body.activity.result.stampLoginResult;
  assert.equal(await verifySessionJwtSignature(session, lk.keys.notarizerPublicKey), true);
  assert.equal(JSON.parse(Buffer.from(session.split(".")[1], "base64url").toString()).organization_id, signup.organizationId);
  const me = await lk.client({ privateKey: device.privateKey, publicKey: device.publicKey }, signup.organizationId).getWhoami({});
  assert.equal(me.userId, signup.userId);

  const again = await login();
  assert.equal(again.status, 401);
  assert.match(again.body.message, /already used/);
});

// email_auth through @turnkey/sdk-server: the credential travels only in the e-mail (over SMTP,
// in the magic link), @turnkey/crypto's decryptCredentialBundle opens it, and it stamps as the user.
test("email_auth: the credential bundle arrives by e-mail and stamps as the user", async () => {
  const email = "erin@example.com";
  // The organization's own backend creates the sub-organization (it vouches for the address),
  // as Turnkey's e-mail auth examples do.
  const created = await lk.client().createSubOrganization({ subOrganizationName: "erin", rootQuorumThreshold: 1,
    rootUsers: [{ userName: "erin", userEmail: email, apiKeys: [], authenticators: [], oauthProviders: [] }] });
  const signup = { organizationId: created.subOrganizationId, userId: created.rootUserIds[0] };
  const target = generateP256KeyPair();
  const seen = smtp.messages.length;
  const r = await lk.client(undefined, signup.organizationId).emailAuth({ email, targetPublicKey: target.publicKeyUncompressed,
    emailCustomization: { appName: "E2E Wallet", magicLinkTemplate: "https://wallet.example/auth?bundle=%s" } });
  assert.equal(r.userId, signup.userId);
  const mail = await smtp.next(email, seen);
  // The text part is quoted-printable: undo soft line breaks and =XX escapes.
  const text = mail.data.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));
  const m = text.match(/https:\/\/wallet\.example\/auth\?bundle=([A-Za-z0-9%]+)/);
  assert.ok(m, `no magic link in ${mail.data}`);
  const privateKey = decryptCredentialBundle(decodeURIComponent(m[1]), target.privateKey);
  const publicKey = Buffer.from(getPublicKey(privateKey, true)).toString("hex");
  const me = await lk.client({ privateKey, publicKey }, signup.organizationId).getWhoami({});
  assert.equal(me.userId, signup.userId);
  assert.equal(JSON.stringify(r).includes(m[1]), false, "the bundle must not be in the activity");
});

test("wrong codes burn the code after three tries", async () => {
  const email = "carol@example.com";
  const seen = smtp.messages.length;
  const init = await ok("otp_init", { otpType: "OTP_TYPE_EMAIL", contact: email });
  const code = codeOf(await smtp.next(email, seen));
  for (const wrong of ["00000000", "00000001", "00000002"]) {
    const r = await proxy("otp_verify", { otpId: init.otpId, otpCode: wrong });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.match(r.body.message, /Invalid OTP code/);
  }
  const r = await proxy("otp_verify", { otpId: init.otpId, otpCode: code });
  assert.notEqual(r.status, 200, "the right code after three wrong ones must fail");
});

// @turnkey/core's own proxy client (the TurnkeySDKClientBase its OTP flows call), with the token
// usage messages core builds: what a frontend on core does, short of core's encryption with
// Turnkey's pinned key (docs/wire.md §9.1) and the stamp_login it ends with.
test("@turnkey/core's proxy client: otp_init_v2, otp_verify_v2, account, signup_v2 with the token, otp_login_v2", async () => {
  // Node sends no Origin header; a configuration allowing every origin serves it.
  lk.proxy("update", ["--allowed-origins", "*"]);
  try {
    const http = new TurnkeyClient({ apiBaseUrl: lk.url, authProxyUrl: lk.proxyUrl, authProxyConfigId: configId, organizationId: lk.creds.organizationId }).createHttpClient();
    const cfg = await getAuthProxyConfig(configId, lk.proxyUrl);
    assert.equal(cfg.organizationId, lk.creds.organizationId);

    const email = "dana@example.com";
    const seen = smtp.messages.length;
    const init = await http.proxyInitOtpV2({ otpType: "OTP_TYPE_EMAIL", contact: email });
    const code = codeOf(await smtp.next(email, seen));
    const device = generateP256KeyPair();
    const encryptedOtpBundle = await encryptOtpCodeToBundle(code, init.otpEncryptionTargetBundle, device.publicKey, lk.keys.otpPublicKey);
    const { verificationToken } = await http.proxyVerifyOtpV2({ otpId: init.otpId, encryptedOtpBundle });
    assert.equal((await http.proxyGetAccount({ filterType: "EMAIL", filterValue: email, verificationToken })).organizationId, undefined);

    // core's signUpWithOtp: the sign-up token usage, signed by the token's key.
    const { message: signupMessage, publicKey: signupKey } = getClientSignatureMessageForSignup({ verificationToken, email });
    assert.equal(signupKey, device.publicKey);
    const signup = await http.proxySignupV2({ userEmail: email, verificationToken, apiKeys: [], authenticators: [], oauthProviders: [],
      clientSignature: { publicKey: signupKey, scheme: "CLIENT_SIGNATURE_SCHEME_API_P256", message: signupMessage,
        signature: await signWithApiKey({ content: signupMessage, publicKey: device.publicKey, privateKey: device.privateKey }) } });
    assert.equal((await http.proxyGetAccount({ filterType: "EMAIL", filterValue: email, verificationToken })).organizationId, signup.organizationId);

    const sessionKey = generateP256KeyPair();
    const { message: loginMessage } = getClientSignatureMessageForLogin({ verificationToken, sessionPublicKey: sessionKey.publicKey });
    const { session } = await http.proxyOtpLoginV2({ verificationToken, publicKey: sessionKey.publicKey, organizationId: signup.organizationId,
      clientSignature: { publicKey: device.publicKey, scheme: "CLIENT_SIGNATURE_SCHEME_API_P256", message: loginMessage,
        signature: await signWithApiKey({ content: loginMessage, publicKey: device.publicKey, privateKey: device.privateKey }) } });
    assert.equal(await verifySessionJwtSignature(session, lk.keys.notarizerPublicKey), true);
    const me = await lk.client({ privateKey: sessionKey.privateKey, publicKey: sessionKey.publicKey }, signup.organizationId).getWhoami({});
    assert.equal(me.userId, signup.userId);

    // The SDK surfaces the proxy's refusals as TurnkeyRequestError with the message.
    await assert.rejects(http.proxyOtpLoginV2({ verificationToken, publicKey: sessionKey.publicKey, organizationId: signup.organizationId,
      clientSignature: { publicKey: device.publicKey, scheme: "CLIENT_SIGNATURE_SCHEME_API_P256", message: loginMessage, signature: "00" } }), /signature|already used/);
  } finally {
    lk.proxy("update", ["--allowed-origins", ORIGIN]);
  }
});

test("changes made with the CLI apply to the running server", async () => {
  lk.proxy("update", ["--allowed-origins", "https://other.example"]);
  assert.equal((await proxy("wallet_kit_config", {})).status, 403);
  assert.equal((await proxy("wallet_kit_config", {}, { origin: "https://other.example" })).status, 200);
  lk.proxy("disable");
  const r = await proxy("wallet_kit_config", {}, { origin: "https://other.example" });
  assert.equal(r.status, 403);
  assert.equal(r.body.details[0].turnkeyErrorCode, "AUTH_PROXY_DISABLED");
  const shown = lk.proxy("show");
  assert.equal(shown.configId, configId);
  assert.equal(shown.settings.enabled, false);
  assert.equal(lk.proxy("enable").configId, configId);
  lk.proxy("update", ["--allowed-origins", ORIGIN]);
  assert.equal((await proxy("wallet_kit_config", {})).status, 200);
});

test("no one-time code appears in the logs or the database", () => {
  assert.ok(codes.length >= 3);
  const all = lk.allBytes();
  for (const c of codes) assert.equal(all.includes(Buffer.from(c)), false, `code ${c} found in the logs or the database`);
});

// The account pre-hijack a probe found: an attacker signs the victim's e-mail address up with
// the attacker's own key and no verification token. The address is stored unproven, so when
// the victim later proves it with a one-time code, neither /v1/account nor otp_login resolves
// to the attacker's sub-organization: the victim signs up into their own, and the attacker's
// key cannot sign with the victim's wallet.
test("pre-hijack: an address signed up without a verification token never resolves a look-up or a login", async () => {
  const email = "victim@example.com";
  const attacker = generateP256KeyPair();
  const planted = await ok("signup", { userEmail: email, userName: "victim", authenticators: [], oauthProviders: [],
    apiKeys: [{ apiKeyName: "mine", publicKey: attacker.publicKey, curveType: "API_KEY_CURVE_P256" }] });
  assert.ok(planted.organizationId);
  assert.deepEqual(await ok("account", { filterType: "EMAIL", filterValue: email }), {});

  const seen = smtp.messages.length;
  const init = await ok("otp_init", { otpType: "OTP_TYPE_EMAIL", contact: email });
  const code = codeOf(await smtp.next(email, seen));
  const device = generateP256KeyPair();
  const { verificationToken } = await ok("otp_verify", { otpId: init.otpId, otpCode: code, public_key: device.publicKey });
  assert.deepEqual(await ok("account", { filterType: "EMAIL", filterValue: email, verificationToken }), {});
  const sessionKey = generateP256KeyPair();
  const signature = await signWithApiKey({ content: verificationToken, publicKey: device.publicKey, privateKey: device.privateKey });
  const refused = await proxy("otp_login", { verificationToken, public_key: sessionKey.publicKey, client_signature: signature });
  assert.equal(refused.status, 404, JSON.stringify(refused.body));

  const mine = await ok("signup", { userEmail: email, userName: "victim", apiKeys: [], authenticators: [], oauthProviders: [],
    verificationToken, client_signature: signature });
  assert.notEqual(mine.organizationId, planted.organizationId);
  assert.equal((await ok("account", { filterType: "EMAIL", filterValue: email })).organizationId, mine.organizationId);
  const { session } = await ok("otp_login", { verificationToken, public_key: sessionKey.publicKey, client_signature: signature });
  assert.equal(JSON.parse(Buffer.from(session.split(".")[1], "base64url").toString()).organization_id, mine.organizationId);

  // A sign-up naming no credential and no proven contact is refused.
  const empty = await proxy("signup", {});
  assert.equal(empty.status, 400, JSON.stringify(empty.body));
  assert.match(empty.body.message, /credential/);
});
