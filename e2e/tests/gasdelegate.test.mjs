// Latchkey's gas-station delegate (contracts/gasdelegate) on a real EVM: geth --dev with Prague's
// EIP-7702 active. The delegate is deployed through the standard CREATE2 deployer that geth's dev
// genesis carries (0x4e59b448…4956c, salt 0), so its address follows from the checked-in bytecode; a
// zero-balance account delegates to it with a type-4 authorization sent by a funded paymaster, and
// the paymaster pays for batches the account signs. The account is the fixed test account of
// internal/chain/ethereum/testdata/gasstation.json, so the vectors Latchkey's Go code is tested
// against (digest, executeBatch calldata, nonce slot, eip712Domain answer) are checked here against
// the contract itself. Latchkey's API sending through it is e2e/tests/sponsor.test.mjs.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import {
  encodeFunctionData, parseAbi, concat, numberToHex, keccak256, toHex, hexToBigInt, BaseError, ContractFunctionRevertedError,
} from "viem";
import { privateKeyToAccount, generatePrivateKey } from "viem/accounts";
import { startChain, deployDelegate, TOKEN_BYTECODE, DELEGATE_ARTIFACT, CREATE2_DEPLOYER, viemClients } from "./gethdev.mjs";
import { build } from "../../contracts/build.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const artifact = DELEGATE_ARTIFACT;
const vectors = JSON.parse(readFileSync(join(root, "internal", "chain", "ethereum", "testdata", "gasstation.json"), "utf8"));
const DEPLOYER = CREATE2_DEPLOYER;
const abi = artifact.abi;
const erc20 = parseAbi(["function transfer(address,uint256) returns (bool)", "function balanceOf(address) view returns (uint256)"]);
const types = {
  BatchExecution: [{ name: "nonce", type: "uint128" }, { name: "deadline", type: "uint32" }, { name: "calls", type: "Call[]" }],
  Call: [{ name: "to", type: "address" }, { name: "value", type: "uint256" }, { name: "data", type: "bytes" }],
};
// The fixed test account's key, derived as gen/gasstation.mjs derives it.
const user = privateKeyToAccount(keccak256(toHex("latchkey gas-station test account")));
const recipient = privateKeyToAccount(generatePrivateKey()).address;
const FAR = 0xffffffff; // a deadline that has not passed

let chain, pub, paymaster, token, delegate;

before(async () => {
  chain = await startChain();
  ({ pub, dev: paymaster } = viemClients(chain, { pollingInterval: 100 }));
  const hash = await paymaster.deployContract({ abi: [], bytecode: TOKEN_BYTECODE }); // 10^15 units to the paymaster
  token = (await pub.waitForTransactionReceipt({ hash })).contractAddress;
  assert.equal(user.address, vectors.account);
});

after(() => chain?.stop());

async function mined(hash) {
  return pub.waitForTransactionReceipt({ hash });
}

// The account's signature of a batch, packed as executeBatch's second argument.
async function signBatch(nonce, deadline, calls, signer = user) {
  const signature = await signer.signTypedData({
    domain: { name: "TKGasDelegate", version: "1.1", chainId: 11155111, verifyingContract: user.address },
    types, primaryType: "BatchExecution", message: { nonce, deadline, calls },
  });
  return concat([signature, numberToHex(nonce, { size: 16 }), numberToHex(deadline, { size: 4 })]);
}

// The custom error a simulated executeBatch reverts with.
async function revertOf(calls, data) {
  try {
    await pub.simulateContract({ account: paymaster.account, address: user.address, abi, functionName: "executeBatch", args: [calls, data] });
  } catch (e) {
    const reverted = e instanceof BaseError && e.walk((x) => x instanceof ContractFunctionRevertedError);
    if (reverted) return reverted.data?.errorName ?? "(no reason)";
    throw e;
  }
  return null;
}

const transfer = (to, amount) => ({ to: token, value: 0n, data: encodeFunctionData({ abi: erc20, functionName: "transfer", args: [to, amount] }) });
const balanceOf = (a) => pub.readContract({ address: token, abi: erc20, functionName: "balanceOf", args: [a] });
const nonceOf = () => pub.readContract({ address: user.address, abi, functionName: "nonce" });
const nonceInStorage = async () => hexToBigInt(await pub.getStorageAt({ address: user.address, slot: vectors.nonceSlot })) & ((1n << 128n) - 1n);

test("the checked-in bytecode is what the pinned compiler makes of the checked-in source", () => {
  const fresh = build({ dir: "gasdelegate", name: "LatchkeyGasDelegate" });
  assert.equal(fresh.bytecode, artifact.bytecode);
  assert.equal(fresh.deployedBytecode, artifact.deployedBytecode);
  assert.deepEqual(fresh.abi, artifact.abi);
  assert.equal(fresh.compiler, artifact.compiler);
});

