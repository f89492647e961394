// Ethereum signing end to end with viem: typed data, EIP-1559 transactions and EIP-7702 authorizations
// signed through @turnkey/viem, recovered by viem's own verifiers.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createAccount } from "@turnkey/viem";
import { createWalletClient, http, verifyTypedData, recoverTransactionAddress, parseEther, parseGwei } from "viem";
import { recoverAuthorizationAddress } from "viem/utils";
import { sepolia } from "viem/chains";
import { startLatchkey } from "./lib.mjs";

let lk, client, account;

before(async () => {
  lk = await startLatchkey();
  client = lk.client();
  const w = await client.createWallet({ walletName: "viem", accounts: [{ curve: "CURVE_SECP256K1", pathFormat: "PATH_FORMAT_BIP32", path: "m/44'/60'/0'/0/0", addressFormat: "ADDRESS_FORMAT_ETHEREUM" }] });
  account = await createAccount({ client, organizationId: lk.creds.organizationId, signWith: w.addresses[0] });
});

after(async () => {
  assert.equal(await lk.stop(), 0);
});

const typedData = {
  domain: { name: "Ether Mail", version: "1", chainId: 1, verifyingContract: "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC" },
  types: {
    Person: [{ name: "name", type: "string" }, { name: "wallet", type: "address" }],
    Mail: [{ name: "from", type: "Person" }, { name: "to", type: "Person" }, { name: "contents", type: "string" }],
  },
  primaryType: "Mail",
  message: {
    from: { name: "Cow", wallet: "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826" },
    to: { name: "Bob", wallet: "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB" },
    contents: "Hello, Bob!",
  },
};

test("typed data (EIP-712) signed through a viem wallet client verifies with verifyTypedData", async () => {
  const wallet = createWalletClient({ account, chain: sepolia, transport: http("http://127.0.0.1:9") });
  const signature = await wallet.signTypedData(typedData);
  assert.ok(await verifyTypedData({ address: account.address, signature, ...typedData }));
});

test("an EIP-1559 transaction signed through @turnkey/viem recovers to the wallet's address", async () => {
  const serializedTransaction = await account.signTransaction({
    chainId: 11155111, type: "eip1559", to: "0x08d2b0a37F869FF76BACB5Bab3278E26ab7067B7", value: parseEther("0.001"),
    nonce: 3, gas: 21000n, maxFeePerGas: parseGwei("20"), maxPriorityFeePerGas: parseGwei("1"),
  });
  assert.equal(await recoverTransactionAddress({ serializedTransaction }), account.address);
  const legacy = await account.signTransaction({ chainId: 1, type: "legacy", to: "0x08d2b0a37F869FF76BACB5Bab3278E26ab7067B7", value: 1n, nonce: 0, gas: 21000n, gasPrice: parseGwei("10") });
  assert.equal(await recoverTransactionAddress({ serializedTransaction: legacy }), account.address);
});

test("an EIP-7702 authorization signed through @turnkey/viem recovers to the wallet's address", async () => {
  const authorization = await account.signAuthorization({ contractAddress: "0x08d2b0a37F869FF76BACB5Bab3278E26ab7067B7", chainId: 11155111, nonce: 5 });
  assert.equal(await recoverAuthorizationAddress({ authorization }), account.address);
});

// Hyperliquid's typed data: a type name with a colon ("HyperliquidTransaction:ApproveAgent"),
// as Hyperliquid apps sign it through @turnkey/viem; viem verifies the signature.
test("Hyperliquid approveAgent typed data (a colon in the type name) signs and verifies", async () => {
  const typedData = {
    domain: { name: "HyperliquidSignTransaction", version: "1", chainId: 42161, verifyingContract: "0x0000000000000000000000000000000000000000" },
    // With the domain's type spelled out, as Hyperliquid's signing code does: @turnkey/viem
    // sends viem's serializeTypedData, which keeps the domain only when EIP712Domain is listed.
    types: {
      EIP712Domain: [{ name: "name", type: "string" }, { name: "version", type: "string" }, { name: "chainId", type: "uint256" },
        { name: "verifyingContract", type: "address" }],
      "HyperliquidTransaction:ApproveAgent": [
        { name: "hyperliquidChain", type: "string" },
        { name: "agentAddress", type: "address" },
        { name: "agentName", type: "string" },
        { name: "nonce", type: "uint64" },
      ],
    },
    primaryType: "HyperliquidTransaction:ApproveAgent",
    message: { hyperliquidChain: "Mainnet", agentAddress: "0x8c2d6e3c1b0a9f4e5d7c6b5a4f3e2d1c0b9a8f7e", agentName: "latchkey", nonce: 1732000000000n },
  };
  const signature = await account.signTypedData(typedData);
  assert.ok(await verifyTypedData({ address: account.address, signature, ...typedData }));
});
