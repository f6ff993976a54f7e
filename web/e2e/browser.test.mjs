// End-to-end: the web app in Debian's Chromium (driven by playwright-core)
// against the real server, both emulators under the repo's security rules,
// and an OpenAI-compatible model that streams. Run by `make test` (npm run
// test:web under the emulators).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import http from "node:http";
import { chromium } from "playwright-core";
import { authHost, buildServer, email, embeddings, missingEmulators, project, root, signUpToken, startServer } from "./helpers.mjs";

const shots = join(root, "web", "e2e", "screenshots");
const firestoreHost = process.env.FIRESTORE_EMULATOR_HOST;
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";

// Under CI=true a missing emulator or browser fails the test; elsewhere it skips.
const missing = missingEmulators("the browser test") || (!existsSync(chromiumPath) ? `Chromium at ${chromiumPath}` : "");
if (missing && process.env.CI === "true") throw new Error(`the browser test needs ${missing}`);

let server, model, browser, base;
let answers = 0;

// An OpenAI-compatible model: chat turns stream "echo: <message>" word by
// word; titles, summaries and memory extraction get short fixed answers.
function startModel() {
  return new Promise((resolve) => {
    const srv = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", async () => {
        const r = JSON.parse(body);
        if (req.url.endsWith("/embeddings")) return embeddings(r, res);
        const system = r.messages[0]?.content ?? "";
        const last = r.messages[r.messages.length - 1]?.content ?? "";
        let text = "echo: " + last;
        // "long:" messages get a long answer, to stop or to reload during.
        if (last.startsWith("long:")) text += " " + Array.from({ length: 80 }, (_, i) => `word${i}`).join(" ");
        // "count:" messages get a numbered answer, so versions differ.
        if (last.startsWith("count:")) text += ` #${++answers}`;
        // "md:" messages get Markdown with HTML a page must never run.
        if (last.startsWith("md:")) text = "**Bold** and `code`\n\n- one\n- two\n\n```\nx := 1\n```\n\n<script>window.pwned = 1</script> <img src=x onerror=\"window.pwned = 2\"> [a link](javascript:window.pwned=3)";
        if (system.startsWith("Write a title")) text = "Browser test chat";
        else if (system.startsWith("You maintain the running summary")) text = "A summary.";
        else if (system.startsWith("You maintain a long-term memory")) {
          text = last.includes("Oslo")
            ? '{"profile":{"work":null,"personal":"Lives in Oslo.","focus":null},"facts":[{"content":"The user lives in Oslo.","category":"personal","confidence":0.9}]}'
            : '{"profile":null,"facts":[]}';
        }
        else if (system.startsWith("Compare each new candidate")) text = '{"decisions":[]}';
        // Offered tools, a "tool:" message gets a call of the first; a
        // tool's result is echoed.
        const lastRole = r.messages[r.messages.length - 1]?.role;
        if (lastRole === "tool") text = "echo tool: " + last;
        const call = r.tools?.length && lastRole === "user" && last.startsWith("tool:")
          ? { index: 0, id: `call_${r.messages.length}`, type: "function", function: { name: r.tools[0].function.name, arguments: '{"q":"x"}' } }
          : null;
        if (call && !r.stream) {
          res.setHeader("Content-Type", "application/json");
          res.end(JSON.stringify({ id: "x", object: "chat.completion", model: r.model,
            choices: [{ index: 0, message: { role: "assistant", content: null, tool_calls: [call] }, finish_reason: "tool_calls" }],
            usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }));
          return;
        }
        if (call) {
          res.setHeader("Content-Type", "text/event-stream");
          const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", model: r.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
          res.write(chunk({ tool_calls: [call] }));
          res.write(chunk({}, "tool_calls"));
          res.end("data: [DONE]\n\n");
          return;
        }
        if (!r.stream) {
          res.setHeader("Content-Type", "application/json");
          res.end(JSON.stringify({ id: "x", object: "chat.completion", model: r.model,
            choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
            usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }));
          return;
        }
        res.setHeader("Content-Type", "text/event-stream");
        const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", model: r.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        for (const w of text.split(/(?<= )/)) {
          res.write(chunk({ content: w }));
          await new Promise((ok) => setTimeout(ok, 120));
        }
        res.write(chunk({}, "stop"));
        res.end("data: [DONE]\n\n");
      });
    });
    srv.listen(0, "127.0.0.1", () => resolve(srv));
  });
}

