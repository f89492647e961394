// Writes gasstation.json: gas-station delegate vectors computed by viem (as installed in e2e/), an
// implementation independent of Latchkey's Go code. Run from the repository root after `npm ci` in e2e/:
//
//   node internal/chain/ethereum/testdata/gen/gasstation.mjs
//
// The delegate's address is its CREATE2 address through the standard deployer with salt 0, the one
// e2e/tests/gasdelegate.test.mjs deploys to, so the vectors made for chain 11155111 and the fixed
// test account below are checked against the real contract by that test too.
import { createRequire } from "node:module";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..", "..", "..", "..");
const require = createRequire(join(root, "e2e", "package.json"));
const {
  keccak256, toHex, encodeAbiParameters, getContractAddress, toFunctionSelector, hashTypedData,
  encodeFunctionData, encodeFunctionResult, concat, numberToHex, serializeSignature, pad,
} = require("viem");
const { privateKeyToAccount, sign } = require("viem/accounts");

const artifact = JSON.parse(readFileSync(join(root, "contracts", "gasdelegate", "LatchkeyGasDelegate.json"), "utf8"));
const DEPLOYER = "0x4e59b44847b379578588920ca78fbf26c0b4956c";
const delegate = getContractAddress({ opcode: "CREATE2", from: DEPLOYER, salt: pad("0x00"), bytecode: artifact.bytecode });

// The fixed test account: its key is keccak256 of a phrase, so anyone can re-derive it.
const privateKey = keccak256(toHex("latchkey gas-station test account"));
const account = privateKeyToAccount(privateKey).address;

const namespace = "TKGasDelegate.state";
const slotMask = (1n << 256n) - 256n;
// The slot TKGasDelegate (and ours) keeps the nonce in: ERC-7201's formula without the outer keccak256.
const nonceSlot = numberToHex((BigInt(keccak256(toHex(namespace))) - 1n) & slotMask, { size: 32 });
// ERC-7201 proper, for the record (and the Go test of ERC7201Slot), for this namespace and the EIP's example.
const erc7201 = (ns) => numberToHex(BigInt(keccak256(encodeAbiParameters([{ type: "uint256" }], [BigInt(keccak256(toHex(ns))) - 1n]))) & slotMask, { size: 32 });

const types = {
  BatchExecution: [{ name: "nonce", type: "uint128" }, { name: "deadline", type: "uint32" }, { name: "calls", type: "Call[]" }],
  Call: [{ name: "to", type: "address" }, { name: "value", type: "uint256" }, { name: "data", type: "bytes" }],
};

async function vector(name, chainId, nonce, deadline, calls) {
  const domain = { name: "TKGasDelegate", version: "1.1", chainId, verifyingContract: account };
  const digest = hashTypedData({ domain, types, primaryType: "BatchExecution", message: { nonce, deadline, calls } });
  const signature = serializeSignature(await sign({ hash: digest, privateKey }));
  const packed = concat([signature, numberToHex(nonce, { size: 16 }), numberToHex(deadline, { size: 4 })]);
  const calldata = encodeFunctionData({ abi: artifact.abi, functionName: "executeBatch", args: [calls, packed] });
  return {
    name, chainId: String(chainId), account, nonce: String(nonce), deadline,
    calls: calls.map((c) => ({ to: c.to, value: String(c.value), data: c.data })),
    digest, signature, calldata,
  };
}

const erc20Transfer = (to, amount) => encodeFunctionData({
  abi: [{ type: "function", name: "transfer", inputs: [{ type: "address" }, { type: "uint256" }], outputs: [{ type: "bool" }] }],
  functionName: "transfer", args: [to, amount],
});
const recipient = "0x000000000000000000000000000000000000beef";
const dataOf = (n) => toHex(Uint8Array.from({ length: n }, (_, i) => (i * 7 + n) & 0xff));
const twenty = Array.from({ length: 20 }, (_, i) => ({
  to: numberToHex(0x1000 + i, { size: 20 }), value: BigInt(i) * 10n ** 15n, data: [0, 1, 31, 32, 33, 64, 65][i % 7] === 0 ? "0x" : dataOf([0, 1, 31, 32, 33, 64, 65][i % 7]),
}));

const vectors = [
  // Simulated by e2e/tests/gasdelegate.test.mjs with eth_call on the delegated account at nonce 0.
  await vector("one empty call, the e2e simulation", 11155111, 0n, 0xffffffff, [{ to: recipient, value: 0n, data: "0x" }]),
  await vector("an ERC-20 transfer and an ETH transfer", 11155111, 1n, 1893456000, [
    { to: "0x00000000000000000000000000000000000000aa", value: 0n, data: erc20Transfer(recipient, 1234567n) },
    { to: recipient, value: 10n ** 15n, data: "0x" },
  ]),
  await vector("twenty calls, data of every padding, mainnet", 1, 7n, 0, twenty),
  await vector("largest nonce and value", 8453, (1n << 128n) - 1n, 1, [{ to: recipient, value: (1n << 256n) - 1n, data: "0xdeadbeef" }]),
];

const domainAnswer = encodeFunctionResult({
  abi: artifact.abi, functionName: "eip712Domain",
  result: ["0x0f", "TKGasDelegate", "1.1", 11155111n, delegate, pad("0x00"), []],
});

const out = {
  how: "internal/chain/ethereum/testdata/gen/gasstation.mjs with viem " + require("viem/package.json").version,
  delegate, account, nonceNamespace: namespace, nonceSlot,
  erc7201Slots: { [namespace]: erc7201(namespace), "example.main": erc7201("example.main") },
  executeBatchSelector: toFunctionSelector("executeBatch((address,uint256,bytes)[],bytes)"),
  domainAnswer: { chainId: "11155111", delegate, answer: domainAnswer },
  vectors,
};
writeFileSync(join(here, "..", "gasstation.json"), JSON.stringify(out, null, 2) + "\n");
console.log(`wrote gasstation.json (delegate ${delegate})`);
