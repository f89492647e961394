// OAuth end to end: a local OIDC issuer (ES256, discovery + JWKS) and a local OAuth 2.0
// provider started by this file, a real `latchkey serve --dev` trusting the issuer and pointing
// Discord's endpoints at the provider, its auth proxy enabled with the CLI; sessions checked with
// @turnkey/crypto, the attested OIDC login made by @turnkey/core's own AttestedStamper.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import crypto from "node:crypto";
import { generateP256KeyPair, verifySessionJwtSignature, encryptOauth2ClientSecret } from "@turnkey/crypto";
import { signWithApiKey } from "@turnkey/api-key-stamper";
import { AttestedStamper, AttestedScheme } from "@turnkey/core/dist/__stampers__/attested/base.mjs";
import { startLatchkey } from "./lib.mjs";

const ORIGIN = "http://localhost:3000";
const b64url = (b) => Buffer.from(b).toString("base64url");
let lk, issuer, provider, configId;

// An OIDC issuer: discovery, JWKS and ES256 id_tokens.
function startIssuer() {
  const { privateKey, publicKey } = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
  const jwk = { ...publicKey.export({ format: "jwk" }), kid: "e2e-1", alg: "ES256", use: "sig" };
  const server = http.createServer((req, res) => {
    res.setHeader("Content-Type", "application/json");
    if (req.url === "/.well-known/openid-configuration") res.end(JSON.stringify({ issuer: iss.url, jwks_uri: `${iss.url}/jwks` }));
    else if (req.url === "/jwks") res.end(JSON.stringify({ keys: [jwk] }));
    else { res.statusCode = 404; res.end("{}"); }
  });
  const iss = {
    mint(claims) {
      const now = Math.floor(Date.now() / 1000);
      const head = b64url(JSON.stringify({ alg: "ES256", typ: "JWT", kid: "e2e-1" }));
      const body = b64url(JSON.stringify({ iss: iss.url, iat: now, exp: now + 600, ...claims }));
      const sig = crypto.sign("sha256", Buffer.from(`${head}.${body}`), { key: privateKey, dsaEncoding: "ieee-p1363" });
      return `${head}.${body}.${b64url(sig)}`;
    },
    close: () => new Promise((r) => server.close(r)),
  };
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => { iss.url = `http://127.0.0.1:${server.address().port}`; resolve(iss); }));
}

// An OAuth 2.0 provider in Discord's shape: PKCE code exchange, then /users/@me.
function startProvider() {
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      res.setHeader("Content-Type", "application/json");
      if (req.url === "/token") {
        const f = new URLSearchParams(body);
        const ok = f.get("code") === "code-1" && f.get("code_verifier") === "verifier-1" && f.get("client_secret") === "discord-secret";
        res.statusCode = ok ? 200 : 400;
        res.end(ok ? JSON.stringify({ access_token: "at-1", token_type: "Bearer" }) : JSON.stringify({ error: "invalid_grant" }));
      } else if (req.url === "/me" && req.headers.authorization === "Bearer at-1") {
        res.end(JSON.stringify({ id: "4242", username: "zoe", email: "zoe@example.com", verified: true }));
      } else { res.statusCode = 401; res.end("{}"); }
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) })));
}

async function proxy(op, body) {
  const resp = await fetch(`${lk.proxyUrl}/v1/${op}`, { method: "POST", headers: { "Content-Type": "application/json", Origin: ORIGIN,
    "X-Auth-Proxy-Config-ID": configId }, body: JSON.stringify(body) });
  const out = await resp.json();
  assert.equal(resp.status, 200, `${op}: ${JSON.stringify(out)}`);
  return out;
}

const nonceFor = (publicKey) => crypto.createHash("sha256").update(publicKey).digest("hex");
const claimsOf = (jwt) => JSON.parse(Buffer.from(jwt.split(".")[1], "base64url").toString());

before(async () => {
  issuer = await startIssuer();
  provider = await startProvider();
  lk = await startLatchkey(["--oidc-trusted-issuer", issuer.url, "--oauth2-discord-token-url", `${provider.url}/token`,
    "--oauth2-discord-userinfo-url", `${provider.url}/me`]);
  ({ configId } = lk.proxy("enable", ["--allowed-origins", ORIGIN, "--enabled-providers", "google,discord"]));
});

after(async () => {
  assert.equal(await lk.stop(), 0);
  await issuer.close();
  await provider.close();
});