before(async () => {
  if (missing) return;
  mkdirSync(shots, { recursive: true });
  // The emulator enforces the repo's rules for this project's end users.
  const rules = readFileSync(join(root, "firestore.rules"), "utf8");
  const put = await fetch(`http://${firestoreHost}/emulator/v1/projects/${project}:securityRules`, {
    method: "PUT", body: JSON.stringify({ rules: { files: [{ name: "firestore.rules", content: rules }] } }) });
  assert.equal(put.status, 200, "loading the rules");

  model = await startModel();
  ({ server, base } = await startServer(buildServer(), ["-web", join(root, "web")], { STORAGE_BACKEND: "firestore", GOOGLE_CLOUD_PROJECT: project,
    OPENAI_API_KEY: "test", OPENAI_BASE_URL: `http://127.0.0.1:${model.address().port}/v1`, DRAFT_INTERVAL_MS: "200" }));
  browser = await chromium.launch({
    executablePath: chromiumPath, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--disable-quic"],
  });
});

after(async () => {
  await browser?.close();
  server?.kill("SIGTERM");
  model?.close();
});


async function signUp(page, address) {
  await page.goto(base);
  await page.fill("#email", address);
  await page.fill("#password", "password123");
  await page.click("#signup");
  await page.waitForSelector("#app:not([hidden])");
}

// readOnly checks that the open chat says why it takes no message, and
// that nothing that would write to it can be used.
async function readOnly(page, why) {
  await page.waitForSelector("#readonly:not([hidden])");
  assert.match(await page.textContent("#readonly-text"), why);
  assert.ok(await page.isDisabled("#input"), "the composer is disabled");
  assert.ok(await page.isDisabled("#send"), "Send is disabled");
  for (const b of await page.locator("#messages .regenerate, #messages .edit, #messages .rate-up, #messages .rate-down").all()) {
    assert.ok(await b.isDisabled(), "a button that writes is disabled");
  }
}

