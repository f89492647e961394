// Wallets end to end: wallets, signing with the real @turnkey/viem and @turnkey/solana signers,
// export decrypted by @turnkey/crypto, import encrypted by @turnkey/crypto.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createAccount } from "@turnkey/viem";
import { TurnkeySigner } from "@turnkey/solana";
import { generateP256KeyPair, decryptExportBundle, encryptWalletToBundle, verifyAppProofSignature } from "@turnkey/crypto";
import { verifyMessage } from "viem";
import { mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { PublicKey, SystemProgram, Transaction } from "@solana/web3.js";
import { startLatchkey } from "./lib.mjs";

let lk, client;
const secrets = [];
const ETH = { curve: "CURVE_SECP256K1", pathFormat: "PATH_FORMAT_BIP32", path: "m/44'/60'/0'/0/0", addressFormat: "ADDRESS_FORMAT_ETHEREUM" };
const SOL = { curve: "CURVE_ED25519", pathFormat: "PATH_FORMAT_BIP32", path: "m/44'/501'/0'/0'", addressFormat: "ADDRESS_FORMAT_SOLANA" };

before(async () => {
  lk = await startLatchkey();
  client = lk.client();
});

after(async () => {
  assert.equal(await lk.stop(), 0);
});

test("viem account signs a message that viem verifies; the exported mnemonic derives the same address", async () => {
  const w = await client.createWallet({ walletName: "viem wallet", accounts: [ETH, SOL] });
  const [ethAddress] = w.addresses;
  const account = await createAccount({ client, organizationId: lk.creds.organizationId, signWith: ethAddress });
  assert.equal(account.address, ethAddress);
  const signature = await account.signMessage({ message: "hello latchkey" });
  assert.ok(await verifyMessage({ address: ethAddress, message: "hello latchkey", signature }));

  const target = generateP256KeyPair();
  const exp = await client.exportWallet({ walletId: w.walletId, targetPublicKey: target.publicKeyUncompressed });
  const mnemonic = await decryptExportBundle({
    exportBundle: exp.exportBundle, embeddedKey: target.privateKey, organizationId: lk.creds.organizationId,
    returnMnemonic: true, dangerouslyOverrideSignerPublicKey: lk.keys.signerPublicKey,
  });
  secrets.push(mnemonic);
  assert.equal(mnemonic.trim().split(/\s+/).length, 12);
  assert.equal(mnemonicToAccount(mnemonic).address, ethAddress);
  const got = await client.getWallet({ walletId: w.walletId });
  assert.equal(got.wallet.exported, true);
});

test("an imported mnemonic gives the addresses a local library derives", async () => {
  const mnemonic = "test test test test test test test test test test test junk";
  const { importBundle } = await client.initImportWallet({ userId: lk.creds.userId });
  const encryptedBundle = await encryptWalletToBundle({
    mnemonic, importBundle, userId: lk.creds.userId, organizationId: lk.creds.organizationId,
    dangerouslyOverrideSignerPublicKey: lk.keys.signerPublicKey,
  });
  const res = await client.importWallet({ userId: lk.creds.userId, walletName: "imported", encryptedBundle, accounts: [ETH] });
  assert.equal(res.addresses[0], mnemonicToAccount(mnemonic).address);
  const w = await client.getWallet({ walletId: res.walletId });
  assert.equal(w.wallet.imported, true);
});

test("@turnkey/solana signs a transaction that @solana/web3.js verifies", async () => {
  const w = await client.createWallet({ walletName: "sol wallet", accounts: [SOL] });
  const from = new PublicKey(w.addresses[0]);
  const tx = new Transaction({ feePayer: from, recentBlockhash: "11111111111111111111111111111111" }).add(
    SystemProgram.transfer({ fromPubkey: from, toPubkey: new PublicKey("11111111111111111111111111111112"), lamports: 1000 }),
  );
  const signer = new TurnkeySigner({ organizationId: lk.creds.organizationId, client });
  await signer.addSignature(tx, w.addresses[0]);
  assert.ok(tx.verifySignatures(), "signature must verify");
});

test("a private key exported and decrypted matches its address", async () => {
  const k = await client.createPrivateKeys({ privateKeys: [{ privateKeyName: "e2e key", curve: "CURVE_SECP256K1", privateKeyTags: [], addressFormats: ["ADDRESS_FORMAT_ETHEREUM"] }] });
  const { privateKeyId, addresses } = k.privateKeys[0];
  const target = generateP256KeyPair();
  const exp = await client.exportPrivateKey({ privateKeyId, targetPublicKey: target.publicKeyUncompressed });
  const hex = await decryptExportBundle({
    exportBundle: exp.exportBundle, embeddedKey: target.privateKey, organizationId: lk.creds.organizationId,
    returnMnemonic: false, dangerouslyOverrideSignerPublicKey: lk.keys.signerPublicKey,
  });
  secrets.push(hex);
  assert.equal(privateKeyToAccount(`0x${hex}`).address, addresses[0].address);
  const account = await createAccount({ client, organizationId: lk.creds.organizationId, signWith: privateKeyId });
  const signature = await account.signMessage({ message: "by key id" });
  assert.ok(await verifyMessage({ address: addresses[0].address, message: "by key id", signature }));
});

test("app proofs of address derivation pass @turnkey/crypto's verifyAppProofSignature", async () => {
  const w = await client.createWallet({ walletName: "proved", accounts: [ETH, SOL], generateAppProofs: true });
  const proofs = w.activity.appProofs;
  assert.equal(proofs.length, 2);
  for (const p of proofs) {
    verifyAppProofSignature(p); // throws when the signature does not verify
    const payload = JSON.parse(p.proofPayload);
    assert.equal(payload.type, "APP_PROOF_TYPE_ADDRESS_DERIVATION");
    assert.ok(w.addresses.includes(payload.addressDerivationProof.address));
  }
});

test("no mnemonic or private key in the database file or the logs", () => {
  const all = lk.allBytes();
  for (const s of secrets) {
    assert.ok(!all.includes(Buffer.from(s)), "secret found in clear");
    if (/^[0-9a-f]+$/.test(s)) assert.ok(!all.includes(Buffer.from(s, "hex")), "secret found in clear (raw bytes)");
  }
});
