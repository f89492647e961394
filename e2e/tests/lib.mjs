// Shared helpers: build and start a real `latchkey serve --dev` on a free loopback port.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, existsSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import net from "node:net";
import { Turnkey } from "@turnkey/sdk-server";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

export function latchkeyBinary() {
  if (process.env.LATCHKEY_BIN) return process.env.LATCHKEY_BIN;
  const out = join(tmpdir(), "latchkey-e2e-bin");
  execFileSync("go", ["build", "-o", out, "./cmd/latchkey"], { cwd: repo, stdio: "inherit" });
  process.env.LATCHKEY_BIN = out;
  return out;
}

// Ports handed out by freePort in this process. A port closed a moment ago may be handed out
// again by the kernel (it was: the API's and the proxy's port once came out the same), so a
// port is never returned twice.
const handedOut = new Set();

export async function freePort() {
  for (;;) {
    const port = await new Promise((resolve, reject) => {
      const s = net.createServer();
      s.listen(0, "127.0.0.1", () => {
        const { port } = s.address();
        s.close(() => resolve(port));
      });
      s.on("error", reject);
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}

export async function startLatchkey(extraArgs = []) {
  const bin = latchkeyBinary();
  const dataDir = mkdtempSync(join(tmpdir(), "latchkey-e2e-"));
  const port = await freePort();
  const proxyPort = await freePort();
  const dashPort = await freePort();
  const framesPort = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proxyUrl = `http://127.0.0.1:${proxyPort}`;
  const args = ["serve", "--dev", "--data-dir", dataDir, "--api-addr", `127.0.0.1:${port}`, "--proxy-addr", `127.0.0.1:${proxyPort}`,
    "--dashboard-addr", `127.0.0.1:${dashPort}`, "--frames-addr", `127.0.0.1:${framesPort}`,
    "--log-level", "debug", ...extraArgs];
  const proc = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
  let logs = "";
  proc.stdout.on("data", (d) => (logs += d));
  proc.stderr.on("data", (d) => (logs += d));
  const credsFile = join(dataDir, "dev-credentials.json");
  for (let i = 0; i < 200; i++) {
    if (proc.exitCode !== null) throw new Error(`latchkey exited early:\n${logs}`);
    // --dev writes the demo credentials, then the dashboard operator, once the API listens.
    if (existsSync(credsFile) && existsSync(join(dataDir, "dev-operator.json"))) {
      try {
        const r = await fetch(`${url}/healthz`);
        if (r.ok) break;
      } catch {}
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const creds = JSON.parse(readFileSync(credsFile, "utf8"));
  const keys = await (await fetch(`${url}/.well-known/latchkey.json`)).json();
  return {
    url,
    proxyUrl,
    dashboardUrl: `http://127.0.0.1:${dashPort}`,
    // Latchkey's export, import and auth frames (docs/frames.md): /export, /import, /auth.
    framesUrl: `http://127.0.0.1:${framesPort}`,
    dataDir,
    creds,
    keys,
    logs: () => logs,
    // Runs `latchkey proxy <sub> --org <dev organization> [flags]` on this server's data
    // directory while it runs (the CLI an operator uses; the server sees the change at once)
    // and returns what it printed, parsed: for "enable", {configId}.
    proxy(sub, flags = [], organizationId = creds.organizationId) {
      const out = execFileSync(bin, ["proxy", sub, "--dev", "--data-dir", dataDir, "--org", organizationId, ...flags], { stdio: ["ignore", "pipe", "pipe"] });
      return JSON.parse(out.toString());
    },
    // An @turnkey/sdk-server API client for a key pair ({privateKey, publicKey}; default: the dev
    // root key) and organization (default: the dev organization), polling briefly.
    client(kp = { privateKey: creds.apiPrivateKey, publicKey: creds.apiPublicKey }, organizationId = creds.organizationId) {
      return new Turnkey({ apiBaseUrl: url, apiPrivateKey: kp.privateKey, apiPublicKey: kp.publicKey, defaultOrganizationId: organizationId,
        activityPoller: { intervalMs: 50, numRetries: 1 } }).apiClient();
    },
    async stop() {
      proc.kill("SIGTERM");
      await new Promise((r) => (proc.exitCode !== null ? r() : proc.on("exit", r)));
      return proc.exitCode;
    },
    // Every byte the server wrote to disk (database, WAL) and to its logs.
    allBytes() {
      const parts = [Buffer.from(logs)];
      for (const f of readdirSync(dataDir)) {
        if (f.startsWith("latchkey.db")) parts.push(readFileSync(join(dataDir, f)));
      }
      return Buffer.concat(parts);
    },
  };
}
