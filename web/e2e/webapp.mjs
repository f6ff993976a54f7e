// The web app's end-to-end setup, shared by its test files: the real
// server (with the web app) against both emulators under the repo's
// security rules, an OpenAI-compatible model that streams, Debian's
// Chromium driven by playwright-core, and the page's helpers.
import { before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { buildServer, missingEmulators, modelServer, project, root, startServer, toolCall } from "./helpers.mjs";

export const shots = join(root, "web", "e2e", "screenshots");
const firestoreHost = process.env.FIRESTORE_EMULATOR_HOST;
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";

// Under CI=true a missing emulator or browser fails the test; elsewhere it skips.
export const missing = missingEmulators("the browser test") || (!existsSync(chromiumPath) ? `Chromium at ${chromiumPath}` : "");
if (missing && process.env.CI === "true") throw new Error(`the browser test needs ${missing}`);

let answers = 0;
let appBase = ""; // the server of this test file (signUp opens it)

export function startModel() {
  return modelServer((r) => {
    const system = r.messages[0]?.content ?? "";
    // A message with files comes as content parts: the text parts as they
    // are, each image as "[image_url <its url's start>]".
    const content = r.messages[r.messages.length - 1]?.content ?? "";
    const last = Array.isArray(content)
      ? content.map((p) => (p.type === "image_url" ? `[image_url ${p.image_url.url.slice(0, 22)}]` : p.text)).join(" ")
      : content;
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
    // Offered tools, a "tool:" message gets a call of the first; a tool's
    // result is echoed.
    if (r.messages[r.messages.length - 1]?.role === "tool") text = "echo tool: " + last;
    return { text, call: toolCall(r, '{"q":"x"}'), delay: 120 };
  });
}

// useWebApp starts what a test file needs before its tests and stops it
// after them: its fields (base, browser) are set once they run.
export function useWebApp() {
  const web = { base: "", browser: null };
  let server, model;
  before(async () => {
    if (missing) return;
    mkdirSync(shots, { recursive: true });
    // The emulator enforces the repo's rules for this project's end users.
    const rules = readFileSync(join(root, "firestore.rules"), "utf8");
    const put = await fetch(`http://${firestoreHost}/emulator/v1/projects/${project}:securityRules`, {
      method: "PUT", body: JSON.stringify({ rules: { files: [{ name: "firestore.rules", content: rules }] } }) });
    assert.equal(put.status, 200, "loading the rules");
    model = await startModel();
    ({ server, base: web.base } = await startServer(buildServer(), ["-web", join(root, "web", "dist")], { STORAGE_BACKEND: "firestore", GOOGLE_CLOUD_PROJECT: project,
      OPENAI_API_KEY: "test", OPENAI_BASE_URL: `http://127.0.0.1:${model.address().port}/v1`, DRAFT_INTERVAL_MS: "200" }));
    appBase = web.base;
    web.browser = await chromium.launch({
      executablePath: chromiumPath, headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-quic"],
    });
  });
  after(async () => {
    await web.browser?.close();
    server?.kill("SIGTERM");
    model?.close();
  });
  return web;
}

export async function signUp(page, address) {
  await page.goto(appBase);
  await page.fill("#email", address);
  await page.fill("#password", "password123");
  await page.click("#signup");
  await page.waitForSelector("#app:not([hidden])");
}

// readOnly checks that the open chat says why it takes no message, and
// that nothing that would write to it can be used.
export async function readOnly(page, why) {
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
export async function contrast(page) {
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
export async function inView(page, selector) {
  const box = await page.locator(selector).boundingBox();
  const { height } = page.viewportSize();
  assert.ok(box && box.y >= 0 && box.y + box.height <= height, `${selector} is out of view: ${JSON.stringify(box)}`);
}

export async function send(page, text) {
  await page.fill("#input", text);
  await page.press("#input", "Enter");
  // The reply renders while it streams, then stays as the stored message.
  // (read where it is seen: a quick reply may be stored by the next look)
  const partial = await (await page.waitForFunction(() => document.querySelector("#messages li.streaming .body")?.textContent ?? false)).jsonValue();
  assert.ok(("echo: " + text).startsWith(partial.replace("…", "")) , `streamed so far: ${partial}`);
  await page.waitForSelector(`#messages li.assistant:not(.streaming):has-text("echo: ${text}")`).catch(async (e) => {
    throw new Error(`no reply to "${text}" (${e.message.split("\n")[0]}): the banner says "${await page.textContent("#error-text")}", the chat ${JSON.stringify(await page.locator("#messages > li").allTextContents())}`);
  });
}
