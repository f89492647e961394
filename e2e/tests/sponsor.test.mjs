// Sponsored sends end to end (issue 27, EVM): geth --dev (Prague: EIP-7702 active), Latchkey's
// gas-station delegate deployed on it (gethdev.mjs), and a real `latchkey serve` with --chain-rpc
// and --gas-station naming the delegate and a price, its paymaster funded by the dev account and the
// organization enabled with upsert_gas_usage_config. Everything is sent with the published
// @turnkey/sdk-server, the body @turnkey/core's ethSendTransaction builds (the transaction spread
// into the parameters), and followed as @turnkey/core's pollTransactionStatus does (until INCLUDED
// or FAILED). Last, two Latchkey processes over one PostgreSQL send for many accounts at once.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeFunctionData, parseAbi, parseEther, concat } from "viem";
import { privateKeyToAccount, generatePrivateKey } from "viem/accounts";
import { ApiKeyStamper } from "@turnkey/api-key-stamper";
import { Turnkey } from "@turnkey/sdk-server";
import { startLatchkey, latchkeyBinary, freePort } from "./lib.mjs";
import { startChain, deployDelegate, TOKEN_BYTECODE, viemClients } from "./gethdev.mjs";

const CAIP2 = "eip155:11155111";
const erc20 = parseAbi(["function transfer(address,uint256) returns (bool)", "function balanceOf(address) view returns (uint256)"]);
const ACCOUNT = { curve: "CURVE_SECP256K1", pathFormat: "PATH_FORMAT_BIP32", path: "m/44'/60'/0'/0/0", addressFormat: "ADDRESS_FORMAT_ETHEREUM" };
const recipient = privateKeyToAccount(generatePrivateKey()).address;

let chain, pub, dev, token, delegate, gasFile, lk, client, paymaster;

before(async () => {
  chain = await startChain();
  ({ pub, dev } = viemClients(chain, { pollingInterval: 100 }));
  token = (await pub.waitForTransactionReceipt({ hash: await dev.deployContract({ abi: [], bytecode: TOKEN_BYTECODE }) })).contractAddress;
  delegate = await deployDelegate(dev, pub);
  gasFile = join(mkdtempSync(join(tmpdir(), "latchkey-gas-")), "gas-station.json");
  writeFileSync(gasFile, JSON.stringify({ evm: { [CAIP2]: { delegate, maxGasPerTransaction: 3000000, maxFeePerGasWei: "1000000000000", usdPerCoin: "3000" } } }));
  lk = await startLatchkey(["--chain-rpc", `${CAIP2}=${chain.rpcUrl}`, "--gas-station", gasFile]);
  client = lk.client();
  paymaster = gasStationShow(["--dev", "--data-dir", lk.dataDir]).evmPaymaster;
  assert.match(lk.logs(), new RegExp(paymaster, "i"), "serve logs the paymaster at start");
  await fund(paymaster, parseEther("100"));
  await upsertGasUsage(lk.url, lk.creds, { enabled: true, orgWindowLimitUsd: "1000", subOrgWindowLimitUsd: "100", windowDurationMinutes: "60" });
});

after(async () => {
  if (lk) assert.equal(await lk.stop(), 0);
  chain?.stop();
});

function gasStationShow(flags) {
  return JSON.parse(execFileSync(latchkeyBinary(), ["gas-station", "show", ...flags], { encoding: "utf8" }));
}

async function fund(to, value) {
  const r = await pub.waitForTransactionReceipt({ hash: await dev.sendTransaction({ to, value }) });
  assert.equal(r.status, "success");
}

async function giveTokens(to, amount) {
  const hash = await dev.writeContract({ address: token, abi: erc20, functionName: "transfer", args: [to, amount] });
  assert.equal((await pub.waitForTransactionReceipt({ hash })).status, "success");
}

// upsert_gas_usage_config is not in the pinned SDKs' clients: a stamped POST of the same shape.
async function upsertGasUsage(url, creds, parameters) {
  const body = JSON.stringify({ type: "ACTIVITY_TYPE_UPSERT_GAS_USAGE_CONFIG", timestampMs: String(Date.now()), organizationId: creds.organizationId, parameters });
  const stamp = await new ApiKeyStamper({ apiPublicKey: creds.apiPublicKey, apiPrivateKey: creds.apiPrivateKey }).stamp(body);
  const res = await fetch(url + "/public/v1/submit/upsert_gas_usage_config", { method: "POST", headers: { "content-type": "application/json", [stamp.stampHeaderName]: stamp.stampHeaderValue }, body });
  const out = await res.json();
  assert.equal(res.status, 200, JSON.stringify(out));
  assert.equal(out.activity.status, "ACTIVITY_STATUS_COMPLETED", JSON.stringify(out));
}

