// Sponsored Solana sends and Solana history through @turnkey/sdk-server against a real latchkey
// serve whose devnet provider is a JSON-RPC stand-in over LiteSVM (litesvmnode.mjs): the Agave
// runtime executes every transaction Latchkey sends, signatures verified.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync, mkdtempSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Keypair, PublicKey, SystemProgram, Transaction, TransactionInstruction, ComputeBudgetProgram, TransactionMessage,
  VersionedTransaction } from "@solana/web3.js";
import { startLatchkey, freePort, latchkeyBinary } from "./lib.mjs";
import { startLiteSVMNode } from "./litesvmnode.mjs";

const DEVNET = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";

const node = await startLiteSVMNode(await freePort());
const gasFile = join(mkdtempSync(join(tmpdir(), "latchkey-sol-gas-")), "gas-station.json");
writeFileSync(gasFile, JSON.stringify({ solana: { [DEVNET]: { maxFeeLamports: 20000, rentSponsorship: true, usdPerCoin: "100" } } }));
const lk = await startLatchkey(["--chain-rpc", `${DEVNET}=${node.url}`, "--gas-station", gasFile]);
after(async () => {
  await lk.stop();
  await node.close();
});
const c = lk.client();
// The fee payer's address, as the operator reads it to fund it.
const { solanaFeePayer: feePayer } = JSON.parse(execFileSync(latchkeyBinary(),
  ["gas-station", "show", "--dev", "--data-dir", lk.dataDir]).toString());

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
    paginationOptions: { limit: "3", after: p1.pageInfo.endCursor } });
  const p3 = await c.listSolTransactionHistory({ address: user, caip2: DEVNET,
    paginationOptions: { limit: "3", after: p2.pageInfo.endCursor } });
  assert.deepEqual([...p1.transactions, ...p2.transactions, ...p3.transactions].map((t) => t.signature), all);
  assert.equal(p3.pageInfo.hasNextPage, false);
  const back = await c.listSolTransactionHistory({ address: user, caip2: DEVNET,
    paginationOptions: { limit: "3", before: p3.pageInfo.startCursor } });
  assert.deepEqual(back.transactions.map((t) => t.signature), all.slice(3, 6));
  const other = await solAccount("other");
  await assert.rejects(c.listSolTransactionHistory({ address: other, caip2: DEVNET,
    paginationOptions: { after: p1.pageInfo.endCursor } }), /paginationOptions\.after/);
});

// upsert_gas_usage_config (not in this SDK version's generated client: its generic command).
const upsertGasUsage = (parameters) => c.command("/public/v1/submit/upsert_gas_usage_config", {
  parameters, organizationId: lk.creds.organizationId, timestampMs: String(Date.now()),
  type: "ACTIVITY_TYPE_UPSERT_GAS_USAGE_CONFIG" }, "upsertGasUsageConfigResult");

test("a sponsored SOL transfer: the fee payer pays the fee, the account sends all it holds", async () => {
  const user = await solAccount("sponsored");
  const to = Keypair.generate().publicKey.toBase58();
  node.airdrop(user, 1_000_000); // exactly what it sends: nothing left for a fee
  node.airdrop(feePayer, 1_000_000_000);
  const unsignedTransaction = transfer(user, to, 1_000_000);

  // Unsponsored, the transfer fails (the account pays the fee and is then short): FAILED, and
  // the fee is gone from the account.
  const plain = await c.solSendTransaction({ unsignedTransaction, signWiths: [user], caip2: DEVNET });
  assert.equal((await waitIncluded(plain.sendTransactionStatusId)).txStatus, "FAILED");
  const holds = node.balance(user);
  assert.equal(holds, 1_000_000 - 5000);
  // Sponsored before the organization enables it: refused with the reason.
  await assert.rejects(c.solSendTransaction({ unsignedTransaction, signWiths: [user], caip2: DEVNET, sponsor: true }),
    /gas sponsorship is not enabled/);
  await upsertGasUsage({ orgWindowLimitUsd: "5", subOrgWindowLimitUsd: "1", windowDurationMinutes: "60", enabled: true });

  const feeBefore = node.balance(feePayer);
  const { sendTransactionStatusId } = await c.solSendTransaction({ unsignedTransaction: transfer(user, to, holds),
    signWiths: [user], caip2: DEVNET, sponsor: true });
  const st = await waitIncluded(sendTransactionStatusId);
  assert.equal(st.txStatus, "INCLUDED", JSON.stringify(st));
  assert.equal(node.balance(to), holds);
  assert.equal(node.balance(user), 0);
  assert.equal(feeBefore - node.balance(feePayer), 10_000); // two signatures

  const h = await c.listSolTransactionHistory({ address: user, caip2: DEVNET, paginationOptions: { limit: "1" } });
  const [item] = h.transactions;
  assert.equal(item.signature, st.solana.signature);
  assert.equal(item.feePayer, feePayer);
  assert.deepEqual(item.signers.map((s) => s.address), [feePayer, user]);
  assert.equal(item.turnkey.sponsored, true);
  assert.deepEqual(item.transfers.map((t) => [t.direction, t.amount, t.counterparty]), [["OUT", String(holds), to]]);
});