test("the delegate deploys through geth's CREATE2 deployer and answers eip712Domain() as the Go check expects", async () => {
  assert.notEqual(await pub.getCode({ address: DEPLOYER }), undefined, "geth --dev's genesis has the CREATE2 deployer");
  delegate = await deployDelegate(paymaster, pub);
  assert.equal(delegate, vectors.delegate, "gasstation.json was made for this bytecode");
  const { data } = await pub.call({ to: delegate, data: encodeFunctionData({ abi, functionName: "eip712Domain" }) });
  assert.equal(data, vectors.domainAnswer.answer);
});

test("a zero-balance account delegates, and its first batch (Go's calldata) rides with the authorization", async (t) => {
  assert.ok(delegate, "deployed by the previous test");
  assert.equal(await pub.getBalance({ address: user.address }), 0n);
  const before = await pub.getBalance({ address: paymaster.account.address });
  // The first vector: nonce 0, one empty call, signed by the account, encoded by Latchkey's Go code
  // (internal/chain/ethereum TestBatchExecutionMatchesViem checks these very bytes).
  const first = vectors.vectors[0];
  assert.equal(first.nonce, "0");
  const authorization = await user.signAuthorization({ contractAddress: delegate, chainId: 11155111, nonce: 0 });
  const hash = await paymaster.sendTransaction({ authorizationList: [authorization], to: user.address, data: first.calldata, gas: 300000n });
  const receipt = await mined(hash);
  assert.equal(receipt.status, "success");
  assert.equal(receipt.type, "eip7702");
  t.diagnostic(`gas: authorization + a batch of one empty call ${receipt.gasUsed}`);
  assert.equal(await pub.getCode({ address: user.address }), concat(["0xef0100", delegate]).toLowerCase());
  assert.equal(await nonceOf(), 1n);
  assert.equal(await nonceInStorage(), 1n, "the nonce sits at the slot Go's DelegateNonceSlot computes");
  assert.equal(await pub.getBalance({ address: user.address }), 0n);
  assert.ok(await pub.getBalance({ address: paymaster.account.address }) < before, "the paymaster paid");
  // The digest the contract computes is the one Go computes, for the vector made for this chain and account.
  const second = vectors.vectors[1];
  const digest = await pub.readContract({ address: user.address, abi, functionName: "hashBatchExecution",
    args: [BigInt(second.nonce), second.deadline, second.calls.map((c) => ({ to: c.to, value: BigInt(c.value), data: c.data }))] });
  assert.equal(digest, second.digest);
  // And Go's signed calldata, replayed, is refused: the nonce moved on.
  const replay = concat([first.signature, numberToHex(0n, { size: 16 }), numberToHex(first.deadline, { size: 4 })]);
  const firstCalls = first.calls.map((c) => ({ to: c.to, value: BigInt(c.value), data: c.data }));
  assert.equal(await revertOf(firstCalls, replay), "InvalidNonce");
});

test("a sponsored batch moves an ERC-20 and ETH, the account pays no gas, and a replay is refused", async (t) => {
  assert.equal(await nonceOf(), 1n, "delegated by the previous test");
  const fund = await paymaster.writeContract({ address: token, abi: erc20, functionName: "transfer", args: [user.address, 5000n] });
  await mined(fund);
  // The account's own ETH to send on: exactly what the batch moves, so any gas it paid would show.
  await mined(await paymaster.sendTransaction({ to: user.address, value: 10n ** 15n }));
  const calls = [transfer(recipient, 1200n), { to: recipient, value: 10n ** 15n, data: "0x" }];
  const data = await signBatch(1n, FAR, calls);
  const digest = await pub.readContract({ address: user.address, abi, functionName: "hashBatchExecution", args: [1n, FAR, calls] });
  assert.equal(digest, (await import("viem")).hashTypedData({ domain: { name: "TKGasDelegate", version: "1.1", chainId: 11155111, verifyingContract: user.address }, types, primaryType: "BatchExecution", message: { nonce: 1n, deadline: FAR, calls } }));
  const hash = await paymaster.writeContract({ address: user.address, abi, functionName: "executeBatch", args: [calls, data] });
  const receipt = await mined(hash);
  assert.equal(receipt.status, "success");
  t.diagnostic(`gas: a batch of an ERC-20 transfer and an ETH transfer ${receipt.gasUsed}`);
  assert.equal(await balanceOf(recipient), 1200n);
  assert.equal(await balanceOf(user.address), 3800n);
  assert.equal(await pub.getBalance({ address: recipient }), 10n ** 15n);
  assert.equal(await pub.getBalance({ address: user.address }), 0n);
  assert.equal(await nonceOf(), 2n);
  assert.equal(await nonceInStorage(), 2n);
  assert.equal(await revertOf(calls, data), "InvalidNonce", "the same signature twice");
});

