// Sponsored Solana sends and Solana history through @turnkey/sdk-server against a real latchkey
// serve whose devnet provider is a JSON-RPC stand-in over LiteSVM (litesvmnode.mjs): the Agave
// runtime executes every transaction Latchkey sends, signatures verified.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Keypair, PublicKey, SystemProgram, Transaction } from "@solana/web3.js";
import { startLatchkey, freePort } from "./lib.mjs";
import { startLiteSVMNode } from "./litesvmnode.mjs";

const DEVNET = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";

const node = await startLiteSVMNode(await freePort());
const gasFile = join(mkdtempSync(join(tmpdir(), "latchkey-sol-gas-")), "gas-station.json");
writeFileSync(gasFile, JSON.stringify({ solana: { [DEVNET]: { maxFeeLamports: 20000 } } }));
const lk = await startLatchkey(["--chain-rpc", `${DEVNET}=${node.url}`, "--gas-station", gasFile]);
after(async () => {
  await lk.stop();
  await node.close();
});
const c = lk.client();

async function solAccount(name) {
  const w = await c.createWallet({ walletName: name, accounts: [{ curve: "CURVE_ED25519", pathFormat: "PATH_FORMAT_BIP32",
    path: "m/44'/501'/0'/0'", addressFormat: "ADDRESS_FORMAT_SOLANA" }] });
  return w.addresses[0];
}

// An unsigned legacy transfer of lamports from `from` (its fee payer) to `to`, as hex.
function transfer(from, to, lamports, blockhash = node.latestBlockhash(), extra = []) {
  const tx = new Transaction({ feePayer: new PublicKey(from), recentBlockhash: blockhash })
    .add(SystemProgram.transfer({ fromPubkey: new PublicKey(from), toPubkey: new PublicKey(to), lamports }), ...extra);
  return tx.serialize({ requireAllSignatures: false, verifySignatures: false }).toString("hex");
}

async function waitIncluded(sendTransactionStatusId) {
  for (let i = 0; i < 100; i++) {
    const st = await c.getSendTransactionStatus({ sendTransactionStatusId });
    if (st.txStatus !== "PENDING") return st;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("still pending");
}

test("an unsponsored send runs on LiteSVM and shows in the history, marked as Latchkey's", async () => {
  const user = await solAccount("plain");
  const to = Keypair.generate().publicKey.toBase58();
  node.airdrop(user, 10_000_000);
  const { sendTransactionStatusId } = await c.solSendTransaction({ unsignedTransaction: transfer(user, to, 1_000_000),
    signWiths: [user], caip2: DEVNET });
  const st = await waitIncluded(sendTransactionStatusId);
  assert.equal(st.txStatus, "INCLUDED");
  assert.equal(node.balance(to), 1_000_000);
  assert.equal(node.balance(user), 10_000_000 - 1_000_000 - 5000);

  const h = await c.listSolTransactionHistory({ address: user, caip2: DEVNET });
  assert.equal(h.transactions.length, 2); // the airdrop and the send
  const [sent, airdrop] = h.transactions;
  assert.equal(sent.signature, st.solana.signature);
  assert.equal(sent.origin, "TURNKEY");
  assert.equal(sent.turnkey.sponsored, false);
  assert.deepEqual(sent.transfers.map((t) => [t.direction, t.amount, t.counterparty, t.asset.symbol]),
    [["OUT", "1000000", to, "SOL"]]);
  assert.equal(sent.fee.amount, "5000");
  assert.equal(sent.feePayer, user);
  assert.equal(airdrop.origin, "EXTERNAL");
  assert.deepEqual(airdrop.transfers.map((t) => [t.direction, t.amount]), [["IN", "10000000"]]);
});

test("history pages forward and back, and cursors hold for their address only", async () => {
  const user = await solAccount("paged");
  for (let i = 1; i <= 7; i++) node.airdrop(user, 1_000_000 + i);
  const all = (await c.listSolTransactionHistory({ address: user, caip2: DEVNET, paginationOptions: { limit: "7" } }))
    .transactions.map((t) => t.signature);
  assert.equal(all.length, 7);
  const p1 = await c.listSolTransactionHistory({ address: user, caip2: DEVNET, paginationOptions: { limit: "3" } });
  const p2 = await c.listSolTransactionHistory({ address: user, caip2: DEVNET,
    paginationOptions: { limit: "3", before: p1.pageInfo.endCursor } });
  const p3 = await c.listSolTransactionHistory({ address: user, caip2: DEVNET,
    paginationOptions: { limit: "3", before: p2.pageInfo.endCursor } });
  assert.deepEqual([...p1.transactions, ...p2.transactions, ...p3.transactions].map((t) => t.signature), all);
  assert.equal(p3.pageInfo.hasNextPage, false);
  const back = await c.listSolTransactionHistory({ address: user, caip2: DEVNET,
    paginationOptions: { limit: "3", after: p3.pageInfo.startCursor } });
  assert.deepEqual(back.transactions.map((t) => t.signature), all.slice(3, 6));
  const other = await solAccount("other");
  await assert.rejects(c.listSolTransactionHistory({ address: other, caip2: DEVNET,
    paginationOptions: { before: p1.pageInfo.endCursor } }), /paginationOptions\.before/);
});
