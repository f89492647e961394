// End-to-end vectors for the bitcoin package, made with bitcoinjs-lib, ecpair and
// tiny-secp256k1 (versions pinned in package.json). Two steps; the Go tests never run node.
//
//   node gen.js build  > ../psbts.json    PSBTs spending outputs of a fixed test key (and,
//                                          in one, an input of another key)
//   node gen.js verify < ../signed.json > ../verdict.json
//                                          takes the PSBTs the Go signer produced
//                                          (go test -run TestWriteSignedVectors with
//                                          LATCHKEY_WRITE_SIGNED=1), checks every signature
//                                          with bitcoinjs-lib, signs the other key's input,
//                                          finalizes and extracts the transaction.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const bitcoin = require('bitcoinjs-lib');
const ecc = require('tiny-secp256k1');
const { ECPairFactory } = require('ecpair');

bitcoin.initEccLib(ecc);
const ECPair = ECPairFactory(ecc);
const network = bitcoin.networks.bitcoin;
const mine = ECPair.fromPrivateKey(Buffer.alloc(32, 0x11), { network });
const other = ECPair.fromPrivateKey(Buffer.alloc(32, 0x22), { network });
const xonly = (pub) => Buffer.from(pub).subarray(1, 33);

function scriptFor(kind, key) {
  const pubkey = Buffer.from(key.publicKey);
  switch (kind) {
    case 'p2pkh': return { pay: bitcoin.payments.p2pkh({ pubkey, network }) };
    case 'p2wpkh': return { pay: bitcoin.payments.p2wpkh({ pubkey, network }) };
    case 'p2sh': {
      const redeem = bitcoin.payments.p2pk({ pubkey, network });
      return { pay: bitcoin.payments.p2sh({ redeem, network }), redeemScript: redeem.output };
    }
    case 'p2wsh': {
      const redeem = bitcoin.payments.p2pk({ pubkey, network });
      return { pay: bitcoin.payments.p2wsh({ redeem, network }), witnessScript: redeem.output };
    }
    case 'p2tr': return { pay: bitcoin.payments.p2tr({ internalPubkey: xonly(pubkey), network }), tapInternalKey: xonly(pubkey) };
    default: throw new Error(kind);
  }
}

// A previous transaction paying `value` to the script, so legacy inputs can carry it whole.
function prevTx(script, value, n) {
  const tx = new bitcoin.Transaction();
  tx.version = 2;
  tx.addInput(Buffer.alloc(32, n), 0);
  tx.addOutput(Buffer.from(script), value);
  return tx;
}

function build(name, note, inputs) {
  const psbt = new bitcoin.Psbt({ network });
  inputs.forEach(({ kind, key, value }, i) => {
    const s = scriptFor(kind, key);
    const prev = prevTx(s.pay.output, value, 0x30 + i);
    const input = { hash: prev.getId(), index: 0, sequence: 0xfffffffd };
    if (kind === 'p2pkh' || kind === 'p2sh') input.nonWitnessUtxo = prev.toBuffer();
    else input.witnessUtxo = { script: Buffer.from(s.pay.output), value };
    if (s.redeemScript) input.redeemScript = Buffer.from(s.redeemScript);
    if (s.witnessScript) input.witnessScript = Buffer.from(s.witnessScript);
    if (s.tapInternalKey) input.tapInternalKey = s.tapInternalKey;
    psbt.addInput(input);
  });
  psbt.addOutput({ address: bitcoin.payments.p2wpkh({ hash: Buffer.alloc(20, 0x5a), network }).address, value: 10000n });
  psbt.addOutput({ address: bitcoin.payments.p2tr({ internalPubkey: xonly(other.publicKey), network }).address, value: 5000n });
  psbt.setLocktime(800000);
  return {
    name, note,
    inputs: inputs.map(({ kind, key, value }) => ({ kind, mine: key === mine, value: value.toString() })),
    psbt_hex: psbt.toHex(),
  };
}

function buildAll() {
  const v = [];
  v.push(build('p2pkh', 'one legacy P2PKH input with non_witness_utxo', [{ kind: 'p2pkh', key: mine, value: 50000n }]));
  v.push(build('p2wpkh', 'one P2WPKH input with witness_utxo', [{ kind: 'p2wpkh', key: mine, value: 50000n }]));
  v.push(build('p2tr', 'one BIP-86 key-path P2TR input with tap_internal_key', [{ kind: 'p2tr', key: mine, value: 50000n }]));
  v.push(build('p2wsh', 'one P2WSH input, witness script <pk> OP_CHECKSIG', [{ kind: 'p2wsh', key: mine, value: 50000n }]));
  v.push(build('p2sh', 'one legacy P2SH input, redeem script <pk> OP_CHECKSIG', [{ kind: 'p2sh', key: mine, value: 50000n }]));
  v.push(build('mixed', 'P2WPKH of another key, then P2WPKH and P2TR of the test key', [
    { kind: 'p2wpkh', key: other, value: 30000n },
    { kind: 'p2wpkh', key: mine, value: 20000n },
    { kind: 'p2tr', key: mine, value: 40000n },
  ]));
  return v;
}

function verify(signed) {
  const results = signed.vectors.map((s) => {
    const psbt = bitcoin.Psbt.fromHex(s.signed_psbt_hex, { network });
    const checked = [];
    psbt.data.inputs.forEach((input, i) => {
      const has = (input.partialSig && input.partialSig.length) || input.tapKeySig;
      if (!has) return;
      const ok = psbt.validateSignaturesOfInput(i, (pubkey, hash, sig) =>
        pubkey.length === 32 ? ecc.verifySchnorr(hash, pubkey, sig) : ecc.verify(hash, pubkey, sig));
      if (!ok) throw new Error(s.name + ': input ' + i + ' signature invalid');
      checked.push(i);
    });
    // Inputs of the other key: bitcoinjs-lib signs them, so the transaction can be extracted whole.
    psbt.data.inputs.forEach((input, i) => {
      if (!checked.includes(i)) psbt.signInput(i, other);
    });
    psbt.finalizeAllInputs();
    const tx = psbt.extractTransaction();
    return { name: s.name, signed_inputs_validated: checked, finalized: true, txid: tx.getId(), tx_hex: tx.toHex() };
  });
  return results;
}

const pkgs = ['bitcoinjs-lib', 'ecpair', 'tiny-secp256k1'].map((n) =>
  n + '@' + JSON.parse(fs.readFileSync(path.join(__dirname, 'node_modules', n, 'package.json'))).version);
const generator = 'testdata/gen/gen.js with ' + pkgs.join(', ');

if (process.argv[2] === 'build') {
  console.log(JSON.stringify({
    generator,
    private_key_hex: '11'.repeat(32),
    public_key_hex: Buffer.from(mine.publicKey).toString('hex'),
    vectors: buildAll(),
  }, null, 2));
} else if (process.argv[2] === 'verify') {
  const signed = JSON.parse(fs.readFileSync(0, 'utf8'));
  console.log(JSON.stringify({ generator, verdicts: verify(signed) }, null, 2));
} else {
  console.error('usage: node gen.js build | verify');
  process.exit(2);
}