test("one reverting call reverts the whole batch, mined, and leaves the nonce", async () => {
  assert.equal(await nonceOf(), 2n, "after the previous test");
  const calls = [transfer(recipient, 100n), transfer(recipient, 10n ** 9n)]; // the second exceeds the balance
  const data = await signBatch(2n, FAR, calls);
  assert.equal(await revertOf(calls, data), "ExecutionFailed");
  const hash = await paymaster.writeContract({ address: user.address, abi, functionName: "executeBatch", args: [calls, data], gas: 300000n });
  assert.equal((await mined(hash)).status, "reverted");
  assert.equal(await balanceOf(recipient), 1200n, "the first call's transfer was undone");
  assert.equal(await nonceOf(), 2n);
});

test("the delegate refuses 21 calls, an empty batch, a passed deadline and signatures not the account's", async (t) => {
  assert.equal(await nonceOf(), 2n, "after the previous test");
  const one = [transfer(recipient, 1n)];
  const twentyOne = Array.from({ length: 21 }, () => transfer(recipient, 1n));
  assert.equal(await revertOf(twentyOne, await signBatch(2n, FAR, twentyOne)), "BatchSizeInvalid");
  assert.equal(await revertOf([], await signBatch(2n, FAR, [])), "BatchSizeInvalid");
  const twenty = twentyOne.slice(1);
  const twentyData = await signBatch(2n, FAR, twenty);
  assert.equal(await revertOf(twenty, twentyData), null, "20 calls are the limit, not over it");
  const gas = await pub.estimateContractGas({ account: paymaster.account, address: user.address, abi, functionName: "executeBatch", args: [twenty, twentyData] });
  t.diagnostic(`gas: a batch of 20 ERC-20 transfers (estimate) ${gas}`);
  assert.equal(await revertOf(one, await signBatch(2n, 1, one)), "DeadlineExceeded");
  assert.equal(await revertOf(one, await signBatch(2n, FAR, one, privateKeyToAccount(generatePrivateKey()))), "NotSelf");
  assert.equal(await revertOf(one, await signBatch(3n, FAR, one)), "InvalidNonce", "a nonce from the future");
  const good = await signBatch(2n, FAR, one);
  assert.equal(await revertOf(one, good), null);
  // The malleable twin (s' = n - s, v flipped) recovers the same address; the delegate refuses it.
  const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
  const s = hexToBigInt(`0x${good.slice(66, 130)}`);
  const v = parseInt(good.slice(130, 132), 16);
  const twin = concat([`0x${good.slice(2, 66)}`, numberToHex(n - s, { size: 32 }), numberToHex(v === 27 ? 28 : 27, { size: 1 }), `0x${good.slice(132)}`]);
  assert.equal(await revertOf(one, twin), "NotSelf");
  const v01 = concat([`0x${good.slice(2, 130)}`, numberToHex(v - 27, { size: 1 }), `0x${good.slice(132)}`]);
  assert.equal(await revertOf(one, v01), "NotSelf", "v must be 27 or 28");
  assert.equal(await revertOf(one, good.slice(0, -2)), "InvalidSignatureData");
});

test("a callee's large answer is not copied: the sponsor pays for the callee's own memory only", async (t) => {
  assert.equal(await nonceOf(), 2n, "after the previous tests");
  // Runtime: return 1 MiB of zeros (PUSH3 0x100000 PUSH1 0 RETURN); the init code returns that runtime.
  const hash = await paymaster.deployContract({ abi: [], bytecode: "0x66621000006000f360005260076019f3" });
  const returner = (await mined(hash)).contractAddress;
  const direct = await pub.estimateGas({ account: paymaster.account, to: returner });
  const calls = [{ to: returner, value: 0n, data: "0x" }];
  const viaBatch = await pub.estimateContractGas({ account: paymaster.account, address: user.address, abi, functionName: "executeBatch", args: [calls, await signBatch(2n, FAR, calls)] });
  t.diagnostic(`gas: the 1 MiB answer called directly ${direct}, through a batch ${viaBatch}`);
  // Copying the answer would cost the delegate about as much memory again (over 2,000,000 gas).
  assert.ok(viaBatch - direct < 200000n, `the batch costs ${viaBatch - direct} gas more than the call itself`);
});