// contrast checks WCAG AA (4.5:1) for the text of every element visible
// on the page that holds text of its own, against the background it sits on.
async function contrast(page) {
  const low = await page.evaluate(() => {
    const rgb = (c) => (c.match(/[\d.]+/g) ?? []).map(Number);
    const lum = ([r, g, b]) => {
      const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const background = (e) => {
      for (; e; e = e.parentElement) {
        const c = rgb(getComputedStyle(e).backgroundColor);
        if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3);
      }
      return [255, 255, 255];
    };
    const out = [];
    for (const e of document.querySelectorAll("body *")) {
      const own = [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
      const s = getComputedStyle(e);
      if (!own || !e.getClientRects().length || s.visibility === "hidden" || e.closest("[disabled], [hidden]")) continue;
      const [a, b] = [lum(rgb(s.color).slice(0, 3)), lum(background(e))];
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      if (ratio < 4.5) out.push(`${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}.${e.className} "${e.textContent.trim().slice(0, 30)}": ${ratio.toFixed(2)}`);
    }
    return out;
  });
  assert.deepEqual(low, [], "text below WCAG AA contrast");
}

// inView checks that selector is wholly inside the viewport.
async function inView(page, selector) {
  const box = await page.locator(selector).boundingBox();
  const { height } = page.viewportSize();
  assert.ok(box && box.y >= 0 && box.y + box.height <= height, `${selector} is out of view: ${JSON.stringify(box)}`);
}

async function send(page, text) {
  await page.fill("#input", text);
  await page.press("#input", "Enter");
  // The reply renders while it streams, then stays as the stored message.
  await page.waitForSelector("#messages li.streaming");
  const partial = await page.textContent("#messages li.streaming .body");
  assert.ok(("echo: " + text).startsWith(partial.replace("…", "")) , `streamed so far: ${partial}`);
  await page.waitForSelector(`#messages li.assistant:not(.streaming):has-text("echo: ${text}")`);
}

test("a user chats, reloads, renames and archives; another user sees none of it", { skip: missing ? `needs ${missing}` : false }, async () => {
  const first = email("first");
  const context = await browser.newContext({ acceptDownloads: true });
  const page = await context.newPage();
  await page.goto(base);
  await page.waitForSelector("#auth:not([hidden])");
  await page.screenshot({ path: join(shots, "sign-in.png") });
  await signUp(page, first);

  await send(page, "Hello one");
  await send(page, "Hello two");
  await page.waitForSelector("#sessions li");
  assert.equal(await page.locator("#sessions li").count(), 1);

  // After a reload the user is still signed in and the history is there.
  await page.reload();
  await page.waitForSelector("#sessions li .name");
  await page.click("#sessions li .name");
  await page.waitForFunction(() => document.querySelectorAll("#messages > li").length === 4);
  const texts = await page.locator("#messages > li .body").allTextContents();
  assert.deepEqual(texts, ["Hello one", "echo: Hello one", "Hello two", "echo: Hello two"]);
  // Rating a reply: the thumb shows pressed (from the message document),
  // and pressing it again withdraws the rating.
  // The thumbs are icons with words for assistive technology.
  assert.equal(await page.getAttribute("#messages > li.assistant:last-child .rate-up", "aria-label"), "Good reply");
  assert.equal(await page.locator("#messages > li.assistant:last-child .rate-down svg").count(), 1);
  await page.click("#messages > li.assistant:last-child .rate-up");
  await page.waitForSelector("#messages > li.assistant:last-child .rate-up[aria-pressed='true']");
  await page.click("#messages > li.assistant:last-child .rate-down");
  await page.waitForSelector("#messages > li.assistant:last-child .rate-down[aria-pressed='true']");
  await page.waitForSelector("#messages > li.assistant:last-child .rate-up[aria-pressed='false']");
  // The day's spend against the limit, and the chat's totals.
  await page.waitForFunction(() => /^Today: [\d,]+ of [\d,]+ tokens$/.test(document.querySelector("#usage").textContent));
  await page.waitForFunction(() => /^This chat: 2 replies, [\d,]+ tokens/.test(document.querySelector("#session-usage").textContent));
  await page.screenshot({ path: join(shots, "chat.png") });

  await page.screenshot({ path: join(root, "docs", "screenshot.png") });

  // Rename, in the page's own dialog: the live list shows the new title. A
  // title too long is the API's error, in a banner that leaves the
  // composer in view, until dismissed.
  await page.click("#sessions li button:has-text('Rename')");
  await page.waitForSelector("#dialog[open]");
  await page.fill("#dialog-input", "x".repeat(300));
  await page.click("#dialog-ok");
  await page.waitForSelector("#error:not([hidden])");
  assert.match(await page.textContent("#error-text"), /title/);
  await inView(page, "#composer");
  await page.click("#error-close");
  await page.waitForSelector("#error", { state: "hidden" });
  await page.click("#sessions li button:has-text('Rename')");
  await page.fill("#dialog-input", "Trip plans");
  await page.click("#dialog-ok");
  await page.waitForSelector("#sessions li .name:has-text('Trip plans')");

  // Export downloads the user's data.
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#export")]);
  const exported = JSON.parse(readFileSync(await download.path(), "utf8"));
  assert.equal(exported.sessions.length, 1);
  assert.equal(exported.sessions[0].messages.length, 4);

  // Archive the open chat: it leaves the active list, and the view says it
  // is archived, takes no message, and offers to restore it.
  await page.click("#sessions li button:has-text('Archive')");
  await page.waitForFunction(() => document.querySelectorAll("#sessions li").length === 0);
  await readOnly(page, /archived/);
  await page.screenshot({ path: join(shots, "archived.png") });
  await page.click("#readonly-restore");
  await page.waitForSelector("#readonly", { state: "hidden" });
  assert.equal(await page.isDisabled("#input"), false, "restored, it takes messages again");
  // Deleted (after the page's own confirmation), likewise.
  await page.click("#sessions li button:has-text('Delete')");
  await page.waitForSelector("#dialog[open]");
  await page.click("#dialog-ok");
  await readOnly(page, /deleted/);
  await page.click("#readonly-restore");
  await page.waitForSelector("#readonly", { state: "hidden" });
  await page.click("#sessions li button:has-text('Archive')");
  await page.selectOption("#filter", "archived");
  await page.waitForSelector("#sessions li .name:has-text('Trip plans')");

  // On a phone-sized screen.
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const p = await phone.newPage();
  await p.goto(base);
  await p.fill("#email", first);
  await p.fill("#password", "password123");
  await p.click("#signin");
  await p.waitForSelector("#app:not([hidden])");
  await p.selectOption("#filter", "archived");
  await p.click("#sessions li .name");
  await p.waitForFunction(() => document.querySelectorAll("#messages > li").length === 4);
  await readOnly(p, /archived/);
  // The header on one line, the composer at the bottom of the screen.
  const header = await p.locator("header").boundingBox();
  assert.ok(header.height < 60, `the header is ${header.height}px high`);
  const composer = await p.locator("#composer").boundingBox();
  assert.ok(composer.y + composer.height > 844 - 40 && composer.y + composer.height <= 844, `the composer ends at ${composer.y + composer.height}px of 844`);
  await p.screenshot({ path: join(shots, "phone.png") });
  await phone.close();

  // A second user, in a fresh context, sees none of it.
  const other = await browser.newContext();
  const q = await other.newPage();
  await signUp(q, email("second"));
  for (const status of ["active", "archived", "deleted"]) {
    await q.selectOption("#filter", status);
    await q.waitForTimeout(500); // give the live query time to deliver anything
    assert.equal(await q.locator("#sessions li").count(), 0, `second user's ${status} list`);
  }
  await q.screenshot({ path: join(shots, "second-user.png") });
  await other.close();
  await context.close();
});

test("a reply in progress survives a reload and can be stopped from the reloaded page", { skip: missing ? `needs ${missing}` : false }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await signUp(page, email("reload"));
  await page.fill("#input", "long: tell me everything");
  await page.press("#input", "Enter");
  await page.waitForSelector("#messages li.streaming");
  await page.waitForSelector("#stop:not([hidden])");
  await page.waitForFunction(() => (document.querySelector("#messages li.streaming")?.textContent ?? "").includes("word3"));
  await page.waitForSelector("#sessions li .name");

  // Reload mid-reply: the session's draft brings the reply back, still growing.
  await page.reload();
  await page.waitForSelector("#sessions li .name");
  await page.click("#sessions li .name");
  await page.waitForSelector("#messages li.streaming.following");
  const before = await page.textContent("#messages li.streaming.following .body");
  await page.waitForFunction((t) => {
    const now = document.querySelector("#messages li.streaming.following")?.textContent ?? "";
    return now.length > t.length;
  }, before);
  assert.ok(before.startsWith("echo: long: tell me everything"), `picked up: ${before}`);
  await page.screenshot({ path: join(shots, "reloaded-mid-reply.png") });

  // Stop it from here: what was said is kept, marked stopped, and no more comes.
  await page.click("#stop");
  await page.waitForFunction(() => !document.querySelector("#messages li.streaming"));
  await page.waitForFunction(() => document.querySelectorAll("#messages li.assistant").length === 1);
  const stopped = await page.textContent("#messages li.assistant .body");
  assert.ok(stopped.startsWith("echo: long: tell me everything") && !stopped.includes("word79"), `stopped reply: ${stopped}`);
  await page.waitForTimeout(800);
  assert.equal(await page.textContent("#messages li.assistant .body"), stopped, "the reply went on after the stop");
  assert.ok(await page.isHidden("#stop"));
  await context.close();
});

