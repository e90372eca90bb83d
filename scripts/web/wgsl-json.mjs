// Writes every built-in kernel's WGSL at every schedule of its tuning space (the pairs
// `forge list --schedules` prints, each translated by `forge emit --backend wgsl --browser`,
// which validates it with naga first) as one JSON array, for the Tint check's page.
//
// usage: node scripts/web/wgsl-json.mjs FORGE_BINARY OUT.json
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";

const [forge, out] = process.argv.slice(2);
if (!forge || !out) {
  console.error("usage: node scripts/web/wgsl-json.mjs FORGE_BINARY OUT.json");
  process.exit(2);
}
const run = (...args) => execFileSync(forge, args, { encoding: "utf8", maxBuffer: 64 << 20 });
const pairs = run("list", "--schedules")
  .split("\n")
  .filter((line) => line.length > 0)
  .map((line) => line.split("\t"));
if (pairs.length === 0) {
  console.error("error: `forge list --schedules` listed nothing");
  process.exit(1);
}
const shaders = pairs.map(([kernel, schedule]) => ({
  kernel,
  schedule,
  wgsl: run("emit", kernel, "--backend", "wgsl", "--browser", "--schedule", schedule),
}));
writeFileSync(out, JSON.stringify(shaders));
console.error(`wgsl-json: ${shaders.length} (kernel, schedule) pairs, validated by naga, in ${out}`);
