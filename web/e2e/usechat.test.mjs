// README's useChat component (web/examples/usechat/Chat.tsx, bundled by
// `npm run build:examples`) in Chromium, served from an origin of its own
// against the real server (allowed by CORS_ALLOWED_ORIGINS), both
// emulators and a streaming model: send, stream, stop, regenerate with no
// argument (as the component calls it), reload. Run by `make test`.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import http from "node:http";
import { extname, join } from "node:path";
import { chromium } from "playwright-core";
import { authHost, buildServer, email, freePort, missingEmulators, modelServer, project, root, startServer } from "./helpers.mjs";

const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
const missing = missingEmulators("the useChat test") || (!existsSync(chromiumPath) ? `Chromium at ${chromiumPath}` : "");
if (missing && process.env.CI === "true") throw new Error(`the useChat test needs ${missing}`);
const dir = join(root, "web", "examples", "usechat");

// The model: "slow:" streams a long answer slowly (to stop); every answer
// is numbered, so a regenerated one differs.
let answers = 0;
const startModel = () => modelServer((r) => {
  const last = r.messages[r.messages.length - 1]?.content ?? "";
  if (r.messages[0]?.content?.startsWith("Write a title")) return { text: "useChat example" };
  if (last.startsWith("slow:")) return { text: Array.from({ length: 60 }, (_, i) => `w${i}`).join(" "), delay: 150 };
  return { text: `echo: ${last} #${++answers}` };
});

// The page's own origin: index.html and its bundle.
const serveExample = (port) => new Promise((ok) => {
  const types = { ".html": "text/html", ".js": "text/javascript" };
  const srv = http.createServer((req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    const file = join(dir, path === "/" ? "index.html" : path);
    if (!file.startsWith(dir) || !existsSync(file)) { res.writeHead(404); return res.end(); }
    res.writeHead(200, { "Content-Type": types[extname(file)] ?? "application/octet-stream" });
    res.end(readFileSync(file));
  });
  srv.listen(port, "127.0.0.1", () => ok(srv));
});

