// Compiles the contracts of this directory with the solc-js pinned in e2e/package.json and writes (or,
// with --check, compares against) each checked-in artifact: ABI, init code, runtime code and the exact
// compiler input, so anyone can reproduce the bytecode from the source.
//
//   node contracts/build.mjs          rewrite contracts/gasdelegate/LatchkeyGasDelegate.json
//   node contracts/build.mjs --check  exit 1 if the checked-in artifact differs from a fresh build
//
// Run `npm ci` in e2e/ first (that is where the pinned compiler is installed).
import { createRequire } from "node:module";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, "..", "e2e", "package.json"));
const solc = require("solc");
const pinned = JSON.parse(readFileSync(join(here, "..", "e2e", "package.json"), "utf8")).devDependencies.solc;

const CONTRACTS = [{ dir: "gasdelegate", name: "LatchkeyGasDelegate" }];

export function build({ dir, name }) {
  const file = `${dir}/${name}.sol`;
  const input = {
    language: "Solidity",
    sources: { [file]: { content: readFileSync(join(here, file), "utf8") } },
    settings: {
      evmVersion: "prague",
      optimizer: { enabled: true, runs: 200 },
      // No metadata hash in the bytecode: the runtime code depends on the source and settings only.
      metadata: { bytecodeHash: "none" },
      outputSelection: { [file]: { [name]: ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const problems = (output.errors ?? []).filter((e) => e.severity === "error" ||
    (e.severity === "warning" && !/SPDX license identifier not provided/.test(e.message)));
  if (problems.length) throw new Error(problems.map((e) => e.formattedMessage).join("\n"));
  const c = output.contracts[file][name];
  return {
    compiler: `solc-js ${solc.version()}`,
    // The compiler input as run, its source named (it is checked in beside the artifact) not repeated.
    input: { ...input, sources: { [file]: { urls: [`${name}.sol`] } } },
    abi: c.abi,
    bytecode: "0x" + c.evm.bytecode.object,
    deployedBytecode: "0x" + c.evm.deployedBytecode.object,
  };
}

function artifact(contract) {
  return JSON.stringify(build(contract), null, 2) + "\n";
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (!solc.version().startsWith(pinned + "+")) throw new Error(`solc ${solc.version()} is not the pinned ${pinned}`);
  const check = process.argv.includes("--check");
  let stale = 0;
  for (const contract of CONTRACTS) {
    const path = join(here, contract.dir, `${contract.name}.json`);
    const fresh = artifact(contract);
    if (!check) {
      writeFileSync(path, fresh);
      console.log(`wrote ${path}`);
      continue;
    }
    let current = "";
    try { current = readFileSync(path, "utf8"); } catch { /* missing counts as stale */ }
    if (current !== fresh) {
      console.error(`${path} is stale: run node contracts/build.mjs`);
      stale++;
    }
  }
  process.exit(stale ? 1 : 0);
}