test("replies render as Markdown without running HTML; the memory panel shows, forgets and switches off", { skip: missing ? `needs ${missing}` : false }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await signUp(page, email("memory"));

  await page.fill("#input", "md: format this");
  await page.press("#input", "Enter");
  await page.waitForSelector("#messages li.assistant:not(.streaming) strong");
  const reply = page.locator("#messages li.assistant:not(.streaming)").last();
  assert.equal(await reply.locator("strong").textContent(), "Bold");
  assert.equal(await reply.locator("li").count(), 2);
  assert.equal(await reply.locator("pre code").textContent(), "x := 1");
  assert.equal(await reply.locator("img, script").count(), 0, "raw HTML became elements");
  assert.equal(await reply.locator("a").count(), 0, "a javascript: link became a link");
  assert.match(await reply.locator(".body").textContent(), /<script>/, "raw HTML stays visible as text");
  assert.equal(await page.evaluate(() => window.pwned), undefined, "the reply ran code");

  // Three more messages, one saying where the user lives: the extraction
  // after the sixth message learns it.
  await send(page, "I live in Oslo");
  await send(page, "Nice weather today");
  await page.click("#memory-open");
  await page.waitForSelector("#memory:not([hidden])");
  for (let i = 0; i < 40 && !(await page.locator("#facts li[data-id]").count()); i++) {
    await page.waitForTimeout(250);
    await page.click("#memory-close"); // close
    await page.click("#memory-open"); // and open again, to reload
    await page.waitForSelector("#memory:not([hidden])");
  }
  assert.equal(await page.textContent("#facts li[data-id]"), "The user lives in Oslo. Forget");
  assert.match(await page.textContent("#profile"), /personal: Lives in Oslo\./);
  assert.match(await page.textContent("#history"), /the daily roll-up writes it/, "the history section, empty until a roll-up");
  assert.ok(await page.isChecked("#memory-enabled"));
  await page.screenshot({ path: join(shots, "memory.png") });

  await page.click("#facts li[data-id] button:has-text('Forget')");
  await page.waitForSelector("#facts li.none");
  await page.click("#memory-enabled");
  await page.waitForFunction(() => !document.querySelector("#memory-enabled").checked);
  await page.waitForFunction(() => /Memory is off/.test(document.querySelector("#facts li.none")?.textContent ?? ""), null, { timeout: 5000 }); // the empty state says why
  await page.press("#memory-enabled", "Escape"); // Escape closes the drawer
  await page.waitForSelector("#memory", { state: "hidden" });
  await page.click("#memory-open");
  await page.waitForSelector("#memory:not([hidden])");
  await page.waitForTimeout(300);
  assert.equal(await page.isChecked("#memory-enabled"), false, "memory is off after a reload of the panel");
  await context.close();
});

