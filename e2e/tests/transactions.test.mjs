// Transaction signing end to end: sign_transaction for Solana (through @turnkey/solana) and Bitcoin (a PSBT
// built, finalized and verified by bitcoinjs-lib).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { TurnkeySigner } from "@turnkey/solana";
import { PublicKey, SystemProgram, Transaction, TransactionMessage, VersionedTransaction } from "@solana/web3.js";
import * as bitcoin from "bitcoinjs-lib";
import * as ecc from "tiny-secp256k1";
import { startLatchkey } from "./lib.mjs";

bitcoin.initEccLib(ecc);
let lk, client;

before(async () => {
  lk = await startLatchkey();
  client = lk.client();
});

after(async () => {
  assert.equal(await lk.stop(), 0);
});

test("@turnkey/solana signTransaction (sign_transaction) gives transactions web3.js verifies, legacy and v0", async () => {
  const w = await client.createWallet({ walletName: "sol tx", accounts: [{ curve: "CURVE_ED25519", pathFormat: "PATH_FORMAT_BIP32", path: "m/44'/501'/0'/0'", addressFormat: "ADDRESS_FORMAT_SOLANA" }] });
  const from = new PublicKey(w.addresses[0]);
  const to = new PublicKey("11111111111111111111111111111112");
  const signer = new TurnkeySigner({ organizationId: lk.creds.organizationId, client });

  const legacy = new Transaction({ feePayer: from, recentBlockhash: "11111111111111111111111111111111" }).add(SystemProgram.transfer({ fromPubkey: from, toPubkey: to, lamports: 5000 }));
  const signedLegacy = await signer.signTransaction(legacy, w.addresses[0]);
  assert.ok(signedLegacy.verifySignatures());

  const msg = new TransactionMessage({ payerKey: from, recentBlockhash: "11111111111111111111111111111111", instructions: [SystemProgram.transfer({ fromPubkey: from, toPubkey: to, lamports: 7 })] }).compileToV0Message();
  const v0 = await signer.signTransaction(new VersionedTransaction(msg), w.addresses[0]);
  const { ed25519 } = await import("@noble/curves/ed25519");
  assert.ok(ed25519.verify(v0.signatures[0], v0.message.serialize(), from.toBytes()));
});

test("a Bitcoin PSBT signed by Latchkey finalizes and its signatures verify (P2WPKH and P2TR)", async () => {
  const w = await client.createWallet({
    walletName: "btc",
    accounts: [
      { curve: "CURVE_SECP256K1", pathFormat: "PATH_FORMAT_BIP32", path: "m/84'/0'/0'/0/0", addressFormat: "ADDRESS_FORMAT_BITCOIN_MAINNET_P2WPKH" },
      { curve: "CURVE_SECP256K1", pathFormat: "PATH_FORMAT_BIP32", path: "m/86'/0'/0'/0/0", addressFormat: "ADDRESS_FORMAT_BITCOIN_MAINNET_P2TR" },
    ],
  });
  for (const [i, address] of w.addresses.entries()) {
    const accounts = await client.getWalletAccounts({ walletId: w.walletId });
    const account = accounts.accounts.find((a) => a.address === address);
    const script = bitcoin.address.toOutputScript(address, bitcoin.networks.bitcoin);
    const psbt = new bitcoin.Psbt({ network: bitcoin.networks.bitcoin });
    const input = { hash: Buffer.alloc(32, i + 1).toString("hex"), index: 0, witnessUtxo: { script, value: 100000n } };
    if (i === 1) input.tapInternalKey = Buffer.from(account.publicKey, "hex").subarray(1, 33);
    psbt.addInput(input);
    psbt.addOutput({ address: "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", value: 90000n });
    const res = await client.signTransaction({ signWith: address, unsignedTransaction: psbt.toHex(), type: "TRANSACTION_TYPE_BITCOIN" });
    const signed = bitcoin.Psbt.fromHex(res.signedTransaction, { network: bitcoin.networks.bitcoin });
    assert.ok(signed.validateSignaturesOfAllInputs((pubkey, msghash, signature) =>
      pubkey.length === 32 ? ecc.verifySchnorr(msghash, pubkey, signature) : ecc.verify(msghash, pubkey, signature)));
    signed.finalizeAllInputs();
    const tx = signed.extractTransaction();
    assert.ok(tx.ins[0].witness.length > 0);
  }
});

test("malformed transactions get a clear 400 and unknown types a clear refusal", async () => {
  const w = await client.createWallet({ walletName: "bad", accounts: [{ curve: "CURVE_ED25519", pathFormat: "PATH_FORMAT_BIP32", path: "m/44'/501'/0'/0'", addressFormat: "ADDRESS_FORMAT_SOLANA" }] });
  await assert.rejects(client.signTransaction({ signWith: w.addresses[0], unsignedTransaction: "00ff", type: "TRANSACTION_TYPE_SOLANA" }), /Turnkey error 3/);
  await assert.rejects(client.signTransaction({ signWith: w.addresses[0], unsignedTransaction: "zz", type: "TRANSACTION_TYPE_SOLANA" }), /parameters.unsignedTransaction/);
});
