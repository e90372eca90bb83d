// Serves a folder on 127.0.0.1 and opens one page of it in headless Chromium, driven over
// the DevTools protocol on a pipe (fds 3 and 4, NUL-delimited JSON), with no npm package.
//
// The page reports through two globals: `window.forgeLog` (an array of lines, printed here
// as they appear) and `window.forgeResult` (set once, `{ ok: bool, summary: string }`).
// `--dump-dom` cannot be used: it returns before the page's asynchronous GPU work ends.
//
// Exit status: 0 when the page sets `forgeResult.ok`; 1 when it reports a failure, when
// the page has no WebGPU adapter, when Chromium dies, or after the timeout.
//
// usage: node scripts/web/driver.mjs DIR PAGE [--timeout SECONDS]
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { extname, join, normalize, resolve, sep } from "node:path";

const args = process.argv.slice(2);
if (args.length < 2) {
  console.error("usage: node scripts/web/driver.mjs DIR PAGE [--timeout SECONDS]");
  process.exit(2);
}
const root = resolve(args[0]);
const page = args[1];
const timeoutIndex = args.indexOf("--timeout");
const timeoutS = timeoutIndex >= 0 ? Number(args[timeoutIndex + 1]) : 600;

const types = {
  ".html": "text/html",
  ".js": "text/javascript",
  ".mjs": "text/javascript",
  ".wasm": "application/wasm",
  ".json": "application/json",
  ".css": "text/css",
};

// A static server for `root`: nothing outside it is served.
const server = createServer((req, res) => {
  const path = normalize(join(root, decodeURIComponent(new URL(req.url, "http://x").pathname)));
  if (path !== root && !path.startsWith(root + sep)) {
    res.writeHead(403).end();
    return;
  }
  try {
    const file = statSync(path).isDirectory() ? join(path, "index.html") : path;
    const body = readFileSync(file);
    res.writeHead(200, { "content-type": types[extname(file)] ?? "application/octet-stream" });
    res.end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const url = `http://127.0.0.1:${server.address().port}/${page}`;

const profile = mkdtempSync(join(tmpdir(), "forge-chromium-"));
const chromium = process.env.CHROMIUM ?? "chromium";
// WebGPU on SwiftShader: `--enable-unsafe-webgpu` exposes WebGPU on Linux, and
// `--use-webgpu-adapter=swiftshader` picks Dawn's CPU Vulkan adapter, so the page gets an
// adapter without a GPU (and the same one with a GPU). The rest keeps a fresh profile quiet.
const flags = [
  "--headless=new",
  "--no-sandbox",
  "--enable-unsafe-webgpu",
  "--use-webgpu-adapter=swiftshader",
  "--enable-features=Vulkan",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-default-apps",
  "--no-first-run",
  "--no-default-browser-check",
  `--user-data-dir=${profile}`,
  "--remote-debugging-pipe",
  "about:blank",
];
const child = spawn(chromium, flags, { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
let chromiumErr = "";
child.stderr.on("data", (d) => {
  chromiumErr = (chromiumErr + d).slice(-4000);
});

let finished = false;
// Ends the run with `code`. The status is set first: a failure in the cleanup (Chromium may
// still be writing into its profile while it is removed) must not turn a failure into 0.
function finish(code, message) {
  if (finished) return;
  finished = true;
  process.exitCode = code;
  if (message) console.error(message);
  try {
    child.kill("SIGKILL");
  } catch {}
  server.close();
  // The profile goes once Chromium is gone; the run ends then, or after 5 s at most.
  const clean = () => {
    try {
      rmSync(profile, { recursive: true, force: true });
    } catch {}
    process.exit(code);
  };
  if (child.exitCode !== null || child.signalCode !== null) clean();
  else {
    child.once("exit", clean);
    setTimeout(clean, 5000).unref();
  }
}
child.on("exit", (code, signal) => {
  finish(1, `error: chromium exited (${code ?? signal}) before the page finished\n${chromiumErr}`);
});
child.on("error", (e) => finish(1, `error: cannot start ${chromium}: ${e.message}`));
const timer = setTimeout(
  () => finish(1, `error: no result from ${page} after ${timeoutS} s`),
  timeoutS * 1000,
);

// CDP over the pipe: Chromium reads commands on fd 3 and writes replies on fd 4.
const toChromium = child.stdio[3];
const fromChromium = child.stdio[4];
let nextId = 1;
const pending = new Map();
let buffered = Buffer.alloc(0);
fromChromium.on("data", (chunk) => {
  buffered = Buffer.concat([buffered, chunk]);
  let end;
  while ((end = buffered.indexOf(0)) >= 0) {
    const message = JSON.parse(buffered.subarray(0, end).toString("utf8"));
    buffered = buffered.subarray(end + 1);
    if (message.id && pending.has(message.id)) {
      const { ok, fail } = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) fail(new Error(JSON.stringify(message.error)));
      else ok(message.result);
    }
  }
});
function send(method, params = {}, sessionId) {
  const id = nextId++;
  const message = { id, method, params };
  if (sessionId) message.sessionId = sessionId;
  toChromium.write(JSON.stringify(message) + "\0");
  return new Promise((ok, fail) => pending.set(id, { ok, fail }));
}

try {
  const { targetId } = await send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
  await send("Page.navigate", { url }, sessionId);
  let printed = 0;
  for (;;) {
    await new Promise((ok) => setTimeout(ok, 250));
    const { result, exceptionDetails } = await send(
      "Runtime.evaluate",
      {
        expression: `JSON.stringify({ log: (window.forgeLog || []).slice(${printed}), result: window.forgeResult || null })`,
        returnByValue: true,
      },
      sessionId,
    );
    if (exceptionDetails || typeof result.value !== "string") continue; // still loading
    const state = JSON.parse(result.value);
    for (const line of state.log) console.log(line);
    printed += state.log.length;
    if (state.result) {
      clearTimeout(timer);
      if (state.result.summary) console.log(state.result.summary);
      finish(state.result.ok ? 0 : 1);
      break;
    }
  }
} catch (e) {
  finish(1, `error: DevTools protocol: ${e.message}`);
}