test("OIDC through the proxy: account look-up, sign-up with the token, oauth_login", async () => {
  const device = generateP256KeyPair();
  const token = issuer.mint({ sub: "google-1", aud: "web-client", email: "yan@example.com", nonce: nonceFor(device.publicKey) });
  assert.deepEqual(await proxy("account", { filterType: "OIDC_TOKEN", filterValue: token }), {});
  const signup = await proxy("signup", { userName: "yan", apiKeys: [], authenticators: [],
    oauthProviders: [{ providerName: "Google", oidcToken: token }] });
  assert.equal((await proxy("account", { filterType: "OIDC_TOKEN", filterValue: token })).organizationId, signup.organizationId);
  const { session } = await proxy("oauth_login", { oidcToken: token, publicKey: device.publicKey });
  assert.equal(await verifySessionJwtSignature(session, lk.keys.notarizerPublicKey), true);
  assert.equal(claimsOf(session).organization_id, signup.organizationId);
  const me = await lk.client({ privateKey: device.privateKey, publicKey: device.publicKey }, signup.organizationId).getWhoami({});
  assert.equal(me.userId, signup.userId);

  // A token whose nonce is another key's is refused.
  const other = generateP256KeyPair();
  const resp = await fetch(`${lk.proxyUrl}/v1/oauth_login`, { method: "POST", headers: { Origin: ORIGIN, "X-Auth-Proxy-Config-ID": configId },
    body: JSON.stringify({ oidcToken: token, publicKey: other.publicKey, organizationId: signup.organizationId }) });
  assert.equal(resp.status, 400);
  assert.match((await resp.json()).message, /nonce/);
});

// core 2.8's loginWithOauth: stamp_login on the public API, naming the parent, stamped by core's
// AttestedStamper with the OIDC token attesting the key.
test("stamp_login with an attested OIDC stamp (core's AttestedStamper)", async () => {
  const device = generateP256KeyPair();
  const token = issuer.mint({ sub: "google-2", aud: "web-client", nonce: nonceFor(device.publicKey) });
  const signup = await proxy("signup", { userName: "uma", apiKeys: [], authenticators: [], oauthProviders: [{ providerName: "Google", oidcToken: token }] });
  const stamper = new AttestedStamper({ sign: (payload) => signWithApiKey({ content: payload, publicKey: device.publicKey, privateKey: device.privateKey }) });
  stamper.configure({ attestedIdentity: token, publicKey: device.publicKey, scheme: AttestedScheme.P256_OIDC });
  const body = JSON.stringify({ type: "ACTIVITY_TYPE_STAMP_LOGIN", timestampMs: String(Date.now()), organizationId: lk.creds.organizationId,
    parameters: { publicKey: device.publicKey, expirationSeconds: "900" } });
  const { stampHeaderName, stampHeaderValue } = await stamper.stamp(body);
  const resp = await fetch(`${lk.url}/public/v1/submit/stamp_login`, { method: "POST", headers: { [stampHeaderName]: stampHeaderValue }, body });
  const out = await resp.json();
  assert.equal(resp.status, 200, JSON.stringify(out));
  const { session } = out.activity.result.stampLoginResult;
  assert.equal(await verifySessionJwtSignature(session, lk.keys.notarizerPublicKey), true);
  assert.equal(claimsOf(session).organization_id, signup.organizationId);
});

test("Discord through the proxy: the code exchanged with PKCE, Latchkey's own id_token, sign-up and login", async () => {
  // The organization's Discord client, its secret encrypted to Latchkey's client-secrets key.
  const encryptedClientSecret = await encryptOauth2ClientSecret("discord-secret", lk.keys.clientSecretsPublicKey);
  await lk.client().createOauth2Credential({ provider: "OAUTH2_PROVIDER_DISCORD", clientId: "discord-app", encryptedClientSecret });
  assert.equal(lk.allBytes().includes("discord-secret"), false, "the client secret is in the clear");

  const device = generateP256KeyPair();
  const { oidcToken } = await proxy("oauth2_authenticate", { provider: "OAUTH2_PROVIDER_DISCORD", authCode: "code-1", redirectUri: "https://app.example/cb",
    codeVerifier: "verifier-1", nonce: nonceFor(device.publicKey), clientId: "discord-app" });
  const claims = claimsOf(oidcToken);
  assert.equal(claims.sub, "discord:4242");
  assert.equal(claims.aud, "discord-app");
  assert.equal(claims.email, "zoe@example.com");

  // The token verifies against Latchkey's own discovery document and JWKS.
  const disc = await (await fetch(`${lk.url}/oidc/.well-known/openid-configuration`)).json();
  assert.equal(disc.issuer, claims.iss);
  const jwks = await (await fetch(`${lk.url}/oidc/.well-known/jwks.json`)).json();
  const [h, p, s] = oidcToken.split(".");
  const key = crypto.createPublicKey({ key: jwks.keys.find((k) => k.kid === JSON.parse(Buffer.from(h, "base64url")).kid), format: "jwk" });
  assert.equal(crypto.verify("sha256", Buffer.from(`${h}.${p}`), { key, dsaEncoding: "ieee-p1363" }, Buffer.from(s, "base64url")), true);

  const signup = await proxy("signup", { userName: "zoe", apiKeys: [], authenticators: [], oauthProviders: [{ providerName: "Discord", oidcToken }] });
  const { session } = await proxy("oauth_login", { oidcToken, publicKey: device.publicKey });
  assert.equal(claimsOf(session).organization_id, signup.organizationId);
});
