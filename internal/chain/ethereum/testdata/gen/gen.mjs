// Generates the ethereum, tron and tempo test vectors for internal/chain/*/testdata.
// Usage: node gen.mjs <outdir>   (writes ethereum.json, tron.json, tempo.json)
import fs from 'node:fs'
import {
  serializeTransaction, keccak256, hashTypedData, serializeTypedData, parseEther, parseGwei,
  recoverTypedDataAddress, encodeFunctionData, getTypesForEIP712Domain, erc20Abi, parseTransaction, recoverTransactionAddress,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { hashAuthorization, recoverAuthorizationAddress, verifyAuthorization } from 'viem/utils'
import { TypedDataEncoder, Transaction as EthersTx } from 'ethers'
import { TxEnvelopeTempo } from 'ox/tempo'
import { Secp256k1 } from 'ox'
import { TronWeb, utils as tronUtils } from 'tronweb'

const out = process.argv[2] || '.'
const PK = '0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318'
const account = privateKeyToAccount(PK)
const to = '0x3535353535353535353535353535353535353535'
const usdc = '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48'
const erc20Data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, 1234567n] })

// ---- Ethereum transactions ----
const txs = [
  { name: 'legacy eip155', tx: { type: 'legacy', chainId: 1, nonce: 9, gasPrice: parseGwei('20'), gas: 21000n, to, value: parseEther('1') } },
  { name: 'legacy pre-155', tx: { type: 'legacy', nonce: 0, gasPrice: parseGwei('1'), gas: 21000n, to, value: 1n } },
  { name: 'legacy contract creation', tx: { type: 'legacy', chainId: 11155111, nonce: 1, gasPrice: 1n, gas: 100000n, data: '0x6080604052' } },
  { name: 'eip2930 access list', tx: { type: 'eip2930', chainId: 137, nonce: 3, gasPrice: parseGwei('30'), gas: 50000n, to, value: 0n, data: '0xdeadbeef',
      accessList: [{ address: usdc, storageKeys: ['0x0000000000000000000000000000000000000000000000000000000000000001'] }] } },
  { name: 'eip1559 erc20 transfer', tx: { type: 'eip1559', chainId: 1, nonce: 42, maxFeePerGas: parseGwei('40'), maxPriorityFeePerGas: parseGwei('2'), gas: 65000n, to: usdc, value: 0n, data: erc20Data } },
  { name: 'eip1559 zero fields', tx: { type: 'eip1559', chainId: 8453, nonce: 0, maxFeePerGas: 0n, maxPriorityFeePerGas: 0n, gas: 21000n, to, value: 0n } },
  { name: 'eip4844 body', tx: { type: 'eip4844', chainId: 1, nonce: 5, maxFeePerGas: parseGwei('50'), maxPriorityFeePerGas: parseGwei('1'), maxFeePerBlobGas: parseGwei('3'), gas: 100000n, to, value: 0n, data: '0x',
      blobVersionedHashes: ['0x01a915e4d060149eb4365960e6a7a45f334393093061116b197e3240065ff2d8', '0x0100000000000000000000000000000000000000000000000000000000000002'] } },
]
const auth7702 = await account.signAuthorization({ address: '0x63c0c19a282a1B52b07dD5a65b58948A07DAE32B', chainId: 1, nonce: 43 })
txs.push({ name: 'eip7702 set code', tx: { type: 'eip7702', chainId: 1, nonce: 42, maxFeePerGas: parseGwei('40'), maxPriorityFeePerGas: parseGwei('2'), gas: 100000n, to: account.address, value: 0n, data: '0x', authorizationList: [auth7702] } })

const ethTxs = []
for (const { name, tx } of txs) {
  const unsigned = serializeTransaction(tx)
  const signed = await account.signTransaction(tx)
  const recovered = await recoverTransactionAddress({ serializedTransaction: signed })
  if (recovered !== account.address) throw new Error('recover mismatch ' + name)
  // ethers cross-check: same unsigned bytes and signing hash
  const etx = EthersTx.from(signed)
  if (etx.from !== account.address) throw new Error('ethers from mismatch ' + name)
  if (etx.unsignedHash !== keccak256(unsigned)) throw new Error('ethers unsigned hash mismatch ' + name)
  ethTxs.push({ name, unsigned, signingHash: keccak256(unsigned), signed, from: account.address })
}

