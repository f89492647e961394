// A real Prometheus (Debian's prometheus package) scrapes `latchkey serve --metrics-addr` while
// the real @turnkey/sdk-server sends requests; its query API then reports the target up and
// Latchkey's request counter for the operations the SDK called.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startLatchkey, freePort } from "./lib.mjs";

const PROMETHEUS = process.env.PROMETHEUS_BIN || "/usr/bin/prometheus";
let lk, prom, promUrl, metricsPort;

before(async () => {
  if (!existsSync(PROMETHEUS)) throw new Error(`${PROMETHEUS} not found: apt-get install prometheus (.ci/run does)`);
  metricsPort = await freePort();
  lk = await startLatchkey(["--metrics-addr", `127.0.0.1:${metricsPort}`]);
  const dir = mkdtempSync(join(tmpdir(), "latchkey-prom-"));
  writeFileSync(join(dir, "prometheus.yml"), `global:
  scrape_interval: 1s
scrape_configs:
  - job_name: latchkey
    static_configs:
      - targets: ["127.0.0.1:${metricsPort}"]
`);
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  prom = spawn(PROMETHEUS, [`--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dir, "data")}`,
    `--web.listen-address=127.0.0.1:${port}`], { stdio: "ignore" });
});

after(async () => {
  prom?.kill("SIGTERM");
  assert.equal(await lk.stop(), 0);
});

async function query(q) {
  const r = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`);
  const body = await r.json();
  return body.data?.result ?? [];
}

test("Prometheus scrapes Latchkey's metrics", async () => {
  const client = lk.client();
  await client.getWhoami({});
  await client.createUserTag({ userTagName: "scraped", userIds: [] });
  let up = [], requests = [];
  for (let i = 0; i < 150 && (up.length === 0 || requests.length === 0); i++) {
    await new Promise((r) => setTimeout(r, 200));
    try {
      up = (await query('up{job="latchkey"} == 1'));
      requests = await query('latchkey_http_requests_total{listener="api",operation="submit/create_user_tag",code="200"}');
    } catch { /* Prometheus still starting */ }
  }
  assert.equal(up.length, 1, "the latchkey target is up");
  assert.equal(requests.length, 1, "the create_user_tag counter was scraped");
  assert.ok(Number(requests[0].value[1]) >= 1);
  const goroutines = await query('go_goroutines{job="latchkey"}');
  assert.equal(goroutines.length, 1);
});