test("regenerate, edit and flip between versions; the branch shown survives a reload", { skip: missing ? `needs ${missing}` : false }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await signUp(page, email("branches"));
  const bodies = () => page.locator("#messages > li .body").allTextContents();
  const settled = () => page.waitForFunction(() => !document.querySelector("#messages li.streaming"));

  await page.fill("#input", "count: first");
  await page.press("#input", "Enter");
  await page.waitForSelector("#messages > li.assistant:not(.streaming) .regenerate");
  const [, first] = await bodies();
  assert.match(first, /^echo: count: first #\d+$/);

  // Regenerate: a second version beside the first, shown as 2 / 2.
  await page.click("#messages > li.assistant .regenerate");
  await page.waitForSelector("#messages > li.assistant .version:has-text('2 / 2')");
  await settled();
  const [, second] = await bodies();
  assert.ok(second !== first && second.startsWith("echo: count: first #"), `regenerated: ${second}`);
  await page.screenshot({ path: join(shots, "regenerated.png") });

  // Flip back to the first version and forward again.
  await page.click("#messages > li.assistant .prev");
  await page.waitForSelector("#messages > li.assistant .version:has-text('1 / 2')");
  assert.deepEqual(await bodies(), ["count: first", first]);
  await page.click("#messages > li.assistant .next");
  await page.waitForSelector("#messages > li.assistant .version:has-text('2 / 2')");
  assert.deepEqual(await bodies(), ["count: first", second]);

  // Edit the question: a new branch with its own answer.
  await page.click("#messages > li.user .edit");
  await page.waitForSelector("#dialog[open]");
  await page.fill("#dialog-input", "count: edited");
  await page.click("#dialog-ok");
  await page.waitForSelector("#messages > li.user .version:has-text('2 / 2')");
  await page.waitForSelector("#messages > li.assistant:not(.streaming) .body:has-text('echo: count: edited #')");
  await settled();
  const edited = await bodies();
  assert.equal(edited.length, 2);
  assert.equal(edited[0], "count: edited");
  await page.screenshot({ path: join(shots, "edited.png") });

  // After a reload the edited branch is still the one shown.
  await page.reload();
  await page.waitForSelector("#sessions li .name");
  await page.click("#sessions li .name");
  await page.waitForSelector("#messages > li.user .version:has-text('2 / 2')");
  assert.deepEqual(await bodies(), edited);

  // Back to the original question: its latest answer comes with it, and
  // the conversation continues on that branch.
  await page.click("#messages > li.user .prev");
  await page.waitForSelector("#messages > li.user .version:has-text('1 / 2')");
  await page.waitForSelector("#messages > li.assistant .version:has-text('2 / 2')");
  assert.deepEqual(await bodies(), ["count: first", second]);
  await send(page, "and then?");
  assert.deepEqual(await bodies(), ["count: first", second, "and then?", "echo: and then?"]);
  await context.close();
});

