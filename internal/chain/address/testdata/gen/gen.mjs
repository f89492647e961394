// Generates internal/chain/address/testdata/addresses.json: for fixed test keys, the address each
// chain's own reference library computes. Run with `npm install && node gen.mjs > ../addresses.json`
// (see README.md). The Go tests read only the committed JSON; they never run node.
import { createRequire } from "node:module";
import crypto from "node:crypto";
const require = createRequire(import.meta.url);
import fs from "node:fs";
const pkg = (name) => JSON.parse(fs.readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url))).version;
const lib = (name) => `${name}@${pkg(name)}`;

const ecc = require("tiny-secp256k1");
const bitcoin = require("bitcoinjs-lib");
bitcoin.initEccLib(ecc);
const { computeAddress } = require("ethers");
const { Keypair: SolKeypair } = require("@solana/web3.js");
const { pubkeyToAddress } = require("@cosmjs/amino");
const { toBase64 } = require("@cosmjs/encoding");
const { TronWeb } = require("tronweb");
const { Ed25519Keypair } = await import("@mysten/sui/keypairs/ed25519");
const { Ed25519PrivateKey, Account } = await import("@aptos-labs/ts-sdk");
const StellarBase = require("@stellar/stellar-base");
const rippleKeypairs = require("ripple-keypairs");
const { WalletContractV3R2, WalletContractV4, WalletContractV5R1 } = require("@ton/ton");
const { keyPairFromSeed } = require("@ton/crypto");
const spark = await import("@buildonspark/spark-sdk");

const hex = (b) => Buffer.from(b).toString("hex");
const rows = [];
const add = (format, curve, key, publicKey, address, library, note) =>
  rows.push({ format, curve, key, publicKey, address, library, ...(note ? { note } : {}) });

// secp256k1 private keys: 1 (the generator), the BIP-32 vector-1 master key, n-1.
const secpKeys = [
  "0000000000000000000000000000000000000000000000000000000000000001",
  "e8f32e723decf4051aefac8e2c93c9c5b214313817cdb01a1494b917c8436b35",
  "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140",
];
// Ed25519 seeds: RFC 8032 test 1 and test 2 secret keys, and 32 x 0x07.
const edSeeds = [
  "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
  "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
  "0707070707070707070707070707070707070707070707070707070707070707",
];
// P-256 private keys.
const p256Keys = [
  "c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721",
  "0000000000000000000000000000000000000000000000000000000000000001",
];

const btcNets = {
  MAINNET: bitcoin.networks.bitcoin,
  TESTNET: bitcoin.networks.testnet,
  SIGNET: bitcoin.networks.testnet, // signet shares testnet's version bytes and the "tb" HRP
  REGTEST: bitcoin.networks.regtest,
};
const dogeMain = { messagePrefix: "\x19Dogecoin Signed Message:\n", bech32: "doge", bip32: { public: 0x02facafd, private: 0x02fac398 }, pubKeyHash: 0x1e, scriptHash: 0x16, wif: 0x9e };
const dogeTest = { messagePrefix: "\x19Dogecoin Signed Message:\n", bech32: "tdge", bip32: { public: 0x043587cf, private: 0x04358394 }, pubKeyHash: 0x71, scriptHash: 0xc4, wif: 0xf1 };

for (const k of secpKeys) {
  const priv = Buffer.from(k, "hex");
  const pub = Buffer.from(ecc.pointFromScalar(priv, true));
  const unc = Buffer.from(ecc.pointFromScalar(priv, false));
  const c = "CURVE_SECP256K1";
  add("ADDRESS_FORMAT_COMPRESSED", c, k, hex(pub), hex(pub), lib("tiny-secp256k1"));
  add("ADDRESS_FORMAT_UNCOMPRESSED", c, k, hex(pub), hex(unc), lib("tiny-secp256k1"));
  add("ADDRESS_FORMAT_ETHEREUM", c, k, hex(pub), computeAddress("0x" + hex(pub)), lib("ethers"));
  const b64 = toBase64(pub);
  add("ADDRESS_FORMAT_COSMOS", c, k, hex(pub), pubkeyToAddress({ type: "tendermint/PubKeySecp256k1", value: b64 }, "cosmos"), lib("@cosmjs/amino"));
  add("ADDRESS_FORMAT_SEI", c, k, hex(pub), pubkeyToAddress({ type: "tendermint/PubKeySecp256k1", value: b64 }, "sei"), lib("@cosmjs/amino"));
  add("ADDRESS_FORMAT_TRON", c, k, hex(pub), TronWeb.address.fromPrivateKey(k), lib("tronweb"));
  add("ADDRESS_FORMAT_XRP", c, k, hex(pub), rippleKeypairs.deriveAddress(hex(pub).toUpperCase()), lib("ripple-keypairs"));
  add("ADDRESS_FORMAT_DOGE_MAINNET", c, k, hex(pub), bitcoin.payments.p2pkh({ pubkey: pub, network: dogeMain }).address, lib("bitcoinjs-lib"), "p2pkh with Dogecoin version byte 0x1e");
  add("ADDRESS_FORMAT_DOGE_TESTNET", c, k, hex(pub), bitcoin.payments.p2pkh({ pubkey: pub, network: dogeTest }).address, lib("bitcoinjs-lib"), "p2pkh with Dogecoin testnet version byte 0x71");
  for (const [net, network] of Object.entries(btcNets)) {
    const f = (t) => `ADDRESS_FORMAT_BITCOIN_${net}_${t}`;
    add(f("P2PKH"), c, k, hex(pub), bitcoin.payments.p2pkh({ pubkey: pub, network }).address, lib("bitcoinjs-lib"));
    add(f("P2SH"), c, k, hex(pub), bitcoin.payments.p2sh({ redeem: bitcoin.payments.p2wpkh({ pubkey: pub, network }), network }).address, lib("bitcoinjs-lib"), "P2SH-P2WPKH (redeem script 0 <hash160(pk)>)");
    add(f("P2WPKH"), c, k, hex(pub), bitcoin.payments.p2wpkh({ pubkey: pub, network }).address, lib("bitcoinjs-lib"));
    add(f("P2WSH"), c, k, hex(pub), bitcoin.payments.p2wsh({ redeem: bitcoin.payments.p2pk({ pubkey: pub, network }), network }).address, lib("bitcoinjs-lib"), "witness script <pk> OP_CHECKSIG");
    add(f("P2TR"), c, k, hex(pub), bitcoin.payments.p2tr({ internalPubkey: pub.subarray(1), network }).address, lib("bitcoinjs-lib"), "BIP-86 key-path output, no script tree");
  }
  add("ADDRESS_FORMAT_SPARK_MAINNET", c, k, hex(pub), spark.encodeSparkAddress({ identityPublicKey: hex(pub), network: "MAINNET" }), lib("@buildonspark/spark-sdk"));
  add("ADDRESS_FORMAT_SPARK_REGTEST", c, k, hex(pub), spark.encodeSparkAddress({ identityPublicKey: hex(pub), network: "REGTEST" }), lib("@buildonspark/spark-sdk"));
}

