// list_eth_transaction_history end to end: a real EVM development node (`geth --dev`, as in
// chain.test.mjs, standing in for Sepolia), a hand-assembled token that emits Transfer events,
// a real `latchkey serve --dev` following the chain through --chain-rpc, and the published
// @turnkey/sdk-server client reading the history: ether in and out, an ERC-20 transfer, a send
// Latchkey made marked as such, CONFIRMED then FINALIZED, pages forward and back, a forged cursor
// refused, and `latchkey history backfill` indexing a block from before the follower ran.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseEther, parseAbi } from "viem";
import { startLatchkey, latchkeyBinary } from "./lib.mjs";
import { startChain, EVENT_TOKEN_BYTECODE, viemClients } from "./gethdev.mjs";

const CAIP2 = "eip155:11155111";
let chain, lk, pub, devWallet, token;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

before(async () => {
  chain = await startChain();
  ({ pub, dev: devWallet } = viemClients(chain));
  const hash = await devWallet.deployContract({ abi: [], bytecode: EVENT_TOKEN_BYTECODE });
  token = (await pub.waitForTransactionReceipt({ hash, pollingInterval: 100 })).contractAddress;
  const assets = join(mkdtempSync(join(tmpdir(), "latchkey-assets-")), "assets.json");
  writeFileSync(assets, JSON.stringify({ assets: [{ caip19: `${CAIP2}/erc20:${token}`, symbol: "LKT", name: "Latchkey Test Token", decimals: 6 }] }));
  lk = await startLatchkey(["--chain-rpc", `${CAIP2}=${chain.rpcUrl}`, "--assets-file", assets]);
});

after(async () => {
  if (lk) assert.equal(await lk.stop(), 0);
  chain?.stop();
});