let model, server, site, browser, base, pageBase;
before(async () => {
  if (missing) return;
  model = await startModel();
  const port = await freePort();
  pageBase = `http://127.0.0.1:${port}`;
  site = await serveExample(port);
  ({ server, base } = await startServer(buildServer(), [], { STORAGE_BACKEND: "firestore", GOOGLE_CLOUD_PROJECT: project,
    OPENAI_API_KEY: "test", OPENAI_BASE_URL: `http://127.0.0.1:${model.address().port}/v1`, CORS_ALLOWED_ORIGINS: pageBase }));
  browser = await chromium.launch({ executablePath: chromiumPath, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic"] });
});
after(async () => {
  await browser?.close();
  server?.kill("SIGTERM");
  model?.close();
  site?.close();
});

// README and docs/clients.md show this file: each line of their tsx block
// after the link to Chat.tsx is one of its lines (comments aside).
test("README and docs/clients.md show the component's own lines", () => {
  const code = (l) => l.replace(/\s+\/\/ .*$/, "").trim();
  const file = new Set(readFileSync(join(dir, "Chat.tsx"), "utf8").split("\n").map(code));
  for (const doc of ["README.md", join("docs", "clients.md")]) {
    const text = readFileSync(join(root, doc), "utf8");
    const block = text.slice(text.indexOf("```tsx", text.indexOf("usechat/Chat.tsx")) + 6).split("```")[0];
    const lines = block.split("\n").map(code).filter((l) => l && !l.startsWith("//"));
    assert.ok(lines.length >= 8, `${doc} shows the component`);
    for (const l of lines) assert.ok(file.has(l), `${doc} shows a line that is not in Chat.tsx: ${l}`);
  }
});

const shown = (page) => page.locator("form > p:not([role])").allTextContents();

test("README's useChat component: send, stream, stop, regenerate, reload", { skip: missing ? `needs ${missing}` : false, timeout: 180_000 }, async () => {
  const page = await browser.newPage();
  // Every request the component makes to the chat endpoint, and every answer.
  const posts = [], failures = [];
  page.on("request", (r) => { if (r.method() === "POST" && r.url().endsWith("/ai-sdk/chat")) posts.push(JSON.parse(r.postData())); });
  page.on("response", (r) => { if (r.url().startsWith(base) && r.status() >= 400) failures.push(`${r.status()} ${r.request().method()} ${r.url()}`); });
  page.on("pageerror", (e) => failures.push(`page error: ${e.message}`));
  const chat = `usechat-${Date.now()}`;
  await page.goto(`${pageBase}/?api=${encodeURIComponent(base)}&auth=${authHost}&project=${project}&chat=${chat}&email=${email("usechat")}`);
  await page.waitForSelector("form input[name=q]");

  // Send: the reply streams in.
  await page.fill("input[name=q]", "hello");
  await page.click("button:has-text('Send')");
  await page.waitForSelector("p.assistant:has-text('echo: hello #')");
  assert.deepEqual(await shown(page), ["user: hello", `assistant: echo: hello #${answers}`]);
  // The reply's text shows before its stream ends: the finish chunk comes
  // once the reply is stored (a commit, slow on a loaded emulator), and
  // until then the component is busy and drops a submit, as a user's
  // Enter while Stop shows. Send is back when the stream has ended.
  await page.waitForSelector("button:has-text('Send')");

  // Stream, then Stop mid-reply: the reply ends where it was stopped, and
  // no second request (an empty user message) follows the click.
  await page.fill("input[name=q]", "slow: talk");
  await page.press("input[name=q]", "Enter");
  await page.waitForFunction(() => document.querySelector("input[name=q]").value === "", null, { timeout: 5000 }); // sent, not dropped
  await page.waitForSelector("p.assistant:has-text('w2 ')");
  const before = posts.length;
  await page.evaluate(() => { window.submits = 0; document.querySelector("form").addEventListener("submit", () => window.submits++); });
  await page.click("button:has-text('Stop')");
  await page.waitForSelector("button:has-text('Send')");
  await new Promise((ok) => setTimeout(ok, 1000)); // what a click that also submits would send, sent by now
  assert.equal(posts.length, before, "Stop sent nothing more");
  assert.equal(await page.evaluate(() => window.submits), 0, "Stop did not submit the form");
  const stopped = await shown(page);
  assert.equal(stopped.length, 4, `after Stop: ${JSON.stringify(stopped)}`);
  assert.equal(stopped[2], "user: slow: talk");
  assert.match(stopped[3], /^assistant: w0 w1 w2 /);
  assert.ok(!stopped[3].includes("w59"), "the reply stopped before its end");
  for (const p of posts) assert.ok(p.messages.filter((m) => m.role === "user").every((m) => m.parts.some((x) => x.type === "text" && x.text.trim())), "no empty user message is sent");

  // Regenerate, as the component calls it: regenerate() with no messageId.
  await page.fill("input[name=q]", "again");
  await page.press("input[name=q]", "Enter");
  await page.waitForSelector("p.assistant:has-text('echo: again #')");
  const first = (await shown(page)).at(-1);
  await page.click("button:has-text('Regenerate')");
  // A new reply in place of the last, or the error the component shows.
  await page.waitForFunction((was) => {
    const t = [...document.querySelectorAll("form > p.assistant")].at(-1)?.textContent;
    return document.querySelector("p[role=alert]") || (t && t !== was && /#\d+$/.test(t));
  }, first);
  assert.deepEqual(await page.locator("p[role=alert]").allTextContents(), [], "regenerate() with no argument failed");
  assert.equal(posts.at(-1).trigger, "regenerate-message");
  assert.equal(posts.at(-1).messageId, undefined, "regenerate() sends no messageId");
  const regenerated = await shown(page);
  assert.equal(regenerated.length, 6);
  assert.notEqual(regenerated[5], first);
  assert.match(regenerated[5], /^assistant: echo: again #\d+$/);

  // Reload: the chat loads back as it was shown (the stopped reply as stored).
  await page.waitForSelector("button:has-text('Send')");
  await page.reload();
  await page.waitForSelector("p.assistant");
  await page.waitForFunction((n) => document.querySelectorAll("form > p:not([role])").length === n, regenerated.length);
  const loaded = await shown(page);
  // The stopped reply as stored: where the server saw the client go.
  assert.match(loaded[3], /^assistant: w0 w1 w2 /);
  assert.deepEqual([...loaded.slice(0, 3), ...loaded.slice(4)], [...regenerated.slice(0, 3), ...regenerated.slice(4)]);
  assert.equal(await page.locator("p[role=alert]").count(), 0);
  assert.deepEqual(failures, []);
  await page.close();
});
