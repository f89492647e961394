// Builds Solana transactions with @solana/web3.js and @solana/spl-token (versions pinned in
// package.json), signs only the Latchkey signer's slot with a fixed ed25519 seed, checks the
// signatures with the libraries' own verification, and prints the vectors as JSON.
// The Go tests read the committed output; they never run node.
'use strict';
const crypto = require('node:crypto');
const web3 = require('@solana/web3.js');
const spl = require('@solana/spl-token');

const seed = (b) => Buffer.alloc(32, b);
const latchkey = web3.Keypair.fromSeed(seed(7)); // the key Latchkey holds
const other = web3.Keypair.fromSeed(seed(9)); // a co-signer Latchkey does not hold
const pk = (b) => new web3.PublicKey(Buffer.alloc(32, b));
const blockhash = new web3.PublicKey(Buffer.alloc(32, 0x42)).toBase58();
const hex = (b) => Buffer.from(b).toString('hex');
const spki = (pub) => crypto.createPublicKey({
  key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), pub.toBuffer()]),
  format: 'der', type: 'spki',
});

// verifyVersioned checks every non-zero signature of a wire transaction against its signer.
function verifyVersioned(vtx) {
  const msg = vtx.message.serialize();
  const keys = vtx.message.staticAccountKeys;
  let checked = 0;
  vtx.signatures.forEach((sig, i) => {
    if (sig.every((x) => x === 0)) return;
    if (!crypto.verify(null, msg, spki(keys[i]), Buffer.from(sig))) throw new Error('bad signature in slot ' + i);
    checked++;
  });
  return checked;
}

function legacy(name, instructions, feePayer, note, expect) {
  const tx = new web3.Transaction({ feePayer, recentBlockhash: blockhash });
  tx.add(...instructions);
  const unsigned = tx.serialize({ requireAllSignatures: false, verifySignatures: false });
  tx.partialSign(latchkey);
  const signed = tx.serialize({ requireAllSignatures: false, verifySignatures: false });
  const back = web3.Transaction.from(signed);
  const verified = back.verifySignatures(false) && verifyVersioned(web3.VersionedTransaction.deserialize(signed)) >= 1;
  if (!verified) throw new Error(name + ': verification failed');
  return { name, note, version: 'legacy', unsigned_hex: hex(unsigned), signed_hex: hex(signed), verified, expect };
}

function v0(name, instructions, feePayer, luts, note, expect) {
  const message = new web3.TransactionMessage({ payerKey: feePayer, recentBlockhash: blockhash, instructions }).compileToV0Message(luts);
  const tx = new web3.VersionedTransaction(message);
  const unsigned = tx.serialize();
  tx.sign([latchkey]);
  const signed = tx.serialize();
  const verified = verifyVersioned(web3.VersionedTransaction.deserialize(signed)) >= 1;
  if (!verified) throw new Error(name + ': verification failed');
  return { name, note, version: 'v0', unsigned_hex: hex(unsigned), signed_hex: hex(signed), verified, expect };
}

const vectors = [];
const to = pk(0x11);

vectors.push(legacy('legacy_transfer',
  [web3.SystemProgram.transfer({ fromPubkey: latchkey.publicKey, toPubkey: to, lamports: 1234567 })],
  latchkey.publicKey, 'System Program transfer; Latchkey pays the fee and signs slot 0',
  { signer_index: 0, transfers: [{ from: latchkey.publicKey.toBase58(), to: to.toBase58(), amount: '1234567' }] }));

const lutKey = pk(0x21);
const lutAddrs = [pk(0x31), pk(0x32), pk(0x33)];
const lut = new web3.AddressLookupTableAccount({
  key: lutKey,
  state: { deactivationSlot: BigInt('18446744073709551615'), lastExtendedSlot: 0, lastExtendedSlotStartIndex: 0, authority: undefined, addresses: lutAddrs },
});
vectors.push(v0('v0_lookup_transfer',
  [
    web3.SystemProgram.transfer({ fromPubkey: latchkey.publicKey, toPubkey: lutAddrs[1], lamports: 5000 }),
    new web3.TransactionInstruction({ programId: pk(0x55), keys: [{ pubkey: lutAddrs[2], isSigner: false, isWritable: false }, { pubkey: latchkey.publicKey, isSigner: true, isWritable: true }], data: Buffer.from('deadbeef', 'hex') }),
  ],
  latchkey.publicKey, [lut], 'v0 message; the transfer recipient and one read-only account come from an address lookup table',
  { signer_index: 0, address_table_key: lutKey.toBase58(), transfers: [{ from: latchkey.publicKey.toBase58(), to: 'ADDRESS_TABLE_LOOKUP', amount: '5000' }] }));

vectors.push(legacy('multi_signer',
  [web3.SystemProgram.transfer({ fromPubkey: latchkey.publicKey, toPubkey: to, lamports: 42 })],
  other.publicKey, 'another key pays the fee (slot 0); Latchkey signs slot 1 and slot 0 stays zero',
  { signer_index: 1, other_signer: other.publicKey.toBase58(), transfers: [{ from: latchkey.publicKey.toBase58(), to: to.toBase58(), amount: '42' }] }));

const mint = pk(0x61), srcAta = pk(0x62), dstAta = pk(0x63);
vectors.push(legacy('spl_transfer_checked',
  [spl.createTransferCheckedInstruction(srcAta, mint, dstAta, latchkey.publicKey, 1000000n, 6)],
  latchkey.publicKey, 'SPL Token TransferChecked signed by the owner, who also pays the fee',
  { signer_index: 0, spl_transfers: [{ from: srcAta.toBase58(), to: dstAta.toBase58(), amount: '1000000', owner: latchkey.publicKey.toBase58(), token_mint: mint.toBase58() }] }));

vectors.push(legacy('token2022_transfer_checked_with_fee',
  [spl.createTransferCheckedWithFeeInstruction(srcAta, mint, dstAta, latchkey.publicKey, 777n, 9, 7n, [], spl.TOKEN_2022_PROGRAM_ID)],
  latchkey.publicKey, 'Token-2022 TransferCheckedWithFee',
  { signer_index: 0, spl_transfers: [{ from: srcAta.toBase58(), to: dstAta.toBase58(), amount: '777', owner: latchkey.publicKey.toBase58(), token_mint: mint.toBase58() }] }));

const fs = require('node:fs');
const path = require('node:path');
const pkgs = ['@solana/web3.js', '@solana/spl-token'].map((n) => n + '@' + JSON.parse(fs.readFileSync(path.join(__dirname, 'node_modules', n, 'package.json'))).version);
console.log(JSON.stringify({
  generator: 'testdata/gen/gen.js with ' + pkgs.join(', '),
  signer_seed_hex: hex(seed(7)), signer_pubkey: latchkey.publicKey.toBase58(),
  vectors,
}, null, 2));
