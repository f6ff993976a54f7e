// End-to-end: the web app on the server's offline stand-in model (no model
// service, as under make dev; see webapp.mjs), at a desktop's and a
// phone's width: a reply streams a few words at a time (every text the
// page shows of it recorded as it grows), Stop stops it midway, and the
// stand-in says what it is once, above the chat, never in a reply's text
// nor so in a search's snippets.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { email } from "./helpers.mjs";
import { contrast, missing, shots, signUp, useWebApp } from "./webapp.mjs";

const web = useWebApp({ offline: true });
const widths = [{ name: "desktop", viewport: { width: 1280, height: 800 } }, { name: "phone", viewport: { width: 390, height: 844 } }];
const words = (t) => t.split(/\s+/).filter(Boolean).length;

// recordStream keeps, in window.streamed, every text the streaming reply shows.
const recordStream = (page) => page.evaluate(() => {
  window.streamed = [];
  new MutationObserver(() => {
    const t = document.querySelector("#messages li.streaming .body")?.textContent;
    if (t && t !== "…" && t !== window.streamed.at(-1)) window.streamed.push(t);
  }).observe(document.body, { subtree: true, childList: true, characterData: true });
});

// marks counts the stand-in's mentions in the page's visible text.
const marks = (page) => page.evaluate(() => (document.body.innerText.match(/offline stand-in/g) ?? []).length);

test("the offline stand-in streams a few words at a time, stops midway, and says what it is once", { skip: missing ? `needs ${missing}` : false }, async () => {
  const context = await web.browser.newContext({ viewport: widths[0].viewport });
  const page = await context.newPage();
  await signUp(page, email("standin"));
  for (const { name, viewport } of widths) {
    await page.setViewportSize(viewport);
    await page.keyboard.press("Control+Shift+O"); // a new chat
    await page.waitForSelector("#messages li.empty");
    // Before any reply, the chat says what answers.
    await page.waitForSelector("#standin");
    assert.match(await page.textContent("#standin"), /offline stand-in model.*OPENAI_API_KEY/);
    await recordStream(page);
    const question = `Plan a trip to Lisbon ${name} ` + Array.from({ length: 20 }, (_, k) => `w${k}`).join(" "); // within the 200 characters it repeats
    await page.fill("#input", question);
    await page.press("#input", "Enter");
    await page.waitForSelector(`#messages li.assistant:not(.streaming):has-text("w19")`).catch(async (e) => {
      throw new Error(`no reply (${e.message.split("\n")[0]}): the banner says "${await page.textContent("#error-text")}", the chat ${JSON.stringify(await page.locator("#messages > li").allTextContents())}`);
    });
    const streamed = await page.evaluate(() => window.streamed);
    const reply = await page.textContent("#messages li.assistant .body");
    assert.ok(reply.startsWith(`You said: ${question}`) && !/offline|stand-in/i.test(reply), `the reply: ${reply}`);
    // A few words at a time: many steps, none of more than two chunks of three words.
    assert.ok(streamed.length >= 5, `the reply came in ${streamed.length} steps: ${JSON.stringify(streamed)}`);
    const steps = streamed.map((t, k) => words(t) - (k ? words(streamed[k - 1]) : 0));
    assert.ok(steps.every((n) => n >= 0 && n <= 6), `words added at each step: ${steps}`);
    assert.ok(words(streamed.at(-1)) >= words(reply) - 6, `the last text streamed: ${streamed.at(-1)}`);
    // Said once in the chat, not in the reply, for the next reply too.
    await page.fill("#input", "and a second question");
    await page.press("#input", "Enter");
    await page.waitForSelector(`#messages li.assistant:not(.streaming):has-text("and a second question")`);
    assert.equal(await page.locator("#standin").count(), 1);
    assert.equal(await marks(page), 1, "the stand-in said so more than once");
    await contrast(page);
    await page.screenshot({ path: join(shots, `standin-${name}.png`) });

    // Stop, midway through a long reply (its 200 characters repeated): what
    // was said is kept, cut short.
    await page.fill("#input", "tell me everything " + Array.from({ length: 60 }, (_, k) => `w${k}`).join(" "));
    await page.press("#input", "Enter");
    await page.waitForFunction(() => /You said: tell me everything w0/.test(document.querySelector("#messages li.streaming")?.textContent ?? ""));
    await page.click("#stop");
    await page.waitForFunction(() => !document.querySelector("#messages li.streaming"));
    const stopped = await page.locator("#messages li.assistant .body").last().textContent();
    assert.ok(stopped.startsWith("You said: tell me everything w0") && !stopped.includes("in view"), `the stopped reply: ${stopped}`);
  }

  // A search's snippets read as the replies do, without the stand-in's mark.
  await page.keyboard.press("Control+k");
  await page.waitForSelector("#palette[open] #palette-q:focus");
  await page.keyboard.type("trip to Lisbon");
  await page.keyboard.press("ArrowUp");
  await page.waitForSelector("#palette-list li[aria-selected='true'] .label:has-text('Search your messages for “trip to Lisbon”')");
  await page.keyboard.press("Enter");
  await page.waitForSelector("#palette-list li.pick .detail:has-text('Lisbon')");
  const snippets = await page.locator("#palette-list li.pick .detail").allTextContents();
  assert.ok(snippets.every((t) => !/offline|stand-in/i.test(t)), `snippets: ${JSON.stringify(snippets)}`);
  await context.close();
});