test("transaction history from a real EVM node, through @turnkey/sdk-server", async () => {
  const client = lk.client();
  const { addresses: [address] } = await client.createWallet({ walletName: "history", accounts: [{ curve: "CURVE_SECP256K1", pathFormat: "PATH_FORMAT_BIP32",
    path: "m/44'/60'/0'/0/0", addressFormat: "ADDRESS_FORMAT_ETHEREUM" }] });
  const me = address.toLowerCase();
  const history = (paginationOptions) => client.listEthTransactionHistory({ address, caip2: CAIP2, ...(paginationOptions ? { paginationOptions } : {}) });
  const find = async (hash) => (await history({ limit: "100" })).transactions.find((t) => t.transactionHash === hash);
  const mined = async (hash) => { await pub.waitForTransactionReceipt({ hash, pollingInterval: 100 }); return hash; };

  // The first ether arrives before anything guarantees the follower has read the chain: the
  // backfill command indexes its block whatever the follower did.
  const fund = await mined(await devWallet.sendTransaction({ to: address, value: parseEther("1") }));
  const fundBlock = (await pub.getTransactionReceipt({ hash: fund })).blockNumber;
  const out = JSON.parse(execFileSync(latchkeyBinary(), ["history", "backfill", "--dev", "--data-dir", lk.dataDir, "--caip2", CAIP2, "--address", address,
    "--from-block", String(fundBlock), "--to-block", String(fundBlock), "--chain-rpc", `${CAIP2}=${chain.rpcUrl}`], { encoding: "utf8" }));
  assert.equal(out.itemsWritten, 1, JSON.stringify(out));
  assert.ok(await find(fund), "the backfilled deposit is listed");
  // A range over the cap is refused with its reason.
  assert.throws(() => execFileSync(latchkeyBinary(), ["history", "backfill", "--dev", "--data-dir", lk.dataDir, "--caip2", CAIP2, "--address", address,
    "--from-block", "0", "--to-block", "20000", "--chain-rpc", `${CAIP2}=${chain.rpcUrl}`], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }),
  (e) => /at most 10000/.test(e.stderr));

  // Wait until the follower reads new blocks: a 1-wei probe per round until one is indexed (the
  // follower's cursor starts at the head it first sees, so probes before that stay unlisted).
  let probe;
  for (let i = 0; i < 30 && !probe; i++) {
    const p = await mined(await devWallet.sendTransaction({ to: address, value: 1n }));
    for (let j = 0; j < 20 && !probe; j++) {
      if (await find(p)) probe = p;
      else await sleep(250);
    }
  }
  assert.ok(probe, "the follower never indexed a new block");

  // An ERC-20 transfer in (the token emits Transfer), and ether out through Latchkey's own send.
  const tokenIn = await mined(await devWallet.writeContract({ address: token, abi: parseAbi(["function transfer(address,uint256) returns (bool)"]),
    functionName: "transfer", args: [address, 1234567n] }));
  const { sendTransactionStatusId } = await client.ethSendTransaction({ from: address, caip2: CAIP2, sponsor: false,
    calls: [{ to: chain.devAddress, value: parseEther("0.25").toString(), data: "0x" }] });
  let sent;
  for (let i = 0; i < 100; i++) {
    sent = await client.getSendTransactionStatus({ sendTransactionStatusId });
    if (sent.txStatus !== "PENDING") break;
    await sleep(100);
  }
  assert.equal(sent.txStatus, "INCLUDED", JSON.stringify(sent));
  const out1 = sent.eth.txHash;
  let items;
  for (let i = 0; i < 100; i++) {
    items = (await history({ limit: "100" })).transactions;
    if (items.some((t) => t.transactionHash === out1) && items.some((t) => t.transactionHash === tokenIn)) break;
    await sleep(100);
  }
  const byHash = (h) => items.find((t) => t.transactionHash === h);
  const deposit = byHash(fund), tok = byHash(tokenIn), own = byHash(out1);
  assert.ok(deposit && tok && own, JSON.stringify(items));
  // Most recent first.
  assert.ok(items.indexOf(own) < items.indexOf(tok) && items.indexOf(tok) < items.indexOf(deposit), JSON.stringify(items.map((t) => t.transactionHash)));
  for (const t of [deposit, tok, own]) {
    assert.ok(["CONFIRMED", "FINALIZED"].includes(t.status), t.status);
    const r = await pub.getTransactionReceipt({ hash: t.transactionHash });
    assert.equal(t.block.number, String(r.blockNumber));
    assert.equal(t.block.hash, r.blockHash);
    assert.equal(t.fee.amount, String(r.gasUsed * r.effectiveGasPrice));
    assert.equal(t.fee.caip19, `${CAIP2}/slip44:60`);
  }
  assert.deepEqual(deposit.transfers, [{ direction: "IN", asset: { caip19: `${CAIP2}/slip44:60`, symbol: "ETH", name: "Sepolia Ether", decimals: 18 },
    amount: parseEther("1").toString(), counterparty: chain.devAddress.toLowerCase(), display: { crypto: "1" } }]);
  assert.equal(deposit.origin, "EXTERNAL");
  assert.equal(deposit.turnkey, undefined);
  assert.deepEqual(tok.transfers, [{ direction: "IN", asset: { caip19: `${CAIP2}/erc20:${token.toLowerCase()}`, symbol: "LKT", name: "Latchkey Test Token", decimals: 6 },
    amount: "1234567", counterparty: chain.devAddress.toLowerCase(), display: { crypto: "1.234567" } }]);
  assert.equal(tok.to, token.toLowerCase());
  assert.deepEqual(own.transfers, [{ direction: "OUT", asset: { caip19: `${CAIP2}/slip44:60`, symbol: "ETH", name: "Sepolia Ether", decimals: 18 },
    amount: parseEther("0.25").toString(), counterparty: chain.devAddress.toLowerCase(), display: { crypto: "0.25" } }]);
  assert.equal(own.from, me);
  assert.equal(own.origin, "TURNKEY");
  assert.equal(own.turnkey.sponsored, false);
  assert.match(own.turnkey.activityFingerprint, /^sha256:/);
  assert.ok(!Number.isNaN(Date.parse(own.turnkey.submittedAt)));
  // The token really moved (and the log the index read is the chain's own).
  assert.equal(await pub.readContract({ address: token, abi: parseAbi(["function balanceOf(address) view returns (uint256)"]), functionName: "balanceOf", args: [address] }), 1234567n);

  // Pages of 2 forward to the end, then back: the same items as one page of all.
  const pages = [];
  for (let after; ;) {
    const p = await history({ limit: "2", ...(after ? { after } : {}) });
    pages.push(p);
    if (!p.pageInfo.hasNextPage) break;
    after = p.pageInfo.endCursor;
  }
  assert.ok(pages.length >= 2, `${items.length} items in ${pages.length} pages`);
  assert.deepEqual(pages.flatMap((p) => p.transactions.map((t) => t.transactionHash)), items.map((t) => t.transactionHash));
  assert.equal(pages[0].pageInfo.hasPreviousPage, false);
  const last = pages.at(-1);
  const back = await history({ limit: "2", before: last.pageInfo.startCursor });
  assert.deepEqual(back.transactions.map((t) => t.transactionHash), pages.at(-2).transactions.map((t) => t.transactionHash));
  assert.equal(back.pageInfo.hasNextPage, true);

  // geth --dev finalizes the block 32 below its head: 34 more blocks (the developer paying
  // itself) take all three items past the finalized tag, and the follower marks them FINALIZED.
  for (let i = 0; i < 34; i++) await mined(await devWallet.sendTransaction({ to: chain.devAddress, value: 1n }));
  let final;
  for (let i = 0; i < 150; i++) {
    final = (await history({ limit: "100" })).transactions.filter((t) => [fund, tokenIn, out1].includes(t.transactionHash));
    if (final.length === 3 && final.every((t) => t.status === "FINALIZED")) break;
    await sleep(200);
  }
  assert.deepEqual(final.map((t) => t.status), ["FINALIZED", "FINALIZED", "FINALIZED"], JSON.stringify(final));
  assert.equal(final[0].turnkey.activityFingerprint, own.turnkey.activityFingerprint);

  // A cursor that was not made for this address is refused naming the field.
  const forged = Buffer.from(Buffer.from(pages[0].pageInfo.endCursor, "base64url").toString().replace(/\.[0-9a-f]+$/, ".00"), "utf8").toString("base64url");
  await assert.rejects(history({ after: forged }), /paginationOptions\.after/);
});
