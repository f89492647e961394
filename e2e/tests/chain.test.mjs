// Issue 7 end to end: a real EVM development node (`geth --dev`, built from the Go module proxy
// by e2e/geth.sh and cached), an ERC-20 compiled with the real solc from npm and deployed with
// viem, a real `latchkey serve --dev` reading the chain through --chain-rpc.
//
// The spec's (and the wire's) caip2 lists only public networks, so the dev node stands in for
// Sepolia: its genesis is geth --dev's own (`geth --dev dumpgenesis`: every fork active, the system
// contracts) with chain id 11155111 and a developer key of the test's own funded, written with
// `geth init` before `geth --dev` starts over that data directory.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { createPublicClient, createWalletClient, http, parseEther, serializeTransaction, encodeFunctionData, parseAbi, defineChain } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { TurnkeyClient } from "@turnkey/http";
import { ApiKeyStamper } from "@turnkey/api-key-stamper";
import { startLatchkey, latchkeyBinary } from "./lib.mjs";

const require = createRequire(import.meta.url);
const solc = require("solc");
const CAIP2 = "eip155:11155111";
const here = dirname(fileURLToPath(import.meta.url));
let chain, lk, pub, devWallet, token;

const SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;
contract Token {
  mapping(address => uint256) public balanceOf;
  constructor() { balanceOf[msg.sender] = 1e15; }
  function transfer(address to, uint256 v) external returns (bool) {
    require(balanceOf[msg.sender] >= v, "balance");
    balanceOf[msg.sender] -= v;
    balanceOf[to] += v;
    return true;
  }
}`;

function compile() {
  const out = JSON.parse(solc.compile(JSON.stringify({ language: "Solidity", sources: { "Token.sol": { content: SOURCE } },
    settings: { evmVersion: "cancun", outputSelection: { "*": { "*": ["evm.bytecode.object"] } } } })));
  assert.ok(!out.errors?.some((e) => e.severity === "error"), JSON.stringify(out.errors));
  return "0x" + out.contracts["Token.sol"].Token.evm.bytecode.object;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer().listen(0, "127.0.0.1", () => { const { port } = srv.address(); srv.close(() => resolve(port)); });
    srv.on("error", reject);
  });
}

async function rpc(url, method, params = []) {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  const body = await res.json();
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

// Builds (once, cached) and starts geth --dev on loopback. A failed build fails the test.
async function startChain() {
  const geth = execFileSync("bash", [join(here, "..", "geth.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }).trim();
  const [http, auth] = [await freePort(), await freePort()];
  const dataDir = mkdtempSync(join(tmpdir(), "latchkey-geth-"));
  const genesis = JSON.parse(execFileSync(geth, ["--dev", "dumpgenesis"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }));
  const devPrivateKey = generatePrivateKey();
  const devAddress = privateKeyToAccount(devPrivateKey).address;
  genesis.config.chainId = 11155111;
  genesis.alloc[devAddress] = { balance: "0x" + (10n ** 24n).toString(16) }; // 1,000,000 ETH
  writeFileSync(join(dataDir, "genesis.json"), JSON.stringify(genesis));
  execFileSync(geth, ["init", "--datadir", join(dataDir, "chain"), join(dataDir, "genesis.json")], { stdio: ["ignore", "ignore", "inherit"] });
  const proc = spawn(geth, ["--dev", "--datadir", join(dataDir, "chain"), "--http", "--http.addr", "127.0.0.1", "--http.port", String(http), "--http.api", "eth,net,web3",
    "--authrpc.addr", "127.0.0.1", "--authrpc.port", String(auth), "--port", "0", "--nodiscover", "--maxpeers", "0", "--ipcdisable", "--verbosity", "2"],
  { stdio: ["ignore", "ignore", "inherit"] });
  let exited = null;
  proc.once("exit", (c) => { exited = c; });
  const rpcUrl = `http://127.0.0.1:${http}`;
  for (let i = 0; ; i++) {
    if (exited !== null) throw new Error(`geth exited ${exited}`);
    try {
      assert.equal(await rpc(rpcUrl, "eth_chainId"), "0xaa36a7");
      break;
    } catch (e) {
      if (i > 200) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { rpcUrl, devPrivateKey, devAddress, stop: () => proc.kill() };
}

before(async () => {
  chain = await startChain();
  const viemChain = defineChain({ id: 11155111, name: "geth --dev", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [chain.rpcUrl] } } });
  pub = createPublicClient({ chain: viemChain, transport: http(chain.rpcUrl) });
  devWallet = createWalletClient({ account: privateKeyToAccount(chain.devPrivateKey), chain: viemChain, transport: http(chain.rpcUrl) });
  const hash = await devWallet.deployContract({ abi: [], bytecode: compile() });
  token = (await pub.waitForTransactionReceipt({ hash, pollingInterval: 100 })).contractAddress;
  const assets = join(mkdtempSync(join(tmpdir(), "latchkey-assets-")), "assets.json");
  writeFileSync(assets, JSON.stringify({ assets: [{ caip19: `${CAIP2}/erc20:${token}`, symbol: "LKT", name: "Latchkey Test Token", decimals: 6 }] }));
  lk = await startLatchkey(["--chain-rpc", `${CAIP2}=${chain.rpcUrl}`, "--assets-file", assets]);
});

