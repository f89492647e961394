// geth --dev for the chain tests (chain, gasdelegate, gasstation, history and sponsor): geth is
// built from the Go module proxy by e2e/geth.sh (cached) and started on loopback over a genesis of
// its own, a hand-assembled ERC-20 to deploy on it, and the deployment of Latchkey's gas-station
// delegate (contracts/gasdelegate) through the CREATE2 deployer of geth's dev genesis.
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { concat, pad, getContractAddress, defineChain, createPublicClient, createWalletClient, http } from "viem";

const here = dirname(fileURLToPath(import.meta.url));

// The delegate's checked-in build (contracts/build.mjs) and the standard CREATE2 deployer.
export const DELEGATE_ARTIFACT = JSON.parse(readFileSync(join(here, "..", "..", "contracts", "gasdelegate", "LatchkeyGasDelegate.json"), "utf8"));
export const CREATE2_DEPLOYER = "0x4e59b44847b379578588920ca78fbf26c0b4956c";

// viemClients returns viem's view of a started geth --dev (chain id 11155111): the chain, a public
// client on it and a wallet client of its funded dev account (the chain tests' funder).
export function viemClients(chain, { pollingInterval } = {}) {
  const viemChain = defineChain({ id: 11155111, name: "geth --dev", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [chain.rpcUrl] } } });
  const pub = createPublicClient({ chain: viemChain, transport: http(chain.rpcUrl), ...(pollingInterval ? { pollingInterval } : {}) });
  const dev = createWalletClient({ account: privateKeyToAccount(chain.devPrivateKey), chain: viemChain, transport: http(chain.rpcUrl) });
  return { viemChain, pub, dev };
}

// Deploys the gas-station delegate with salt 0 through the CREATE2 deployer, sent by wallet (a viem
// wallet client), and returns its address, which follows from the bytecode alone.
export async function deployDelegate(wallet, pub) {
  const address = getContractAddress({ opcode: "CREATE2", from: CREATE2_DEPLOYER, salt: pad("0x00"), bytecode: DELEGATE_ARTIFACT.bytecode });
  const hash = await wallet.sendTransaction({ to: CREATE2_DEPLOYER, data: concat([pad("0x00"), DELEGATE_ARTIFACT.bytecode]) });
  const receipt = await pub.waitForTransactionReceipt({ hash, pollingInterval: 100 });
  assert.equal(receipt.status, "success", "the delegate deployment");
  assert.equal(await pub.getCode({ address }), DELEGATE_ARTIFACT.deployedBytecode);
  return address;
}

// A minimal ERC-20, hand-assembled (no compiler): balanceOf(address) and transfer(address,uint256),
// each holder's balance in the storage slot whose number is the holder's address; no events, no
// allowances. The constructor gives the deployer 10^15 units.
//
// init code (21 bytes):
//   66 038d7ea4c68000  PUSH7 10^15            33 CALLER   55 SSTORE      ; sstore(caller, 10^15)
//   60 54 PUSH1 84 (runtime length)  80 DUP1  60 15 PUSH1 21 (runtime offset)  60 00 PUSH1 0
//   39 CODECOPY                      ; memory[0:84] = code[21:105]
//   60 00 PUSH1 0  f3 RETURN         ; the runtime below is the contract's code
// runtime (84 bytes):
//   00 6000 35 60e0 1c        selector = calldata[0:4]
//   06 80 6370a08231 14 601d 57      balanceOf(address) -> 0x1d
//   10 63a9059cbb 14 602a 57         transfer(address,uint256) -> 0x2a
//   19 6000 80 fd                    anything else: revert
//   1d 5b 6004 35 54                 balanceOf: sload(calldata[4:36])
//   22 6000 52 6020 6000 f3          return it as one word
//   2a 5b 6024 35 33 54              transfer: [bal v] = sload(caller), calldata[36:68]
//   30 81 81 10 604f 57              bal < v -> 0x4f (revert)
//   36 81 90 03 33 55                sstore(caller, bal - v), v kept
//   3b 6004 35 80 54 82 01 90 55     sstore(to, sload(to) + v)
//   44 50 6001 6000 52 6020 6000 f3  return true
//   4f 5b 6000 80 fd                 revert
export const TOKEN_BYTECODE = "0x" +
  "66038d7ea4c68000335560548060156000396000f3" + // init
  "60003560e01c" + "806370a0823114601d57" + "63a9059cbb14602a57" + "600080fd" + // dispatch
  "5b60043554" + "60005260206000f3" + // balanceOf
  "5b6024353354" + "818110604f57" + "819003" + "3355" + "600435805482019055" + "50600160005260206000f3" + // transfer
  "5b600080fd"; // revert

