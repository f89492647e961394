// A Solana JSON-RPC stand-in over LiteSVM (the npm package `litesvm`: the Agave runtime in
// process, no validator): the methods Latchkey calls for sends, statuses, balances, sponsorship
// settlement and history. Each sendTransaction is executed at once (with signature verification)
// and makes a new slot; what it did is kept for getTransaction and getSignaturesForAddress.
import http from "node:http";
import { createRequire } from "node:module";
import { VersionedTransaction, PublicKey } from "@solana/web3.js";
import bs58 from "bs58";

const require = createRequire(import.meta.url);
const { LiteSVM } = require("litesvm");

// FAUCET stands for LiteSVM's airdrop account in the history.
export const FAUCET = "Faucet1111111111111111111111111111111111111";

export async function startLiteSVMNode(port) {
  const svm = new LiteSVM();
  let slot = 1;
  const txs = []; // newest last: {signature, slot, blockTime, err, fee, keys, header, pre, post}
  const bySig = new Map();

  const balance = (k) => Number(svm.inner.getBalance(new PublicKey(k).toBytes()) ?? 0n);

  function send(b64) {
    const raw = Buffer.from(b64, "base64");
    const vtx = VersionedTransaction.deserialize(raw);
    const msg = vtx.message;
    const keys = msg.staticAccountKeys.map((k) => k.toBase58());
    const signature = bs58.encode(vtx.signatures[0]);
    if (bySig.has(signature)) return { signature };
    const pre = keys.map(balance);
    const res = msg.version === "legacy" ? svm.inner.sendLegacyTransaction(raw) : svm.inner.sendVersionedTransaction(raw);
    const failed = typeof res.err === "function";
    if (failed && pre[0] === balance(keys[0])) {
      // Not executed (bad signature, unknown blockhash, fee payer unable to pay): a preflight refusal.
      return { error: { code: -32002, message: `Transaction simulation failed: ${res.toString().slice(0, 300)}` } };
    }
    const post = keys.map(balance);
    const rec = {
      signature, slot: ++slot, blockTime: 1_700_000_000 + slot, err: failed ? { InstructionError: [0, "Custom"] } : null,
      fee: 5000 * msg.header.numRequiredSignatures, keys, header: msg.header, pre, post,
    };
    txs.push(rec);
    bySig.set(signature, rec);
    svm.expireBlockhash();
    return { signature };
  }

  const methods = {
    getSlot: () => slot,
    getBlock: () => ({ error: { code: -32007, message: "Slot was skipped" } }),
    getLatestBlockhash: () => ({ context: { slot }, value: { blockhash: svm.latestBlockhash(), lastValidBlockHeight: slot + 150 } }),
    getBalance: ([k]) => ({ context: { slot }, value: balance(k) }),
    getTokenAccountsByOwner: () => ({ context: { slot }, value: [] }),
    sendTransaction: ([b64]) => {
      const r = send(b64);
      return r.error ? r : r.signature;
    },
    getSignatureStatuses: ([sigs]) => ({
      context: { slot },
      value: sigs.map((s) => {
        const t = bySig.get(s);
        return t ? { slot: t.slot, confirmations: null, err: t.err, confirmationStatus: "finalized" } : null;
      }),
    }),
    getTransaction: ([sig]) => {
      const t = bySig.get(sig);
      if (!t) return null;
      return {
        slot: t.slot, blockTime: t.blockTime,
        meta: { err: t.err, fee: t.fee, preBalances: t.pre, postBalances: t.post, preTokenBalances: [], postTokenBalances: [] },
        transaction: { signatures: [t.signature], message: { header: t.header, accountKeys: t.keys } },
      };
    },
    getSignaturesForAddress: ([addr, opts = {}]) => {
      const mine = txs.filter((t) => t.keys.includes(addr)).reverse();
      let start = 0, end = mine.length;
      mine.forEach((t, i) => {
        if (t.signature === opts.before) start = i + 1;
        if (t.signature === opts.until) end = i;
      });
      return mine.slice(start, end).slice(0, opts.limit ?? 1000).map((t) => ({
        signature: t.signature, slot: t.slot, err: t.err, blockTime: t.blockTime, confirmationStatus: "finalized",
      }));
    },
  };

  const calls = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const { id, method, params = [] } = JSON.parse(body);
      calls.push(method);
      const f = methods[method];
      let out;
      try {
        out = f ? f(params) : { error: { code: -32601, message: `method ${method} not served by the stand-in` } };
      } catch (e) {
        out = { error: { code: -32603, message: String(e) } };
      }
      const reply = out && typeof out === "object" && "error" in out && Object.keys(out).length === 1
        ? { jsonrpc: "2.0", id, error: out.error } : { jsonrpc: "2.0", id, result: out ?? null };
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(reply));
    });
  });
  await new Promise((r) => server.listen(port, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${port}`,
    svm,
    calls,
    balance,
    // An airdrop is a transfer from LiteSVM's faucet, kept in the history like any transaction.
    airdrop(k, lamports) {
      const before = balance(k);
      const r = svm.inner.airdrop(new PublicKey(k).toBytes(), BigInt(lamports));
      if (!r || typeof r.err === "function") throw new Error(`airdrop failed: ${r}`);
      const signature = bs58.encode(r.signature());
      const rec = { signature, slot: ++slot, blockTime: 1_700_000_000 + slot, err: null, fee: 5000,
        keys: [FAUCET, k, "11111111111111111111111111111111"],
        header: { numRequiredSignatures: 1, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 1 },
        pre: [1e15, before, 1], post: [1e15 - lamports - 5000, balance(k), 1] };
      txs.push(rec);
      bySig.set(signature, rec);
      svm.expireBlockhash();
      return signature;
    },
    latestBlockhash: () => svm.latestBlockhash(),
    // Executes a signed wire transaction as sendTransaction does (for set-up outside Latchkey).
    sendRaw: (bytes) => send(Buffer.from(bytes).toString("base64")),
    close: () => new Promise((r) => server.close(r)),
  };
}