const transfer = (to, amount) => ({ to: token, value: "0", data: encodeFunctionData({ abi: erc20, functionName: "transfer", args: [to, amount] }) });
const balanceOf = (a) => pub.readContract({ address: token, abi: erc20, functionName: "balanceOf", args: [a] });

async function newAccount(c = client) {
  const { addresses: [address] } = await c.createWallet({ walletName: `sponsored ${Math.random()}`, accounts: [ACCOUNT] });
  return address;
}

// As @turnkey/core's pollTransactionStatus: until INCLUDED (resolve) or FAILED (reject with the
// status's error message); every 100 ms here rather than 500.
async function poll(sendTransactionStatusId, c = client) {
  for (let i = 0; i < 600; i++) {
    const resp = await c.getSendTransactionStatus({ sendTransactionStatusId });
    if (resp.txStatus === "FAILED" || resp.txStatus === "CANCELLED") throw Object.assign(new Error(resp.error?.message || `Transaction ${resp.txStatus}`), { resp });
    if (resp.txStatus === "COMPLETED" || resp.txStatus === "INCLUDED") return resp;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("polling timed out");
}

// @turnkey/core's ethSendTransaction: the transaction's fields are the parameters.
async function send(transaction, c = client) {
  const { sendTransactionStatusId } = await c.ethSendTransaction(transaction);
  assert.ok(sendTransactionStatusId);
  return sendTransactionStatusId;
}

const gasStationNonce = async (address, c = client) => (await c.getNonces({ address, caip2: CAIP2, gasStationNonce: true })).gasStationNonce;

test("a zero-balance account sends a sponsored ERC-20 transfer; its second send carries no authorization; a replayed nonce is refused", async (t) => {
  const t0 = Date.now();
  const account = await newAccount();
  await giveTokens(account, 5000n);
  const before = await pub.getBalance({ address: paymaster });
  t.diagnostic(`setup ${Date.now() - t0} ms`);
  // Turnkey's example flow: get_nonces → sponsored send → poll.
  assert.equal(await gasStationNonce(account), "0");
  const first = await poll(await send({ from: account, caip2: CAIP2, sponsor: true, gasStationNonce: "0", calls: [transfer(recipient, 1200n)] }));
  t.diagnostic(`first sponsored send included after ${Date.now() - t0} ms`);
  const receipt = await pub.getTransactionReceipt({ hash: first.eth.txHash });
  assert.equal(receipt.status, "success");
  assert.equal(receipt.type, "eip7702", "the first send carries the authorization");
  assert.equal(receipt.from.toLowerCase(), paymaster.toLowerCase());
  assert.equal(receipt.to.toLowerCase(), account.toLowerCase());
  t.diagnostic(`gas: authorization + one ERC-20 transfer ${receipt.gasUsed}`);
  assert.equal(await balanceOf(recipient), 1200n);
  assert.equal(await balanceOf(account), 3800n);
  assert.equal(await pub.getBalance({ address: account }), 0n, "the account holds no ETH and paid none");
  assert.ok(await pub.getBalance({ address: paymaster }) < before, "the paymaster paid");
  assert.equal(await pub.getCode({ address: account }), concat(["0xef0100", delegate]).toLowerCase());
  assert.equal(await gasStationNonce(account), "1");
  // The second: no authorization (type 2), nonce 1 auto-fetched.
  const second = await poll(await send({ from: account, caip2: CAIP2, sponsor: true, calls: [transfer(recipient, 100n)] }));
  const r2 = await pub.getTransactionReceipt({ hash: second.eth.txHash });
  assert.equal(r2.type, "eip1559");
  assert.equal(await balanceOf(recipient), 1300n);
  assert.equal(await gasStationNonce(account), "2");
  // The same nonce again: refused before anything is sent.
  await assert.rejects(send({ from: account, caip2: CAIP2, sponsor: true, gasStationNonce: "1", calls: [transfer(recipient, 1n)] }), /gasStationNonce/);
  assert.equal(await balanceOf(recipient), 1300n);
});

test("a batch, sponsored and not; a reverting call fails the whole batch", async () => {
  const account = await newAccount();
  await giveTokens(account, 1000n);
  const to = privateKeyToAccount(generatePrivateKey()).address;
  const sponsored = await poll(await send({ from: account, caip2: CAIP2, sponsor: true, calls: [transfer(to, 10n), transfer(to, 20n), transfer(recipient, 1n)] }));
  assert.equal((await pub.getTransactionReceipt({ hash: sponsored.eth.txHash })).from.toLowerCase(), paymaster.toLowerCase());
  assert.equal(await balanceOf(to), 30n);
  // Not sponsored: the account pays its own transaction to itself.
  await fund(account, parseEther("1"));
  const own = await poll(await send({ from: account, caip2: CAIP2, sponsor: false, calls: [transfer(to, 1n), { to, value: "5", data: "0x" }] }));
  const ownReceipt = await pub.getTransactionReceipt({ hash: own.eth.txHash });
  assert.equal(ownReceipt.from.toLowerCase(), account.toLowerCase());
  assert.equal(ownReceipt.to.toLowerCase(), account.toLowerCase());
  assert.equal(await balanceOf(to), 31n);
  assert.equal(await pub.getBalance({ address: to }), 5n);
  // A reverting call: refused before sending when the node cannot run it…
  await assert.rejects(send({ from: account, caip2: CAIP2, sponsor: true, calls: [transfer(to, 1n), transfer(to, 10n ** 9n)] }), /calls\[1\]/);
  // …and, sent anyway (a gas limit given: nothing estimated), mined reverted: nothing moved.
  const nonce = await gasStationNonce(account);
  await assert.rejects(poll(await send({ from: account, caip2: CAIP2, sponsor: true, gasLimit: "600000", calls: [transfer(to, 1n), transfer(to, 10n ** 9n)] })), /reverted/);
  assert.equal(await balanceOf(to), 31n);
  // The nonce is free again once the follower has recorded the failure.
  let after = await gasStationNonce(account);
  for (let i = 0; i < 100 && after !== nonce; i++) {
    await new Promise((r) => setTimeout(r, 100));
    after = await gasStationNonce(account);
  }
  assert.equal(after, nonce, "the reverted batch did not consume its nonce");
  await poll(await send({ from: account, caip2: CAIP2, sponsor: true, gasStationNonce: nonce, calls: [transfer(to, 2n)] }));
  assert.equal(await balanceOf(to), 33n);
});

test("usage is reported by get_gas_usage and a limit refuses a send", async () => {
  const usage = await client.getGasUsage({});
  assert.ok(Number(usage.usageUsd) > 0, JSON.stringify(usage));
  assert.equal(usage.windowDurationMinutes, 60);
  await upsertGasUsage(lk.url, lk.creds, { orgWindowLimitUsd: usage.usageUsd });
  const account = await newAccount();
  await assert.rejects(send({ from: account, caip2: CAIP2, sponsor: true, calls: [{ to: recipient, value: "0", data: "0x" }] }), /limit/i);
  await upsertGasUsage(lk.url, lk.creds, { orgWindowLimitUsd: "1000" });
});

test("eth_undelegate_7702: the paymaster sends the account's authorization to address 0", async () => {
  const account = await newAccount();
  await poll(await send({ from: account, caip2: CAIP2, sponsor: true, calls: [{ to: recipient, value: "0", data: "0x" }] }));
  assert.equal(await pub.getCode({ address: account }), concat(["0xef0100", delegate]).toLowerCase());
  const { sendTransactionStatusId } = await client.ethUndelegate7702({ from: account, caip2: CAIP2 });
  const done = await poll(sendTransactionStatusId);
  assert.equal((await pub.getTransactionReceipt({ hash: done.eth.txHash })).from.toLowerCase(), paymaster.toLowerCase());
  assert.equal(await pub.getCode({ address: account }), undefined, "no code after undelegation");
  assert.equal(await pub.getBalance({ address: account }), 0n);
});

// Two serve processes over one PostgreSQL database (a schema of its own), the same master key.
async function startPostgresPair(url) {
  const bin = latchkeyBinary();
  const dir = mkdtempSync(join(tmpdir(), "latchkey-pg-"));
  const schema = "lk_e2e_sponsor_" + process.pid;
  execFileSync("psql", [url, "-q", "-v", "ON_ERROR_STOP=1", "-c", `SET client_min_messages = warning; DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`]);
  const db = url + (url.includes("?") ? "&" : "?") + "search_path=" + schema;
  writeFileSync(join(dir, "master.key"), execFileSync("head", ["-c", "32", "/dev/urandom"]).toString("hex") + "\n", { mode: 0o600 });
  const key = JSON.parse(execFileSync(bin, ["keygen", "--name", "ops", "--key-dir", join(dir, "keys"), "--json"], { encoding: "utf8" }));
  const org = JSON.parse(execFileSync(bin, ["init", "--database-url", db, "--master-key-file", join(dir, "master.key"), "--data-dir", join(dir, "init"),
    "--org-name", "Acme", "--user-name", "ops", "--api-public-key", key.publicKey], { encoding: "utf8" }));
  const priv = JSON.parse(readFileSync(join(dir, "keys", "ops.json"), "utf8")).privateKey;
  const creds = { organizationId: org.organizationId, apiPublicKey: key.publicKey, apiPrivateKey: priv };
  const procs = [];
  for (const name of ["a", "b"]) {
    const port = await freePort();
    const proc = spawn(bin, ["serve", "--database-url", db, "--master-key-file", join(dir, "master.key"), "--data-dir", join(dir, name),
      "--api-addr", `127.0.0.1:${port}`, "--proxy-addr", "", "--dashboard-addr", "", "--frames-addr", "",
      "--chain-rpc", `${CAIP2}=${chain.rpcUrl}`, "--gas-station", gasFile], { stdio: ["ignore", "pipe", "pipe"] });
    let logs = "";
    proc.stdout.on("data", (d) => (logs += d));
    proc.stderr.on("data", (d) => (logs += d));
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      if (proc.exitCode !== null) throw new Error(`latchkey ${name} exited:\n${logs}`);
      try { if ((await fetch(url + "/readyz")).ok) break; } catch {}
      if (i > 300) throw new Error(`latchkey ${name} did not start:\n${logs}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    procs.push({ proc, url, logs: () => logs,
      client: new Turnkey({ apiBaseUrl: url, apiPrivateKey: creds.apiPrivateKey, apiPublicKey: creds.apiPublicKey, defaultOrganizationId: creds.organizationId,
        activityPoller: { intervalMs: 50, numRetries: 1 } }).apiClient() });
  }
  return { procs, creds, db, schema, masterKey: join(dir, "master.key"),
    async stop() {
      for (const p of procs) p.proc.kill("SIGTERM");
      await Promise.all(procs.map((p) => new Promise((r) => (p.proc.exitCode !== null ? r() : p.proc.on("exit", r)))));
      execFileSync("psql", [url, "-q", "-v", "ON_ERROR_STOP=1", "-c", `SET client_min_messages = warning; DROP SCHEMA IF EXISTS ${schema} CASCADE`]);
    } };
}

test("two Latchkey processes over PostgreSQL send for many accounts at once: no paymaster nonce reused, all included",
  { skip: !process.env.LATCHKEY_TEST_DATABASE_URL && "LATCHKEY_TEST_DATABASE_URL is not set" }, async (t) => {
    const pair = await startPostgresPair(process.env.LATCHKEY_TEST_DATABASE_URL);
    try {
      const [a, b] = pair.procs;
      const pm = gasStationShow(["--database-url", pair.db, "--master-key-file", pair.masterKey]).evmPaymaster;
      assert.ok(pm);
      await fund(pm, parseEther("100"));
      await upsertGasUsage(a.url, pair.creds, { enabled: true, orgWindowLimitUsd: "1000", subOrgWindowLimitUsd: "100", windowDurationMinutes: "60" });
      const accounts = [];
      for (let i = 0; i < 20; i++) accounts.push(await newAccount(i % 2 ? b.client : a.client));
      const ids = await Promise.all(accounts.map((from, i) => send({ from, caip2: CAIP2, sponsor: true, calls: [{ to: recipient, value: "0", data: "0x" }] }, i % 2 ? b.client : a.client)));
      const done = await Promise.all(ids.map((id, i) => poll(id, i % 2 ? a.client : b.client)));
      const nonces = [];
      for (const d of done) {
        const tx = await pub.getTransaction({ hash: d.eth.txHash });
        assert.equal(tx.from.toLowerCase(), pm.toLowerCase());
        nonces.push(tx.nonce);
      }
      assert.equal(new Set(nonces).size, nonces.length, `a paymaster nonce used twice: ${nonces}`);
      t.diagnostic(`paymaster nonces ${nonces.sort((x, y) => x - y).join(",")}`);
    } finally {
      await pair.stop();
    }
  });