// ---- EIP-712 ----
const mail = {
  domain: { name: 'Ether Mail', version: '1', chainId: 1, verifyingContract: '0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC' },
  types: {
    Person: [{ name: 'name', type: 'string' }, { name: 'wallet', type: 'address' }],
    Mail: [{ name: 'from', type: 'Person' }, { name: 'to', type: 'Person' }, { name: 'contents', type: 'string' }],
  },
  primaryType: 'Mail',
  message: { from: { name: 'Cow', wallet: '0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826' }, to: { name: 'Bob', wallet: '0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB' }, contents: 'Hello, Bob!' },
}
const permit2 = {
  domain: { name: 'Permit2', chainId: 1, verifyingContract: '0x000000000022D473030F116dDEE9F6B43aC78BA3' },
  types: {
    PermitBatch: [{ name: 'details', type: 'PermitDetails[]' }, { name: 'spender', type: 'address' }, { name: 'sigDeadline', type: 'uint256' }],
    PermitDetails: [{ name: 'token', type: 'address' }, { name: 'amount', type: 'uint160' }, { name: 'expiration', type: 'uint48' }, { name: 'nonce', type: 'uint48' }],
  },
  primaryType: 'PermitBatch',
  message: {
    details: [
      { token: usdc, amount: 1461501637330902918203684832716283019655932542975n, expiration: 1735689600, nonce: 0 },
      { token: '0xdAC17F958D2ee523a2206206994597C13D831ec7', amount: 1000000n, expiration: 1735689600, nonce: 7 },
    ],
    spender: '0x3fC91A3afd70395Cd496C647d5a6CC9D4B2b7FAD',
    sigDeadline: 1735693200n,
  },
}
const kitchen = {
  domain: { name: 'Kitchen', version: '2', chainId: 11155111, verifyingContract: '0x1111111111111111111111111111111111111111', salt: '0x000000000000000000000000000000000000000000000000000000000000abcd' },
  types: {
    Order: [
      { name: 'id', type: 'bytes32' }, { name: 'blob', type: 'bytes' }, { name: 'delta', type: 'int256' }, { name: 'small', type: 'int8' },
      { name: 'ok', type: 'bool' }, { name: 'tags', type: 'string[]' }, { name: 'grid', type: 'uint256[2][]' }, { name: 'items', type: 'Item[3]' },
      { name: 'b4', type: 'bytes4' },
    ],
    Item: [{ name: 'who', type: 'address' }, { name: 'qty', type: 'uint8' }],
  },
  primaryType: 'Order',
  message: {
    id: '0xABCDEF0000000000000000000000000000000000000000000000000000000001', blob: '0xDEADBEEF00', delta: -123456789012345678901234567890n, small: -128,
    ok: true, tags: ['a', '', 'ünïcode'], grid: [[1n, 2n], [3n, 4n], [5n, 6n]],
    items: [{ who: to, qty: 1 }, { who: usdc, qty: 255 }, { who: '0x0000000000000000000000000000000000000000', qty: 0 }],
    b4: '0xa9059cbb',
  },
}
const typed = []
for (const [name, td] of [['eip-712 mail', mail], ['permit2 batch', permit2], ['kitchen sink', kitchen]]) {
  const digest = hashTypedData(td)
  const sig = await account.signTypedData(td)
  const rec = await recoverTypedDataAddress({ ...td, signature: sig })
  if (rec !== account.address) throw new Error('typed recover mismatch')
  const ethersPayload = JSON.stringify(TypedDataEncoder.getPayload(td.domain, td.types, td.message))
  if (TypedDataEncoder.hash(td.domain, td.types, td.message) !== digest) throw new Error('ethers digest mismatch ' + name)
  // viem's walletClient.signTypedData adds EIP712Domain to types before it calls the account's
  // signTypedData, which is where @turnkey/viem serializes the payload.
  const viemPayload = serializeTypedData({ ...td, types: { EIP712Domain: getTypesForEIP712Domain({ domain: td.domain }), ...td.types } })
  typed.push({ name, viemPayload, ethersPayload, digest, signature: sig })
}

