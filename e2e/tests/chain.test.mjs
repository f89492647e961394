// Chain access end to end: a real EVM development node (`geth --dev`, built from the Go module proxy
// by e2e/geth.sh and cached), a hand-assembled ERC-20 deployed with viem, and a real
// `latchkey serve --dev` reading the chain through --chain-rpc.
//
// The spec's (and the wire's) caip2 lists only public networks, so the dev node stands in for
// Sepolia: its genesis is geth --dev's own (`geth --dev dumpgenesis`: every fork active, the system
// contracts) with chain id 11155111 and a developer key of the test's own funded, written with
// `geth init` before `geth --dev` starts over that data directory.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseEther, serializeTransaction, parseAbi } from "viem";
import { TurnkeyClient } from "@turnkey/http";
import { ApiKeyStamper } from "@turnkey/api-key-stamper";
import { startLatchkey, latchkeyBinary } from "./lib.mjs";
import { startChain, TOKEN_BYTECODE, viemClients } from "./gethdev.mjs";

const CAIP2 = "eip155:11155111";
let chain, lk, pub, devWallet, token;

before(async () => {
  chain = await startChain();
  ({ pub, dev: devWallet } = viemClients(chain));
  const hash = await devWallet.deployContract({ abi: [], bytecode: TOKEN_BYTECODE });
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
  // The hand-assembled token answers as an ERC-20 does to a reader other than Latchkey too.
  const erc20 = parseAbi(["function balanceOf(address) view returns (uint256)"]);
  assert.equal(await pub.readContract({ address: token, abi: erc20, functionName: "balanceOf", args: [chain.devAddress] }), 10n ** 15n - 1234567n);
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

  // eth_send_transaction without sponsorship, as @turnkey/sdk-server sends it (V2, one call):
  // Latchkey takes nonce, gas and fees from the node, signs, broadcasts; the status follows it.
  const before = await pub.getBalance({ address: chain.devAddress });
  const { sendTransactionStatusId } = await client.ethSendTransaction({ from: address, caip2: CAIP2, sponsor: false,
    calls: [{ to: chain.devAddress, value: parseEther("0.1").toString(), data: "0x" }] });
  let sent;
  for (let i = 0; i < 100; i++) {
    sent = await client.getSendTransactionStatus({ sendTransactionStatusId });
    if (sent.txStatus !== "PENDING") break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(sent.txStatus, "INCLUDED", JSON.stringify(sent));
  const minedSend = await pub.getTransactionReceipt({ hash: sent.eth.txHash });
  assert.equal(minedSend.from.toLowerCase(), address.toLowerCase());
  assert.equal(await pub.getBalance({ address: chain.devAddress }) - before >= parseEther("0.1") - parseEther("0.01"), true);
  // A sponsored send is refused with its reason.
  await assert.rejects(client.ethSendTransaction({ from: address, caip2: CAIP2, sponsor: true, calls: [{ to: chain.devAddress, value: "1" }] }), /gas sponsorship is not configured/);
});

// BALANCE_CONFIRMED_UPDATES from a real node: a transfer of ether to a wallet account reaches the
// organization's endpoint as Turnkey's balances:confirmed body. (The hand-assembled token above
// emits no Transfer events, so ERC-20 deposits are tested in Go against recorded logs:
// TestBalanceWebhooksFromBlocks.)
test("balance webhooks: a deposit of ether seen in a block", async () => {
  const { createServer } = await import("node:http");
  const got = [];
  const receiver = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      if (req.headers["x-turnkey-event-type"] === "BALANCE_CONFIRMED_UPDATES") got.push(JSON.parse(Buffer.concat(chunks).toString()));
      res.writeHead(200).end();
    });
  });
  await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
  try {
    const client = lk.client();
    const { addresses: [address] } = await client.createWallet({ walletName: "watched", accounts: [{ curve: "CURVE_SECP256K1",
      pathFormat: "PATH_FORMAT_BIP32", path: "m/44'/60'/0'/0/0", addressFormat: "ADDRESS_FORMAT_ETHEREUM" }] });
    await client.createWebhookEndpoint({ name: "balances", url: `http://127.0.0.1:${receiver.address().port}/b`,
      subscriptions: [{ eventType: "BALANCE_CONFIRMED_UPDATES" }, { eventType: "BALANCE_FINALIZED_UPDATES" }] });
    await new Promise((r) => setTimeout(r, 3000)); // the follower starts from the head it first sees
    const eth = await devWallet.sendTransaction({ to: address, value: parseEther("0.2") });
    await pub.waitForTransactionReceipt({ hash: eth, pollingInterval: 100 });
    const want = (caip19) => got.find((b) => b.msg.operation === "deposit" && b.msg.address === address.toLowerCase() && b.msg.asset.caip19 === caip19);
    for (let i = 0; i < 150 && !want(`${CAIP2}/slip44:60`); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const ether = want(`${CAIP2}/slip44:60`);
    assert.ok(ether, `no ether deposit among ${JSON.stringify(got)}`);
    assert.equal(ether.type, "balances:confirmed");
    assert.equal(ether.organizationId, lk.creds.organizationId);
    assert.equal(ether.msg.asset.amount, parseEther("0.2").toString());
    assert.equal(ether.msg.txHash, eth);
    assert.ok(ether.msg.idempotencyKey && ether.msg.block.number);
  } finally {
    receiver.close();
  }
});
