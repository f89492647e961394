// The operator's side of the gas station on a real chain (geth --dev, the delegate deployed through
// the CREATE2 deployer: gethdev.mjs deployDelegate): `latchkey serve --gas-station` checks the
// delegate's eip712Domain() before serving and refuses to start on a wrong one, publishes the
// sponsor keys (log, `latchkey gas-station show`), reads the paymaster's balance into the metrics,
// and an organization's limits are set with upsert_gas_usage_config and read with
// @turnkey/sdk-server's getGasUsage.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync, mkdtempSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startChain, deployDelegate, viemClients } from "./gethdev.mjs";
import { startLatchkey, freePort, latchkeyBinary } from "./lib.mjs";

const CAIP2 = "eip155:11155111";

let chain, pub, funder, delegate, lk;

function gasFile(delegateAddress) {
  const f = join(mkdtempSync(join(tmpdir(), "latchkey-gas-")), "gas-station.json");
  writeFileSync(f, JSON.stringify({
    evm: { [CAIP2]: { delegate: delegateAddress, maxGasPerTransaction: 600000, maxFeePerGasWei: "20000000000", lowBalanceWei: "1000000000000000000" } },
  }));
  return f;
}

before(async () => {
  chain = await startChain();
  ({ pub, dev: funder } = viemClients(chain, { pollingInterval: 100 }));
  delegate = await deployDelegate(funder, pub);
});

after(async () => {
  await lk?.stop();
  chain?.stop();
});

test("serve refuses to start when the configured delegate is not the delegate, naming the network", async () => {
  // The dev account has no code: eip712Domain() answers nothing.
  await assert.rejects(
    startLatchkey(["--chain-rpc", `${CAIP2}=${chain.rpcUrl}`, "--gas-station", gasFile(chain.devAddress)]),
    (e) => e.message.includes(`the delegate of ${CAIP2}`) && e.message.includes("no contract answers eip712Domain()"),
  );
  // A configured network without a provider refuses too.
  await assert.rejects(startLatchkey(["--gas-station", gasFile(delegate)]),
    (e) => e.message.includes(`the delegate of ${CAIP2}`) && e.message.includes("no RPC provider"));
});

test("with the real delegate it serves, publishes the sponsor keys and their balance, and takes the organization's limits", async () => {
  const metricsPort = await freePort();
  lk = await startLatchkey(["--chain-rpc", `${CAIP2}=${chain.rpcUrl}`, "--gas-station", gasFile(delegate),
    "--metrics-addr", `127.0.0.1:${metricsPort}`]);
  const shown = JSON.parse(execFileSync(latchkeyBinary(), ["gas-station", "show", "--dev", "--data-dir", lk.dataDir], { encoding: "utf8" }));
  assert.match(shown.evmPaymaster, /^0x[0-9a-fA-F]{40}$/);
  assert.match(shown.solanaFeePayer, /^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
  assert.ok(lk.logs().includes("gas station sponsor keys") && lk.logs().includes(shown.evmPaymaster), "the start-up log names the paymaster");

  // The first balance read happens as the server starts: the paymaster holds nothing yet, under the threshold.
  let metrics = "";
  for (let i = 0; i < 100 && !metrics.includes("latchkey_gas_sponsor_low"); i++) {
    metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    if (!metrics.includes("latchkey_gas_sponsor_low")) await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(metrics.includes(`latchkey_gas_sponsor_balance{address="${shown.evmPaymaster}",network="${CAIP2}"} 0`), metrics);
  assert.ok(metrics.includes(`latchkey_gas_sponsor_low{network="${CAIP2}"} 1`));
  assert.equal(await pub.getBalance({ address: shown.evmPaymaster }), 0n);

  // Limits: none yet (zeros), then set by a root user of the organization, read back through the SDK.
  const api = lk.client();
  const orgId = lk.creds.organizationId;
  assert.deepEqual(await api.getGasUsage({ organizationId: orgId }),
    { windowDurationMinutes: 0, windowLimitUsd: "0.00", usageUsd: "0.00" });
  const upsert = (parameters) => api.request("/public/v1/submit/upsert_gas_usage_config", {
    type: "ACTIVITY_TYPE_UPSERT_GAS_USAGE_CONFIG", timestampMs: String(Date.now()), organizationId: orgId, parameters,
  });
  await assert.rejects(upsert({ enabled: true, orgWindowLimitUsd: "10", subOrgWindowLimitUsd: "1", windowDurationMinutes: "43201" }),
    (e) => String(e.message ?? e).includes("parameters.windowDurationMinutes"));
  const done = await upsert({ enabled: true, orgWindowLimitUsd: "10", subOrgWindowLimitUsd: "1.5", windowDurationMinutes: "1440" });
  assert.equal(done.activity.status, "ACTIVITY_STATUS_COMPLETED");
  assert.ok(done.activity.result.upsertGasUsageConfigResult.gasUsageConfigId);
  assert.deepEqual(await api.getGasUsage({ organizationId: orgId }),
    { windowDurationMinutes: 1440, windowLimitUsd: "10.00", usageUsd: "0.00" });
});