for (const s of edSeeds) {
  const seed = Buffer.from(s, "hex");
  const c = "CURVE_ED25519";
  const sol = SolKeypair.fromSeed(seed);
  const pub = Buffer.from(sol.publicKey.toBytes());
  add("ADDRESS_FORMAT_COMPRESSED", c, s, hex(pub), hex(pub), lib("@solana/web3.js"));
  add("ADDRESS_FORMAT_SOLANA", c, s, hex(pub), sol.publicKey.toBase58(), lib("@solana/web3.js"));
  add("ADDRESS_FORMAT_SUI", c, s, hex(pub), Ed25519Keypair.fromSecretKey(seed).getPublicKey().toSuiAddress(), lib("@mysten/sui"));
  const apt = Account.fromPrivateKey({ privateKey: new Ed25519PrivateKey("0x" + s) });
  add("ADDRESS_FORMAT_APTOS", c, s, hex(pub), apt.accountAddress.toStringLong(), lib("@aptos-labs/ts-sdk"));
  add("ADDRESS_FORMAT_XLM", c, s, hex(pub), StellarBase.Keypair.fromRawEd25519Seed(seed).publicKey(), lib("@stellar/stellar-base"));
  const tk = keyPairFromSeed(seed);
  if (hex(tk.publicKey) !== hex(pub)) throw new Error("ton key mismatch");
  const flags = { urlSafe: true, bounceable: false, testOnly: false };
  const w3 = WalletContractV3R2.create({ workchain: 0, publicKey: tk.publicKey });
  add("ADDRESS_FORMAT_TON_V3R2", c, s, hex(pub), w3.address.toString(flags), lib("@ton/ton"), `walletId ${w3.walletId}; raw ${w3.address.toRawString()}; bounceable ${w3.address.toString({ urlSafe: true, bounceable: true })}`);
  const w4 = WalletContractV4.create({ workchain: 0, publicKey: tk.publicKey });
  add("ADDRESS_FORMAT_TON_V4R2", c, s, hex(pub), w4.address.toString(flags), lib("@ton/ton"), `walletId ${w4.walletId}; raw ${w4.address.toRawString()}; bounceable ${w4.address.toString({ urlSafe: true, bounceable: true })}`);
  const w5 = WalletContractV5R1.create({ workchain: 0, publicKey: tk.publicKey });
  add("ADDRESS_FORMAT_TON_V5R1", c, s, hex(pub), w5.address.toString(flags), lib("@ton/ton"), `default walletId (mainnet global id -239, workchain 0, subwallet 0); raw ${w5.address.toRawString()}; bounceable ${w5.address.toString({ urlSafe: true, bounceable: true })}`);
}

for (const k of p256Keys) {
  const ecdh = crypto.createECDH("prime256v1");
  ecdh.setPrivateKey(Buffer.from(k, "hex"));
  const pub = ecdh.getPublicKey("hex", "compressed");
  add("ADDRESS_FORMAT_COMPRESSED", "CURVE_P256", k, pub, pub, `node:crypto@${process.versions.node}`);
  add("ADDRESS_FORMAT_UNCOMPRESSED", "CURVE_P256", k, pub, ecdh.getPublicKey("hex", "uncompressed"), `node:crypto@${process.versions.node}`);
}

process.stdout.write(JSON.stringify({
  generator: "internal/chain/address/testdata/gen/gen.mjs",
  note: "key is the secp256k1/P-256 private scalar or the Ed25519 seed (hex); publicKey is what Derive takes",
  rows,
}, null, 1) + "\n");