after(async () => {
  if (lk) assert.equal(await lk.stop(), 0);
  chain?.stop();
});

test("balances from a real EVM node: exactly what was sent, zero balances left out", async () => {
  const client = lk.client();
  const { addresses: [address] } = await client.createWallet({ walletName: "chain", accounts: [{ curve: "CURVE_SECP256K1", pathFormat: "PATH_FORMAT_BIP32",
    path: "m/44'/60'/0'/0/0", addressFormat: "ADDRESS_FORMAT_ETHEREUM" }] });

  // Not granted yet: a clear refusal.
  await assert.rejects(client.getWalletAddressBalances({ address, caip2: CAIP2 }), /latchkey access grant/);
  execFileSync(latchkeyBinary(), ["access", "grant", "--dev", "--data-dir", lk.dataDir, "--org", lk.creds.organizationId, "--feature", "wallet-balances"]);

  const fund = await devWallet.sendTransaction({ to: address, value: parseEther("1.5") });
  await pub.waitForTransactionReceipt({ hash: fund, pollingInterval: 100 });
  const send = await devWallet.writeContract({ address: token, abi: parseAbi(["function transfer(address,uint256) returns (bool)"]), functionName: "transfer", args: [address, 1234567n] });
  await pub.waitForTransactionReceipt({ hash: send, pollingInterval: 100 });

  const { balances } = await client.getWalletAddressBalances({ address, caip2: CAIP2 });
  assert.deepEqual(balances, [
    { caip19: `${CAIP2}/slip44:60`, symbol: "ETH", balance: "1500000000000000000", decimals: 18, name: "Sepolia Ether", display: { crypto: "1.5" } },
    { caip19: `${CAIP2}/erc20:${token.toLowerCase()}`, symbol: "LKT", balance: "1234567", decimals: 6, name: "Latchkey Test Token", display: { crypto: "1.234567" } },
  ]);
  const { assets } = await client.listSupportedAssets({ caip2: CAIP2 });
  assert.ok(assets.some((a) => a.symbol === "LKT"));

  // A transaction signed by Latchkey, sent with eth_send_raw_transaction, mined, reported.
  const { nonce } = await client.getNonces({ address, caip2: CAIP2, nonce: true });
  const fees = await pub.estimateFeesPerGas();
  const unsigned = serializeTransaction({ type: "eip1559", chainId: 11155111, nonce: Number(nonce), to: chain.devAddress, value: parseEther("0.25"),
    gas: 21000n, maxFeePerGas: fees.maxFeePerGas * 2n, maxPriorityFeePerGas: fees.maxPriorityFeePerGas });
  const { signedTransaction } = await client.signTransaction({ signWith: address, unsignedTransaction: unsigned.slice(2), type: "TRANSACTION_TYPE_ETHEREUM" });
  // eth_send_raw_transaction is in @turnkey/http's client (the superset), not sdk-server's.
  const raw = new TurnkeyClient({ baseUrl: lk.url }, new ApiKeyStamper({ apiPublicKey: lk.creds.apiPublicKey, apiPrivateKey: lk.creds.apiPrivateKey }));
  const act = await raw.ethSendRawTransaction({ type: "ACTIVITY_TYPE_ETH_SEND_RAW_TRANSACTION", timestampMs: String(Date.now()),
    organizationId: lk.creds.organizationId, parameters: { signedTransaction: "0x" + signedTransaction.replace(/^0x/, ""), caip2: CAIP2 } });
  assert.equal(act.activity.status, "ACTIVITY_STATUS_COMPLETED");
  const { transactionHash } = act.activity.result.ethSendRawTransactionResult;
  let status;
  for (let i = 0; i < 50; i++) {
    status = await client.getSendTransactionStatus({ sendTransactionStatusId: transactionHash });
    if (status.txStatus !== "PENDING") break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(status.txStatus, "INCLUDED", JSON.stringify(status));
  const receipt = await pub.getTransactionReceipt({ hash: transactionHash });
  assert.equal(receipt.status, "success");
  assert.equal(receipt.from.toLowerCase(), address.toLowerCase());
});