// ---- EIP-7702 authorization (payload as @turnkey/viem signAuthorization builds it) ----
const auths = []
for (const a of [{ address: '0x63c0c19a282a1B52b07dD5a65b58948A07DAE32B', chainId: 1, nonce: 43 }, { address: '0x000000000000000000000000000000000000dEaD', chainId: 0, nonce: 0 }]) {
  const signedAuth = await account.signAuthorization(a)
  const recovered = await recoverAuthorizationAddress({ authorization: signedAuth })
  const ok = await verifyAuthorization({ address: account.address, authorization: signedAuth })
  if (!ok || recovered !== account.address) throw new Error('authorization does not verify')
  auths.push({ payload: JSON.stringify({ address: a.address, chainId: a.chainId, nonce: a.nonce }), digest: hashAuthorization(a),
    r: signedAuth.r, s: signedAuth.s, yParity: signedAuth.yParity, recoveredAddress: recovered, verifyAuthorization: ok })
}

fs.writeFileSync(`${out}/ethereum.json`, JSON.stringify({
  source: 'generated by gen.mjs with viem 2.57.20 (serializeTransaction, signTransaction, hashTypedData, signTypedData, signAuthorization, verifyAuthorization) and ethers 6.17.0 (cross-check, TypedDataEncoder.getPayload)',
  privateKey: PK, address: account.address, transactions: ethTxs, typedData: typed, authorizations: auths,
}, null, 2) + '\n')

// ---- Tempo (0x76) ----
const tempoCases = [
  { name: 'single call with fee token', env: { chainId: 4217, calls: [{ to: usdc, data: erc20Data }], nonce: 7n, nonceKey: 0n, gas: 100000n, maxFeePerGas: parseGwei('20'), maxPriorityFeePerGas: parseGwei('1'), feeToken: '0x20c0000000000000000000000000000000000001' } },
  { name: 'batch with validity window', env: { chainId: 42431, calls: [{ to, value: 5n }, { to: usdc, data: '0xa9059cbb' }, { data: '0x6080' }], nonce: 0n, nonceKey: 5n, gas: 250000n, maxFeePerGas: 1000n, maxPriorityFeePerGas: 0n, validAfter: 1700000000, validBefore: 1900000000,
      accessList: [{ address: to, storageKeys: [] }] } },
  { name: 'fee payer signed', env: { chainId: 4217, calls: [{ to: usdc, data: erc20Data }], nonce: 2n, gas: 90000n, maxFeePerGas: 10n, maxPriorityFeePerGas: 1n, feeToken: '0x20c0000000000000000000000000000000000001',
      feePayerSignature: { r: 0x1111111111111111111111111111111111111111111111111111111111111111n, s: 0x2222222222222222222222222222222222222222222222222222222222222222n, yParity: 1 } } },
  { name: 'fee payer marker', env: { chainId: 4217, calls: [{ to, value: 1n }], nonce: 1n, gas: 30000n, maxFeePerGas: 10n, maxPriorityFeePerGas: 1n, feePayerSignature: null } },
]
const tempo = []
for (const { name, env } of tempoCases) {
  const e = TxEnvelopeTempo.from({ ...env, type: 'tempo' })
  const unsigned = TxEnvelopeTempo.serialize(e)
  const payload = TxEnvelopeTempo.getSignPayload(e)
  const signature = Secp256k1.sign({ payload, privateKey: PK })
  const signed = TxEnvelopeTempo.serialize(e, { signature: { type: 'secp256k1', signature } })
  const back = TxEnvelopeTempo.deserialize(signed)
  if (back.from && back.from.toLowerCase() !== account.address.toLowerCase()) throw new Error('tempo from mismatch')
  const recovered = Secp256k1.recoverAddress({ payload, signature })
  tempo.push({ name, unsigned, signingHash: payload, signed, from: account.address, recovered })
}
fs.writeFileSync(`${out}/tempo.json`, JSON.stringify({
  source: 'generated by gen.mjs with ox 0.14.67 (ox/tempo TxEnvelopeTempo.serialize/getSignPayload, the encoder viem 2.57.20 uses for Tempo) and ox Secp256k1.sign (RFC 6979)',
  privateKey: PK, address: account.address, transactions: tempo,
}, null, 2) + '\n')

