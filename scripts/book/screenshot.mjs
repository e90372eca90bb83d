// Opens one chapter of the built book in headless Chromium, checks that it rendered (its
// title, and Rust code highlighted by highlight.js: keyword spans inside `code.language-rust`)
// and writes a screenshot of it. Driven over the DevTools pipe, as scripts/web/driver.mjs
// does, with no npm package.
//
// usage: node scripts/book/screenshot.mjs BOOK_DIR CHAPTER.html OUT.png
// Exit status: 0 when the page rendered with highlighted code; 1 otherwise, or after 60 s.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [dir, chapter, out] = process.argv.slice(2);
if (!out) {
  console.error("usage: node scripts/book/screenshot.mjs BOOK_DIR CHAPTER.html OUT.png");
  process.exit(2);
}
const url = pathToFileURL(resolve(dir, chapter)).href;
const profile = mkdtempSync(join(tmpdir(), "forge-book-chromium-"));
const child = spawn(process.env.CHROMIUM ?? "chromium", [
  "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
  "--disable-background-networking", "--disable-component-update", "--no-first-run",
  `--user-data-dir=${profile}`, "--remote-debugging-pipe", "--window-size=1280,1600", "about:blank",
], { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
let stderr = "";
child.stderr.on("data", (d) => (stderr = (stderr + d).slice(-4000)));

function finish(code, message) {
  if (message) console.error(message);
  try { child.kill("SIGKILL"); } catch {}
  const clean = () => { try { rmSync(profile, { recursive: true, force: true }); } catch {} process.exit(code); };
  child.once("exit", clean);
  setTimeout(clean, 3000).unref();
}
child.on("error", (e) => finish(1, `error: cannot start chromium: ${e.message}`));
setTimeout(() => finish(1, `error: ${chapter} did not render within 60 s\n${stderr}`), 60000).unref();

let nextId = 1, buffered = Buffer.alloc(0);
const pending = new Map();
child.stdio[4].on("data", (chunk) => {
  buffered = Buffer.concat([buffered, chunk]);
  let end;
  while ((end = buffered.indexOf(0)) >= 0) {
    const message = JSON.parse(buffered.subarray(0, end).toString("utf8"));
    buffered = buffered.subarray(end + 1);
    const waiter = message.id && pending.get(message.id);
    if (waiter) {
      pending.delete(message.id);
      message.error ? waiter.fail(new Error(JSON.stringify(message.error))) : waiter.ok(message.result);
    }
  }
});
function send(method, params = {}, sessionId) {
  const id = nextId++;
  child.stdio[3].write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + "\0");
  return new Promise((ok, fail) => pending.set(id, { ok, fail }));
}

try {
  const { targetId } = await send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
  await send("Page.navigate", { url }, sessionId);
  // highlight.js runs after the page loads: poll until the spans appear.
  const probe = `JSON.stringify({ title: document.title,
    blocks: document.querySelectorAll("code.language-rust").length,
    keywords: document.querySelectorAll("code.language-rust .hljs-keyword").length })`;
  let state = { blocks: 0, keywords: 0 };
  for (let i = 0; i < 100 && state.keywords === 0; i++) {
    await new Promise((ok) => setTimeout(ok, 200));
    const { result } = await send("Runtime.evaluate", { expression: probe, returnByValue: true }, sessionId);
    if (typeof result.value === "string") state = JSON.parse(result.value);
  }
  console.log(`${chapter}: "${state.title}", ${state.blocks} Rust blocks, ${state.keywords} highlighted keywords`);
  const { data } = await send("Page.captureScreenshot", { format: "png" }, sessionId);
  writeFileSync(out, Buffer.from(data, "base64"));
  console.log(`screenshot: ${out}`);
  if (state.blocks === 0 || state.keywords === 0) finish(1, `error: ${chapter} shows no highlighted Rust code`);
  else finish(0);
} catch (e) {
  finish(1, `error: DevTools protocol: ${e.message}`);
}