test("a user searches their chats and opens a hit at its message", { skip: missing ? `needs ${missing}` : false }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await signUp(page, email("search"));
  await send(page, "Which PDF library parses invoices best?");
  await send(page, "And what about spreadsheets?");
  await page.click("#new");
  await send(page, "Plan a weekend in Lisbon");
  await page.waitForFunction(() => document.querySelectorAll("#sessions li").length === 2);
  await page.fill("#q", "pdf library for invoices");
  await page.press("#q", "Enter");
  await page.waitForSelector("#hits .hit");
  assert.match(await page.textContent("#hits li:first-child .snippet"), /PDF library/);
  await page.screenshot({ path: join(shots, "search.png") });
  await page.click("#hits li:first-child .hit");
  await page.waitForSelector("#messages li.found");
  assert.match(await page.textContent("#messages li.found"), /PDF library/);
  assert.equal(await page.locator("#messages > li").count(), 4);
  await page.fill("#q", "zzzz qqqq");
  await page.press("#q", "Enter");
  await page.waitForSelector("#hits li.none");
  // A cleared search box clears what it found, the outline too.
  await page.fill("#q", "");
  await page.waitForFunction(() => !document.querySelector("#hits li") && !document.querySelector("#messages li.found"));
  await context.close();
});

test("first impressions: friendly sign-in errors, a favicon, no missing file, on a desktop and a phone", { skip: missing ? `needs ${missing}` : false }, async () => {
  for (const viewport of [{ width: 1280, height: 800 }, { width: 390, height: 844 }]) {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    const missingFiles = [];
    page.on("response", (r) => { if (r.status() === 404) missingFiles.push(r.url()); });
    await page.goto(base);
    await page.waitForSelector("#auth:not([hidden])");
    assert.equal(await page.getAttribute("link[rel=icon]", "href"), "/favicon.svg");
    assert.equal((await page.request.get(base + "/favicon.svg")).status(), 200);
    await page.fill("#email", email("weak"));
    await page.fill("#password", "123");
    await page.click("#signup");
    await page.waitForSelector("#error:not([hidden])");
    assert.equal(await page.textContent("#error-text"), "Choose a password of at least 6 characters.");
    await inView(page, "#auth");
    await page.fill("#password", "password123");
    await page.click("#signup");
    await page.waitForSelector("#app:not([hidden])");
    await send(page, "Hi from a " + viewport.width + "px screen");
    await inView(page, "#composer");
    await contrast(page);
    await page.click("#memory-open");
    await page.waitForSelector("#memory:not([hidden])");
    await contrast(page);
    await page.press("#memory-close", "Escape");
    assert.deepEqual(missingFiles, [], "every file the page asked for exists");
    await context.close();
  }
});

