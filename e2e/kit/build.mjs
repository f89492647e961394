// Bundles the test apps with esbuild, from the packages in e2e/node_modules, into outdir.
import { build } from "esbuild";
import { copyFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

export async function buildKitApps(outdir) {
  await build({
    entryPoints: { app: join(here, "app.jsx"), legacy: join(here, "legacy.js") },
    outdir,
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    jsx: "automatic",
    minify: true,
    define: { "process.env.NODE_ENV": '"production"', global: "globalThis" },
    loader: { ".png": "dataurl", ".svg": "dataurl", ".woff": "dataurl", ".woff2": "dataurl" },
    logLevel: "warning",
  });
  for (const f of ["index.html", "legacy.html"]) copyFileSync(join(here, f), join(outdir, f));
  return outdir;
}
