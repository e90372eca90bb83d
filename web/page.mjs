// The browser's `forge certify`: loads the forge-web wasm module (built by
// `bash scripts/web-certify`) and runs its certifier on the page's WebGPU, printing the
// table as it goes. scripts/web/driver.mjs reads `window.forgeLog` and `window.forgeResult`.
//
// `?all=1`: every schedule of each tuning space. `?wrong=1`: only a kernel that leaves an
// output unwritten, which must fail (the run checks that the comparison bites).
import init, { certify_in_browser } from "./forge_web.js";

const out = document.getElementById("out");
window.forgeLog = [];
const log = (line) => {
  window.forgeLog.push(line);
  out.textContent += line + "\n";
};

async function main() {
  if (!navigator.gpu) return { ok: false, summary: "browser: error: this browser has no WebGPU (navigator.gpu)" };
  await init();
  const query = new URLSearchParams(location.search);
  return JSON.parse(await certify_in_browser(query.get("all") === "1", query.get("wrong") === "1", log));
}

main().then(
  (result) => (window.forgeResult = result),
  (e) => (window.forgeResult = { ok: false, summary: `browser: error: ${e?.stack ?? e}` }),
);