test("a chat's settings: its own instructions and its model, kept across a reload", { skip: missing ? `needs ${missing}` : false }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await signUp(page, email("settings"));
  assert.ok(await page.isHidden("#settings-open"), "no settings before a chat exists");
  await send(page, "Hello there");
  await page.waitForSelector("#sessions li.current");
  await page.click("#settings-open");
  await page.waitForSelector("#settings:not([hidden])");
  assert.equal(await page.getAttribute("#settings-open", "aria-expanded"), "true");
  assert.ok((await page.locator("#model option").count()) >= 1, "the offered models are listed");
  await page.fill("#instructions", "Answer briefly, like a pirate.");
  await page.screenshot({ path: join(shots, "settings.png") });
  await page.click("#settings-save");
  await page.waitForSelector("#settings", { state: "hidden" });

  await page.reload();
  await page.waitForSelector("#sessions li .name");
  await page.click("#sessions li .name");
  await page.click("#settings-open");
  await page.waitForSelector("#settings:not([hidden])");
  await page.waitForFunction(() => document.querySelector("#instructions").value === "Answer briefly, like a pirate.");
  await page.press("#instructions", "Escape");
  await page.waitForSelector("#settings", { state: "hidden" });
  await context.close();
});

test("a Firebase app calls the backend with the JS SDK's callable functions, streaming included", { skip: missing ? `needs ${missing}` : false }, async () => {
  // The real Firebase JS SDK, in Node, as a web app uses it.
  const { initializeApp, deleteApp } = await import("firebase/app");
  const { getAuth, connectAuthEmulator, createUserWithEmailAndPassword, signOut } = await import("firebase/auth");
  const { getFunctions, httpsCallableFromURL } = await import("firebase/functions");
  const sdk = (name) => {
    const app = initializeApp({ apiKey: "demo-key", projectId: project, authDomain: `${project}.firebaseapp.com` }, name);
    const auth = getAuth(app);
    connectAuthEmulator(auth, `http://${authHost}`, { disableWarnings: true });
    const functions = getFunctions(app);
    return { app, auth, call: (fn) => httpsCallableFromURL(functions, `${base}/callable/${fn}`) };
  };
  const alice = sdk("alice"), bob = sdk("bob");
  await createUserWithEmailAndPassword(alice.auth, email("callable-a"), "password123");
  await createUserWithEmailAndPassword(bob.auth, email("callable-b"), "password123");

  // A streamed turn: the session, the reply's pieces as they come, then the result.
  const { stream, data } = await alice.call("chat").stream({ message: "Hello over callables" });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  const result = await data;
  assert.equal(chunks[0].type, "session");
  const deltas = chunks.filter((c) => c.type === "delta").map((c) => c.text);
  assert.ok(deltas.length > 1, `streamed in ${deltas.length} pieces`);
  assert.equal(deltas.join(""), "echo: Hello over callables");
  assert.equal(result.reply.content, "echo: Hello over callables");
  const sessionId = result.sessionId;

  // Plain calls: list sessions, a typed error for another user's session.
  const list = await alice.call("listSessions")({ limit: 10 });
  assert.deepEqual(list.data.sessions.map((s) => s.id), [sessionId]);
  await assert.rejects(bob.call("getSession")({ sessionId }), (e) => e.code === "functions/not-found" && /not found/i.test(e.message));
  await assert.rejects(alice.call("getSession")({}), (e) => e.code === "functions/invalid-argument");

  // Signed out: unauthenticated, plain and streamed.
  await signOut(alice.auth);
  await assert.rejects(alice.call("listSessions")({}), (e) => e.code === "functions/unauthenticated");
  const signedOut = await alice.call("chat").stream({ message: "anyone?" });
  await assert.rejects(signedOut.data, (e) => e.code === "functions/unauthenticated");
  await Promise.all([deleteApp(alice.app), deleteApp(bob.app)]);
});

