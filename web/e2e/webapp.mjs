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
// after them: its fields (base, browser) are set once they run. With
// offline, the server has no model service, as under make dev: replies
// come from its offline stand-in, at its own pace.
export function useWebApp({ offline = false } = {}) {
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
    model = offline ? null : await startModel();
    const models = offline ? { OPENAI_API_KEY: "", OPENAI_BASE_URL: "" } : { OPENAI_API_KEY: "test", OPENAI_BASE_URL: `http://127.0.0.1:${model.address().port}/v1` };
    ({ server, base: web.base } = await startServer(buildServer(), ["-web", join(root, "web", "dist")], { STORAGE_BACKEND: "firestore", GOOGLE_CLOUD_PROJECT: project,
      ...models, DRAFT_INTERVAL_MS: "200" }));
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

// contrast checks WCAG AA (4.5:1, large text too) for all the text on
// screen, in both schemes: every element's own text, and what inputs show
// (their value, else their placeholder), wherever it is the topmost thing
// at its centre (not under a scrim, a panel or a dialog's backdrop, nor
// scrolled or slid out of view, nor at opacity 0). The text's colour and the backgrounds
// under it (each ancestor's, from the page's canvas up) are composited
// with their alpha and every ancestor's opacity, as the browser paints
// them. Disabled controls are exempt (WCAG: inactive components).
export async function contrast(page) {
  const { low, checked } = await page.evaluate(() => {
    const rgba = (c) => {
      const [r = 0, g = 0, b = 0, a = 1] = (c.match(/[\d.]+/g) ?? []).map(Number);
      return c.startsWith("rgba") || c.split(",").length === 4 ? [r, g, b, a] : [r, g, b, 1];
    };
    const over = ([r, g, b, a], [R, G, B]) => [r * a + R * (1 - a), g * a + G * (1 - a), b * a + B * (1 - a)];
    const mix = (top, under, o) => top.map((v, k) => v * o + under[k] * (1 - o));
    const lum = ([r, g, b]) => {
      const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    // paint is the colour at a pixel of e's text (fg) or beside it (fg
    // null): each ancestor's background over the last, each group's
    // opacity mixed with what was under it.
    const paint = (chain, fg, i = 0, under = [255, 255, 255]) => {
      if (i === chain.length) return fg ? over(fg, under) : under;
      const s = getComputedStyle(chain[i]);
      const inner = paint(chain, fg, i + 1, over(rgba(s.backgroundColor), under));
      return mix(inner, under, Number(s.opacity));
    };
    const shows = (e) => {
      const r = e.getBoundingClientRect();
      const [x, y] = [r.left + r.width / 2, r.top + r.height / 2];
      if (r.width === 0 || x < 0 || y < 0 || x >= innerWidth || y >= innerHeight) return false;
      const hit = document.elementFromPoint(x, y);
      return !!hit && (hit === e || e.contains(hit) || hit.contains(e));
    };
    const low = [];
    let checked = 0;
    const fields = "input:not([type=checkbox]):not([type=radio]):not([type=file]):not([type=hidden]), textarea, select";
    for (const e of document.querySelectorAll("body *")) {
      const field = e.matches(fields);
      const own = field ? (e.value || e.placeholder) : [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
      const s = getComputedStyle(e);
      if (!own || s.visibility === "hidden" || e.closest("[disabled], [hidden]") || !shows(e)) continue;
      const color = field && !e.value ? getComputedStyle(e, "::placeholder").color : s.color;
      const chain = [];
      for (let a = e; a; a = a.parentElement) chain.unshift(a);
      if (chain.some((a) => Number(getComputedStyle(a).opacity) === 0)) continue; // not shown (yet)
      const [fg, bg] = [paint(chain, rgba(color)), paint(chain, null)];
      const [a, b] = [lum(fg), lum(bg)];
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      checked++;
      const text = field ? (e.value || `placeholder "${e.placeholder}"`) : e.textContent.trim();
      if (ratio < 4.5) low.push(`${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}.${e.className} "${text.slice(0, 30)}": ${ratio.toFixed(2)}`);
    }
    return { low, checked };
  });
  assert.deepEqual(low, [], "text below WCAG AA contrast");
  assert.ok(checked > 0, "no text on screen to check");
  return checked;
}

// inView checks that selector is wholly inside the viewport.
export async function inView(page, selector) {
  const box = await page.locator(selector).boundingBox();
  const { height } = page.viewportSize();
  assert.ok(box && box.y >= 0 && box.y + box.height <= height, `${selector} is out of view: ${JSON.stringify(box)}`);
}

// explained waits for what waits, and when it fails says what the page
// shows instead: the banner, the chat, what is left in the box and the
// command palette's list.
export async function explained(page, what, waits) {
  try {
    return await waits;
  } catch (e) {
    const seen = await Promise.all([page.textContent("#error-text").catch(() => null),
      page.locator("#messages > li").allTextContents().catch(() => []), page.inputValue("#input").catch(() => null),
      page.locator("#palette[open] #palette-list li").allTextContents().catch(() => [])]);
    throw new Error(`${what} (${e.message.split("\n")[0]}): the banner says ${JSON.stringify(seen[0])}, the chat ${JSON.stringify(seen[1])}, ` +
      `the box ${JSON.stringify(seen[2])}, the palette ${JSON.stringify(seen[3])}`);
  }
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

// flip clicks a version arrow: the click is answered by the server, and
// fails the test with what the server said when it was refused.
export async function flip(page, button) {
  const [res] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith("/branch") && r.request().method() === "POST"),
    page.click(button),
  ]);
  assert.equal(res.status(), 200, `switching the branch: ${await res.text()}`);
}