test("sponsored sends the rewrite cannot make safe are refused, naming the transaction", async () => {
  const user = await solAccount("refused");
  const to = Keypair.generate().publicKey;
  const send = (tx, signWiths = [user]) => c.solSendTransaction({ caip2: DEVNET, sponsor: true, signWiths,
    unsignedTransaction: tx.serialize({ requireAllSignatures: false, verifySignatures: false }).toString("hex") });
  const base = (payer = user) => new Transaction({ feePayer: new PublicKey(payer), recentBlockhash: node.latestBlockhash() });
  const xfer = SystemProgram.transfer({ fromPubkey: new PublicKey(user), toPubkey: to, lamports: 1 });
  const cases = [
    ["the fee payer in the message", base().add(SystemProgram.transfer({ fromPubkey: new PublicKey(user),
      toPubkey: new PublicKey(feePayer), lamports: 1 })), /already in the message/],
    ["System CreateAccount", base().add(SystemProgram.createAccount({ fromPubkey: new PublicKey(user),
      newAccountPubkey: to, lamports: 1, space: 0, programId: SystemProgram.programId })), /CreateAccount/],
    ["an associated token account create, rent prefunding off", base().add(new TransactionInstruction({
      programId: new PublicKey("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL"), data: Buffer.from([1]),
      keys: [{ pubkey: new PublicKey(user), isSigner: true, isWritable: true }, { pubkey: to, isSigner: false, isWritable: true }] })),
    /rent sponsorship is off/],
    ["a fee above maxFeeLamports", base().add(ComputeBudgetProgram.setComputeUnitPrice({ microLamports: 1_000_000 }), xfer),
      /above this network's sponsorship cap of 20000/],
  ];
  for (const [name, tx, want] of cases) {
    await assert.rejects(send(tx), (e) => want.test(String(e?.message) + JSON.stringify(e?.cause ?? "")), name);
  }
});

test("with rent prefunding on, the fee payer funds an associated token account the account creates", async () => {
  const TOKEN = new PublicKey("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
  const ATA = new PublicKey("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL");
  // A mint, made directly on the runtime (not through Latchkey).
  const authority = Keypair.generate(), mint = Keypair.generate();
  node.airdrop(authority.publicKey.toBase58(), 1_000_000_000);
  const init = new TransactionInstruction({ programId: TOKEN, keys: [{ pubkey: mint.publicKey, isSigner: false, isWritable: true }],
    data: Buffer.concat([Buffer.from([20, 6]), authority.publicKey.toBuffer(), Buffer.from([0])]) }); // InitializeMint2
  const mk = new Transaction({ feePayer: authority.publicKey, recentBlockhash: node.latestBlockhash() }).add(
    SystemProgram.createAccount({ fromPubkey: authority.publicKey, newAccountPubkey: mint.publicKey, lamports: 1_461_600,
      space: 82, programId: TOKEN }), init);
  mk.sign(authority, mint);
  assert.ok(node.sendRaw(mk.serialize()).signature);

  const user = await solAccount("rent"); // holds no SOL at all
  const wallet = new PublicKey(user);
  const [ata] = PublicKey.findProgramAddressSync([wallet.toBuffer(), TOKEN.toBuffer(), mint.publicKey.toBuffer()], ATA);
  const create = new Transaction({ feePayer: wallet, recentBlockhash: node.latestBlockhash() }).add(new TransactionInstruction({
    programId: ATA, data: Buffer.from([1]), keys: [ // CreateIdempotent, funded by the account itself as written
      { pubkey: wallet, isSigner: true, isWritable: true }, { pubkey: ata, isSigner: false, isWritable: true },
      { pubkey: wallet, isSigner: false, isWritable: false }, { pubkey: mint.publicKey, isSigner: false, isWritable: false },
      { pubkey: SystemProgram.programId, isSigner: false, isWritable: false }, { pubkey: TOKEN, isSigner: false, isWritable: false }] }));
  const unsignedTransaction = create.serialize({ requireAllSignatures: false, verifySignatures: false }).toString("hex");
  await assert.rejects(c.solSendTransaction({ unsignedTransaction, signWiths: [user], caip2: DEVNET, sponsor: true }),
    /rent sponsorship is off/);
  await upsertGasUsage({ orgWindowLimitUsd: "5", subOrgWindowLimitUsd: "1", windowDurationMinutes: "60", enabled: true,
    solanaConfig: { rentPrefundEnabled: true } });
  const before = node.balance(feePayer);
  const { sendTransactionStatusId } = await c.solSendTransaction({ unsignedTransaction, signWiths: [user], caip2: DEVNET,
    sponsor: true });
  const st = await waitIncluded(sendTransactionStatusId);
  assert.equal(st.txStatus, "INCLUDED", JSON.stringify(st));
  assert.equal(node.balance(ata.toBase58()), 2_039_280); // the token account exists, rent-exempt
  assert.equal(before - node.balance(feePayer), 10_000 + 2_039_280); // the fee and the rent
  assert.equal(node.balance(user), 0);

  // Again: the account exists, so CreateIdempotent pays no rent. The reservation counted the rent
  // ($100 a SOL: 2,049,280 lamports, $0.204928); once the follower reads the landed transaction
  // the usage is settled at what the fee payer paid, the fee alone ($0.001).
  const usage = async () => Number((await c.getGasUsage({})).usageUsd);
  const u0 = await usage();
  const again = await c.solSendTransaction({ unsignedTransaction: new Transaction({ feePayer: wallet,
    recentBlockhash: node.latestBlockhash() }).add(create.instructions[0])
    .serialize({ requireAllSignatures: false, verifySignatures: false }).toString("hex"),
  signWiths: [user], caip2: DEVNET, sponsor: true });
  assert.equal((await waitIncluded(again.sendTransactionStatusId)).txStatus, "INCLUDED");
  assert.ok(Math.abs((await usage()) - u0 - 0.204928) < 1e-9 || Math.abs((await usage()) - u0 - 0.001) < 1e-9);
  let settled = 0;
  for (let i = 0; i < 100 && Math.abs((settled = await usage()) - u0 - 0.001) > 1e-9; i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(Math.abs(settled - u0 - 0.001) < 1e-9, `usage ${settled}, want ${u0 + 0.001}`);
});

test("a sponsored v0 transfer", async () => {
  const user = await solAccount("v0");
  const to = Keypair.generate().publicKey;
  node.airdrop(user, 2_000_000);
  const msg = new TransactionMessage({ payerKey: new PublicKey(user), recentBlockhash: node.latestBlockhash(),
    instructions: [SystemProgram.transfer({ fromPubkey: new PublicKey(user), toPubkey: to, lamports: 1_000_000 })] })
    .compileToV0Message();
  const unsignedTransaction = Buffer.from(new VersionedTransaction(msg).serialize()).toString("hex");
  const { sendTransactionStatusId } = await c.solSendTransaction({ unsignedTransaction, signWiths: [user], caip2: DEVNET,
    sponsor: true });
  assert.equal((await waitIncluded(sendTransactionStatusId)).txStatus, "INCLUDED");
  assert.equal(node.balance(user), 1_000_000); // the fee was not the account's
  assert.equal(node.balance(to.toBase58()), 1_000_000);
});