// The same token, emitting the ERC-20 Transfer event on each transfer (for the history index,
// which reads Transfer logs): the transfer path ends, before returning true, with
//   6000 52                          mstore(0, v)
//   6004 35 33 7f <Transfer topic>   to, caller, keccak256("Transfer(address,address,uint256)")
//   6020 6000 a3                     log3(0, 32, topic, caller, to)
// so the runtime is 128 bytes (init: PUSH1 0x80) and the revert moves to 0x7b.
export const EVENT_TOKEN_BYTECODE = "0x" +
  "66038d7ea4c68000335560808060156000396000f3" + // init
  "60003560e01c" + "806370a0823114601d57" + "63a9059cbb14602a57" + "600080fd" + // dispatch
  "5b60043554" + "60005260206000f3" + // balanceOf
  "5b6024353354" + "818110607b57" + "819003" + "3355" + "600435805482019055" + // transfer: balances
  "600052" + "600435337fddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef" + "60206000a3" + // Transfer log
  "600160005260206000f3" + // return true
  "5b600080fd"; // revert

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer().listen(0, "127.0.0.1", () => { const { port } = srv.address(); srv.close(() => resolve(port)); });
    srv.on("error", reject);
  });
}

export async function rpc(url, method, params = []) {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  const body = await res.json();
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

// Builds (once, cached) and starts geth --dev on loopback. A failed build fails the test.
export async function startChain({ httpApi = "eth,net,web3" } = {}) {
  const geth = execFileSync("bash", [join(here, "..", "geth.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }).trim();
  const [http, auth] = [await freePort(), await freePort()];
  const dataDir = mkdtempSync(join(tmpdir(), "latchkey-geth-"));
  const genesis = JSON.parse(execFileSync(geth, ["--dev", "dumpgenesis"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }));
  const devPrivateKey = generatePrivateKey();
  const devAddress = privateKeyToAccount(devPrivateKey).address;
  genesis.config.chainId = 11155111;
  genesis.alloc[devAddress] = { balance: "0x" + (10n ** 24n).toString(16) }; // 1,000,000 ETH
  writeFileSync(join(dataDir, "genesis.json"), JSON.stringify(genesis));
  execFileSync(geth, ["init", "--datadir", join(dataDir, "chain"), join(dataDir, "genesis.json")], { stdio: ["ignore", "ignore", "inherit"] });
  const proc = spawn(geth, ["--dev", "--datadir", join(dataDir, "chain"), "--http", "--http.addr", "127.0.0.1", "--http.port", String(http), "--http.api", httpApi,
    "--authrpc.addr", "127.0.0.1", "--authrpc.port", String(auth), "--port", "0", "--nodiscover", "--maxpeers", "0", "--ipcdisable", "--verbosity", "2"],
  { stdio: ["ignore", "ignore", "inherit"] });
  let exited = null;
  proc.once("exit", (c) => { exited = c; });
  const rpcUrl = `http://127.0.0.1:${http}`;
  for (let i = 0; ; i++) {
    if (exited !== null) throw new Error(`geth exited ${exited}`);
    try {
      assert.equal(await rpc(rpcUrl, "eth_chainId"), "0xaa36a7");
      break;
    } catch (e) {
      if (i > 200) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { rpcUrl, devPrivateKey, devAddress, stop: () => proc.kill() };
}