test("the typed client: a streamed turn as events, a tool round, typed errors, cancellation; the web app shows the tool exchange", { skip: missing ? `needs ${missing}` : false }, async () => {
  // The client as the web app bundles it, for Node.
  const out = join(mkdtempSync(join(tmpdir(), "chat-client-")), "client.mjs");
  execFileSync(join(root, "node_modules", ".bin", "esbuild"), ["web/client/index.ts", "--bundle", "--format=esm", "--platform=node", `--outfile=${out}`], { cwd: root });
  const { ChatMemoryClient, ApiError } = await import(out);
  const aliceEmail = email("client-a");
  const [aliceToken, bobToken] = await Promise.all([signUpToken(aliceEmail), signUpToken(email("client-b"))]);
  const alice = new ChatMemoryClient({ baseUrl: base, idToken: async () => aliceToken });
  const bob = new ChatMemoryClient({ baseUrl: base, idToken: async () => bobToken });

  const events = [];
  let response;
  const turn = alice.chat({ message: "typed hello" });
  for (;;) {
    const { value, done } = await turn.next();
    if (done) { response = value; break; }
    events.push(value.type);
  }
  assert.equal(events[0], "session");
  assert.equal(events.at(-1), "done");
  assert.ok(events.filter((t) => t === "delta").length > 1);
  assert.equal(response.reply.content, "echo: typed hello");
  const page = await alice.listMessages(response.sessionId);
  assert.deepEqual(page.messages.map((m) => m.content), ["typed hello", "echo: typed hello"]);

  // Errors are typed values.
  await assert.rejects(bob.getSession(response.sessionId), (e) => e instanceof ApiError && e.status === 404 && e.code === "not_found");
  await assert.rejects(alice.chat({ sessionId: response.sessionId, message: "" }).next(), (e) => e instanceof ApiError && e.code === "invalid_argument");

  // A tool round: the calls arrive as an event, done says requires_action,
  // the results continue the turn.
  const tools = [{ name: "search_docs", parameters: { type: "object", properties: { q: { type: "string" } } } }];
  const round = [];
  let asked;
  for (const it = alice.chat({ sessionId: response.sessionId, message: "tool: find the docs", tools }); ;) {
    const { value, done } = await it.next();
    if (done) { asked = value; break; }
    round.push(value.type);
  }
  assert.deepEqual(round, ["session", "tool_calls", "done"]);
  assert.equal(asked.status, "requires_action");
  assert.equal(asked.toolCalls[0].function.name, "search_docs");
  let answered;
  for (const it = alice.chat({ sessionId: response.sessionId, toolResults: [{ toolCallId: asked.toolCalls[0].id, content: "docs at /guide" }], tools }); ;) {
    const { value, done } = await it.next();
    if (done) { answered = value; break; }
  }
  assert.equal(answered.status, "completed");
  assert.equal(answered.reply.content, "echo tool: docs at /guide");

  // The web app shows the call and its result, collapsed.
  const context = await browser.newContext();
  const view = await context.newPage();
  await view.goto(base);
  await view.fill("#email", aliceEmail);
  await view.fill("#password", "password123");
  await view.click("#signin");
  await view.waitForSelector("#sessions li .name");
  await view.click("#sessions li .name");
  await view.waitForSelector("#messages li.tool details");
  assert.equal(await view.locator("#messages li.tool details").count(), 2);
  assert.equal(await view.locator("#messages li.tool details[open]").count(), 0);
  assert.match(await view.textContent("#messages li.tool summary >> nth=0"), /Called search_docs/);
  await view.click("#messages li.tool summary >> nth=1");
  assert.match(await view.textContent("#messages li.tool pre >> nth=1"), /docs at \/guide/);
  await context.close();

  // Cancellation: aborting stops reading a long reply.
  const abort = new AbortController();
  const long = alice.chat({ sessionId: response.sessionId, message: "long: and on" }, { signal: abort.signal });
  assert.equal((await long.next()).value.type, "session");
  abort.abort();
  await assert.rejects(long.next(), (e) => e instanceof ApiError && e.code === "aborted");
});
