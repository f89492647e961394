// Writes hyperliquid.json: Hyperliquid's approveAgent and withdraw typed data (type names with a
// colon, as Hyperliquid's SDKs sign them through @turnkey/viem and @turnkey/ethers) and their
// EIP-712 digests by viem's hashTypedData, checked against ethers' TypedDataEncoder when it is
// installed. Run: node hyperliquid.mjs OUT_DIR (with viem, and optionally ethers, resolvable).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { hashTypedData } from "viem";

const domain = { name: "HyperliquidSignTransaction", version: "1", chainId: 42161, verifyingContract: "0x0000000000000000000000000000000000000000" };
const cases = [
  {
    name: "approveAgent",
    typedData: {
      domain,
      types: {
        "HyperliquidTransaction:ApproveAgent": [
          { name: "hyperliquidChain", type: "string" },
          { name: "agentAddress", type: "address" },
          { name: "agentName", type: "string" },
          { name: "nonce", type: "uint64" },
        ],
      },
      primaryType: "HyperliquidTransaction:ApproveAgent",
      message: { hyperliquidChain: "Mainnet", agentAddress: "0x8c2d6e3c1b0a9f4e5d7c6b5a4f3e2d1c0b9a8f7e", agentName: "latchkey", nonce: 1732000000000n },
    },
  },
  {
    name: "withdraw",
    typedData: {
      domain: { ...domain, chainId: 421614 },
      types: {
        "HyperliquidTransaction:Withdraw": [
          { name: "hyperliquidChain", type: "string" },
          { name: "destination", type: "string" },
          { name: "amount", type: "string" },
          { name: "time", type: "uint64" },
        ],
      },
      primaryType: "HyperliquidTransaction:Withdraw",
      message: { hyperliquidChain: "Testnet", destination: "0x8c2d6e3c1b0a9f4e5d7c6b5a4f3e2d1c0b9a8f7e", amount: "12.5", time: 1732000000000n },
    },
  },
];

let ethers = null;
try { ethers = await import("ethers"); } catch { /* optional cross-check */ }
const out = [];
for (const c of cases) {
  const digest = hashTypedData(c.typedData);
  if (ethers) {
    const { EIP712Domain, ...types } = c.typedData.types;
    const other = ethers.TypedDataEncoder.hash(c.typedData.domain, types, c.typedData.message);
    if (other !== digest) throw new Error(`${c.name}: viem ${digest} != ethers ${other}`);
  }
  // The payload as @turnkey/viem sends it (serializeTypedData: bigints as strings, EIP712Domain added).
  const payload = JSON.stringify({ ...c.typedData, types: { EIP712Domain: [
    { name: "name", type: "string" }, { name: "version", type: "string" }, { name: "chainId", type: "uint256" }, { name: "verifyingContract", type: "address" },
  ], ...c.typedData.types } }, (_, v) => (typeof v === "bigint" ? v.toString() : v));
  out.push({ name: c.name, payload, digest, checkedWithEthers: ethers !== null });
}
writeFileSync(join(process.argv[2] ?? ".", "hyperliquid.json"), JSON.stringify(out, null, 2) + "\n");