// ---- Tron ----
const tronPK = PK.slice(2)
const owner = TronWeb.address.fromPrivateKey(tronPK)
const ownerHex = TronWeb.address.toHex(owner)
const toTron = 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy'
const usdt = 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t'
const abi = tronUtils.abi
const trc20Param = abi.encodeParams(['address', 'uint256'], ['0x' + TronWeb.address.toHex(toTron).slice(2), 1000000n]).slice(2)
const tronCases = [
  { name: 'trx transfer', raw: { contract: [{ parameter: { value: { amount: 1500000, owner_address: ownerHex, to_address: TronWeb.address.toHex(toTron) }, type_url: 'type.googleapis.com/protocol.TransferContract' }, type: 'TransferContract' }],
      ref_block_bytes: '8a3c', ref_block_hash: 'b7a1f3a0c1d2e3f4', expiration: 1763800000000, timestamp: 1763799940000 } },
  { name: 'trc20 transfer', raw: { contract: [{ parameter: { value: { data: 'a9059cbb' + trc20Param, owner_address: ownerHex, contract_address: TronWeb.address.toHex(usdt), call_value: 0 }, type_url: 'type.googleapis.com/protocol.TriggerSmartContract' }, type: 'TriggerSmartContract' }],
      ref_block_bytes: '0102', ref_block_hash: '0011223344556677', expiration: 1763800060000, timestamp: 1763800000123, fee_limit: 100000000, data: Buffer.from('invoice 42').toString('hex') } },
  { name: 'freeze balance v2', raw: { contract: [{ parameter: { value: { owner_address: ownerHex, frozen_balance: 10000000, resource: 'ENERGY' }, type_url: 'type.googleapis.com/protocol.FreezeBalanceV2Contract' }, type: 'FreezeBalanceV2Contract' }],
      ref_block_bytes: 'ffff', ref_block_hash: '8899aabbccddeeff', expiration: 1763800120000, timestamp: 1763800060000 } },
]
const tron = []
for (const { name, raw } of tronCases) {
  const tx = { visible: false, raw_data: raw }
  const pb = tronUtils.transaction.txJsonToPb(tx)
  const rawHex = tronUtils.transaction.txPbToRawDataHex(pb).toLowerCase()
  const txID = tronUtils.transaction.txPbToTxID(pb).replace(/^0x/, '')
  tx.txID = txID; tx.raw_data_hex = rawHex
  const signedTx = tronUtils.crypto.signTransaction(tronPK, tx)
  const sig = signedTx.signature[0]
  const recovered = tronUtils.crypto.ecRecover(txID, sig)
  if (recovered.toLowerCase() !== ownerHex.toLowerCase()) throw new Error('tron recover mismatch ' + recovered)
  pb.addSignature(Uint8Array.from(Buffer.from(sig, 'hex')))
  const signedHex = Buffer.from(pb.serializeBinary()).toString('hex')
  tron.push({ name, rawDataHex: rawHex, txID, signature: sig, signedHex, owner, recovered, raw })
}
fs.writeFileSync(`${out}/tron.json`, JSON.stringify({
  source: 'generated by gen.mjs with tronweb 6.5.1 (utils.transaction.txJsonToPb, txPbToRawDataHex, txPbToTxID, utils.crypto.signTransaction, ecRecover)',
  privateKey: tronPK, address: owner, transactions: tron,
}, null, 2) + '\n')
