// End-to-end: what a chat app must get right beyond chatting (issue 57's
// defects), at a desktop's and a phone's width, against the real server
// (see webapp.mjs): Enter while a reply streams, Stop on screen at once,
// the open chat's title outside the list's filter, empty states, the last
// chat reopened, rename at the server's limit, destructive buttons, a toast
// on save, touch targets measured in the page, and contrast; on the phone,
// thumbs, edit, versions and regenerate by taps (versions.mjs). The app's
// turns go through the AI SDK's useChat (DefaultChatTransport) to
// /ai-sdk/chat, its Stop to /ai-sdk/chat/{id}/stop: checked here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { email } from "./helpers.mjs";
import { phoneVersions } from "./versions.mjs";
import { contrast, explained, inView, missing, readOnly, send, shots, signUp, useWebApp } from "./webapp.mjs";

const web = useWebApp();
const skip = missing ? `needs ${missing}` : false;
const widths = [{ name: "desktop", viewport: { width: 1280, height: 800 } }, { name: "phone", viewport: { width: 390, height: 844 } }];
const isPhone = (page) => page.viewportSize().width < 700;

// chats opens the chat list where it is a drawer (a phone).
async function chats(page) {
  if (!isPhone(page)) return;
  await page.click("#chats-open");
  await page.waitForFunction(() => document.querySelector("#chats").getBoundingClientRect().left >= 0);
}

async function closeChats(page) {
  if (isPhone(page)) await page.click("#chats-close");
  await page.waitForSelector("#scrim", { state: "hidden" });
}

// targets checks, on a phone, that every control on screen (buttons,
// selects, inputs, disabled ones too; a checkbox by its label) is at least
// 44 px each way, and that those named in want were among them.
async function targets(page, want = []) {
  if (!isPhone(page)) return;
  await page.waitForTimeout(200); // transitions end
  const all = await page.evaluate(() => [...document.querySelectorAll("button, select, input:not([type=file]), textarea")]
    .filter((e) => e.getClientRects().length && getComputedStyle(e).visibility !== "hidden" && !e.closest("[hidden]"))
    .map((e) => ({ e, r: (e.matches("[type=checkbox], [type=radio]") ? e.closest("label") ?? e : e).getBoundingClientRect() }))
    .filter(({ r }) => r.width > 0 && r.right > 0 && r.left < innerWidth && r.bottom > 0 && r.top < innerHeight)
    .map(({ e, r }) => ({ name: `${e.tagName.toLowerCase()}#${e.id}.${[...e.classList].join(".")} "${(e.textContent || e.placeholder || "").trim().slice(0, 20)}"`,
      w: Math.round(r.width), h: Math.round(r.height) })));
  assert.deepEqual(all.filter((t) => t.w < 44 || t.h < 44).map((t) => `${t.name} ${t.w}x${t.h}`), [], "touch targets under 44 px");
  for (const w of want) assert.ok(all.some((t) => t.name.includes(w)), `${w} was not measured: ${all.map((t) => t.name).join(", ")}`);
}

// sampleStop clicks Stop in the page and samples, every 20 ms for 1.5 s,
// whether it says "Stopping…" on screen (the button shown, inside the
// viewport, the topmost thing at its centre) and what the streaming reply
// shows.
const sampleStop = (page) => page.evaluate(async () => {
  const t0 = performance.now();
  const stop = document.querySelector("#stop");
  stop.click();
  const onScreen = () => {
    const r = stop.getBoundingClientRect();
    const [x, y] = [r.left + r.width / 2, r.top + r.height / 2];
    return r.width > 0 && x >= 0 && y >= 0 && x < innerWidth && y < innerHeight && stop.contains(document.elementFromPoint(x, y));
  };
  const samples = [];
  while (performance.now() - t0 < 1500) {
    samples.push({ at: performance.now() - t0, stopping: stop.textContent === "Stopping…" && onScreen(),
      text: document.querySelector("#messages li.streaming .body")?.textContent ?? null });
    await new Promise((ok) => setTimeout(ok, 20));
  }
  return samples;
});

for (const { name, viewport } of widths) {
  test(`${name}: empty states, Enter while a reply streams waits, Stop shows at once, targets and contrast`, { skip }, async () => {
    const context = await web.browser.newContext({ viewport });
    const page = await context.newPage();
    // Every POST the page makes to the server, with its body.
    const posts = [];
    page.on("request", (r) => { if (r.method() === "POST" && r.url().startsWith(web.base)) posts.push({ path: new URL(r.url()).pathname, body: r.postData() }); });
    const address = email(`stream-${name}`);
    await signUp(page, address);

    // First sign-in: a new chat's empty state with suggestions, and a list
    // that says it is empty (per filter).
    await page.waitForSelector("#messages li.empty .suggestion");
    assert.equal(await page.textContent("#messages li.empty h3"), "What can I help with?");
    await contrast(page);
    if (isPhone(page)) {
      // The chat list is a drawer, off the screen until opened: the chat has the width.
      const list = await page.locator("#chats").boundingBox();
      const pane = await page.locator("#chat").boundingBox();
      assert.ok(list.x + list.width <= 0, `the chat list takes the screen: ${JSON.stringify(list)}`);
      assert.ok(pane.x === 0 && pane.width === viewport.width && pane.y < 60, `the chat is at ${JSON.stringify(pane)}`);
    }
    await chats(page);
    await page.waitForSelector("#sessions li.none");
    assert.match(await page.textContent("#sessions li.none"), /No chats yet/);
    await targets(page, ["#new", "#filter", "#chats-close", "#q"]);
    await page.selectOption("#filter", "archived");
    await page.waitForSelector("#sessions li.none:has-text('No archived chats')");
    await page.selectOption("#filter", "deleted");
    await page.waitForSelector("#sessions li.none:has-text('No deleted chats')");
    await contrast(page);
    await page.selectOption("#filter", "active");
    if (isPhone(page)) await page.screenshot({ path: join(shots, "phone-drawer.png") });
    await closeChats(page);
    await page.screenshot({ path: join(shots, `empty-${name}.png`) });

    // Enter while a reply streams: the text waits in the box, the reply
    // streams on untouched, no error.
    await page.fill("#input", "long: tell me everything");
    await page.press("#input", "Enter");
    await page.waitForFunction(() => (document.querySelector("#messages li.streaming")?.textContent ?? "").includes("word3"));
    await page.fill("#input", "second question");
    await page.press("#input", "Enter");
    await page.waitForTimeout(400);
    assert.equal(await page.inputValue("#input"), "second question", "the text was sent during the reply");
    assert.ok(await page.isHidden("#error"), `an error showed: ${await page.textContent("#error-text")}`);
    assert.match(await page.textContent("#messages li.streaming .body"), /^echo: long: tell me everything word0 word1 word2 word3/);
    assert.equal(await page.locator("#messages > li.user").count(), 1);

    // Stop: "Stopping…" and a reply that no longer grows within 300 ms of the click.
    const samples = await sampleStop(page);
    const shown = samples.find((s) => s.stopping);
    assert.ok(shown && shown.at < 300, `"Stopping…" showed on screen at ${shown?.at} ms`);
    const after = samples.filter((s) => s.at >= 300 && s.text !== null).map((s) => s.text);
    assert.ok(after.every((t) => t === after[0]), `the reply grew after the stop: ${after[0]} … ${after.at(-1)}`);
    await page.waitForFunction(() => !document.querySelector("#messages li.streaming"));
    const stored = await page.textContent("#messages li.assistant .body");
    assert.ok(!stored.includes("word79"), `the reply ran to its end: ${stored}`);
    assert.ok(await page.isHidden("#stop"));
    assert.equal(await page.textContent("#stop"), "Stop");

    // Now Enter sends what waited.
    await page.press("#input", "Enter");
    await page.waitForSelector("#messages li.assistant:not(.streaming):has-text('echo: second question')").catch(async (e) => {
      throw new Error(`no reply to what waited (${e.message}): the banner says "${await page.textContent("#error-text")}", the chat ${JSON.stringify(await page.locator("#messages > li").allTextContents())}`);
    });
    assert.equal(await page.locator("#messages > li.user").count(), 2);
    // Both turns went through useChat's transport, the stop through the AI SDK chat's own.
    const turns = posts.filter((p) => p.path === "/ai-sdk/chat").map((p) => JSON.parse(p.body));
    assert.equal(turns.length, 2, `turns sent: ${JSON.stringify(posts.map((p) => p.path))}`);
    for (const t of turns) {
      assert.equal(t.trigger, "submit-message");
      assert.equal(t.resumable, true);
      assert.equal(t.messages.at(-1).role, "user");
    }
    assert.deepEqual(turns.map((t) => t.messages.at(-1).parts[0].text), ["long: tell me everything", "second question"]);
    assert.ok(posts.some((p) => p.path === `/ai-sdk/chat/${turns[0].id}/stop`), "Stop did not stop the reply on the server");
    assert.ok(!posts.some((p) => p.path === "/chat"), "a turn went to POST /chat");

    // A message's actions: shown on the last message, on the others on
    // hover (desktop) or a tap (phone); on a phone every target is >= 44 px.
    const first = page.locator("#messages > li.user").first();
    if (isPhone(page)) {
      assert.equal(await first.locator(".tools").evaluate((e) => getComputedStyle(e).visibility), "hidden", "actions always shown on a phone");
      // A reply of two versions: its arrows, thumbs, Copy and Regenerate on a tap.
      const reply = page.locator("#messages > li.assistant").last();
      await reply.locator(".body").click();
      await reply.locator(".regenerate").click();
      await page.waitForSelector("#messages > li.assistant:last-child .version:has-text('2 / 2')", { state: "attached" });
      await page.waitForFunction(() => !document.querySelector("#messages li.streaming"));
      await reply.locator(".body").click();
      await page.waitForSelector("#messages > li.assistant.tapped .prev");
      await targets(page, [".prev", ".next", ".rate-up", ".rate-down", ".copy", ".regenerate", "#send", "#attach", "#chats-open", "#settings-open"]);
      await contrast(page);
      await first.locator(".body").click();
      await page.waitForSelector("#messages > li.user.tapped .edit");
      await targets(page, [".edit", ".copy"]);
      await page.screenshot({ path: join(shots, "phone-actions.png") });
      await phoneVersions(page, web.base, address, posts);
    } else {
      assert.equal(await first.locator(".tools").evaluate((e) => getComputedStyle(e).opacity), "0", "actions always shown");
      await first.hover();
      await page.waitForFunction(() => getComputedStyle(document.querySelector("#messages > li.user .tools")).opacity === "1");
    }
    await contrast(page);
    // The command palette, at this width.
    await page.keyboard.press("Control+k");
    await page.waitForSelector("#palette[open] #palette-list li.pick");
    await inView(page, "#palette");
    await contrast(page);
    await page.keyboard.press("Escape");
    await page.waitForSelector("#palette", { state: "hidden" });
    await context.close();
  });

  test(`${name}: the open chat's title outside the filter, the last chat reopened, rename at the limit, destructive buttons, a toast on save`, { skip }, async () => {
    const context = await web.browser.newContext({ viewport });
    const page = await context.newPage();
    await signUp(page, email(`title-${name}`));
    await send(page, "Hello there");
    await page.waitForFunction(() => document.querySelector("#title").textContent === "Browser test chat");

    // A reload reopens the chat open last.
    await page.reload();
    await page.waitForFunction(() => document.querySelectorAll("#messages > li").length === 2);
    assert.equal(await page.textContent("#title"), "Browser test chat");

    // Archived, restored under the Archived filter, deleted: the header
    // keeps the chat's title.
    await chats(page);
    await page.click("#sessions li button:has-text('Archive')");
    await page.waitForSelector("#sessions li.none");
    await readOnly(page, /archived/);
    assert.equal(await page.textContent("#title"), "Browser test chat");
    await page.selectOption("#filter", "archived");
    await page.waitForSelector("#sessions li .name");
    await closeChats(page);
    await page.click("#readonly-restore");
    await page.waitForSelector("#readonly", { state: "hidden" });
    assert.equal(await page.textContent("#title"), "Browser test chat");
    await chats(page);
    await page.waitForSelector("#sessions li.none:has-text('No archived chats')");
    await page.selectOption("#filter", "active");

    // Delete looks destructive, and so does its confirmation.
    const red = (sel) => page.$eval(sel, (e) => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor].some((c) => {
      const [r, g, b] = c.match(/\d+/g).map(Number);
      return r > 150 && g < 60 && b < 60;
    }));
    await page.waitForSelector("#sessions li .name");
    assert.ok(await red("#sessions li button:has-text('Delete')"), "Delete looks like any button");
    await page.click("#sessions li button:has-text('Delete')");
    await page.waitForSelector("#dialog[open]");
    assert.equal(await page.getAttribute("#dialog-ok", "class"), "danger");
    await contrast(page);
    await targets(page, ["#dialog-ok", '"Cancel"']);
    await page.click("#dialog-ok");
    await readOnly(page, /deleted/);
    await page.waitForSelector("#sessions li.none");
    assert.equal(await page.textContent("#title"), "Browser test chat");
    await closeChats(page);
    await page.click("#readonly-restore");
    await page.waitForSelector("#readonly", { state: "hidden" });
    await chats(page);

    // Rename: the box takes 200 characters (the server's limit) and counts
    // them; a refusal shows in the dialog and keeps the text.
    await page.click("#sessions li button:has-text('Rename')");
    await page.waitForSelector("#dialog[open]");
    await page.fill("#dialog-input", "y".repeat(400));
    assert.equal((await page.inputValue("#dialog-input")).length, 200);
    assert.equal(await page.textContent("#dialog-count"), "200 / 200");
    await page.route("**/sessions/*", (route) => route.request().method() === "PATCH"
      ? route.fulfill({ status: 503, contentType: "application/json", body: JSON.stringify({ error: { code: "unavailable", message: "The service is busy: try again." } }) })
      : route.continue());
    await page.click("#dialog-ok");
    await page.waitForSelector("#dialog-error:not([hidden])");
    assert.match(await page.textContent("#dialog-error"), /busy/);
    assert.ok(await page.isHidden("#error"), "the error is a banner over the page");
    assert.equal((await page.inputValue("#dialog-input")).length, 200, "the text typed was lost");
    await inView(page, "#dialog-error");
    await contrast(page);
    await targets(page, ["#dialog-input", "#dialog-ok"]);
    await page.screenshot({ path: join(shots, `rename-refused-${name}.png`) });
    await page.unroute("**/sessions/*");
    await page.click("#dialog-ok");
    await page.waitForSelector("#dialog", { state: "hidden" });
    await page.waitForFunction(() => document.querySelector("#title").textContent === "y".repeat(200));
    const title = await page.locator("#title").boundingBox();
    assert.ok(title.x + title.width <= viewport.width, `the title runs off the screen: ${JSON.stringify(title)}`);
    await closeChats(page);

    // Settings: a panel over the conversation (never squeezing it); Save says so.
    const before = await page.locator("#messages").boundingBox();
    await page.click("#settings-open");
    await page.waitForSelector("#settings:not([hidden])");
    const during = await page.locator("#messages").boundingBox();
    assert.deepEqual(during, before, "the settings panel moved the conversation");
    await page.fill("#instructions", "Answer briefly.");
    await contrast(page);
    await targets(page, ["#settings-save", "#instructions", "#model"]);
    await page.click("#settings-save");
    await page.waitForSelector("#toast:not([hidden])");
    assert.match(await page.textContent("#toast"), /saved/i);
    await contrast(page);

    // The memory panel, likewise over the conversation; Forget everything looks destructive.
    await page.click("#memory-open");
    await page.waitForSelector("#memory:not([hidden])");
    assert.deepEqual(await page.locator("#messages").boundingBox(), before, "the memory panel moved the conversation");
    assert.ok(await red("#memory-forget-all"), "Forget everything looks like any button");
    await contrast(page);
    await targets(page, ["#memory-forget-all", "#memory-close", "#memory-enabled"]);
    await context.close();
  });
}

test("dark mode follows the system at AA contrast; code is highlighted with Copy; the list is grouped by date; shortcuts and the Ctrl-K command palette", { skip }, async () => {
  const context = await web.browser.newContext({ colorScheme: "dark", viewport: widths[0].viewport, permissions: ["clipboard-read", "clipboard-write"] });
  const page = await context.newPage();
  await signUp(page, email("dark"));
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(bg, "rgb(23, 24, 26)", "the page is not dark");
  await contrast(page);

  await page.fill("#input", "md: format this");
  await page.press("#input", "Enter");
  await explained(page, "no Markdown reply to \"md: format this\"",
    page.waitForSelector("#messages li.assistant:not(.streaming) .code .copy-code"));
  const reply = page.locator("#messages li.assistant:not(.streaming)").last();
  assert.equal(await reply.locator("pre code").textContent(), "x := 1");
  assert.equal(await reply.locator("pre code .tok-number").textContent(), "1");
  await reply.locator(".copy-code").click();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), "x := 1");
  await page.waitForSelector("#messages .copy-code:has-text('Copied')");
  await reply.hover();
  await reply.locator(".tools .copy").click();
  assert.match(await page.evaluate(() => navigator.clipboard.readText()), /^\*\*Bold\*\* and `code`/);
  await page.waitForSelector("#toast:has-text('Copied')");

  await page.waitForSelector("#sessions li.group:has-text('Today') + li[data-id]");
  await contrast(page);
  // Delete looks destructive here too: red, where the other buttons are blue.
  const hue = (sel) => page.$eval(sel, (e) => { const [r, g, b] = getComputedStyle(e).color.match(/\d+/g).map(Number); return r - Math.max(g, b); });
  assert.ok(await hue("#sessions li button:has-text('Delete')") > 60, "Delete looks like any button in dark mode");
  assert.ok(await hue("#sessions li button:has-text('Rename')") < 0, "Rename is not blue");
  await page.screenshot({ path: join(shots, "dark.png") });

  // Ctrl-Shift-O starts a new chat.
  await page.keyboard.press("Control+Shift+O");
  await page.waitForSelector("#messages li.empty");
  assert.equal(await page.textContent("#title"), "New chat");
  assert.equal(await page.evaluate(() => document.activeElement.id), "input");

  // Ctrl-K: the command palette opens a chat by its title...
  await page.waitForSelector("#sessions li .name:text-is('Browser test chat')"); // the title, written after the reply
  await page.keyboard.press("Control+k");
  await page.waitForSelector("#palette[open]");
  assert.equal(await page.evaluate(() => document.activeElement.id), "palette-q");
  assert.deepEqual((await page.locator("#palette-list .label").allTextContents()).slice(0, 3), ["New chat", "Memory", "Export my data"]);
  await contrast(page);
  await page.keyboard.type("browser");
  await page.waitForSelector("#palette-list li.pick[aria-selected='true'] .label:text-is('Browser test chat')");
  await page.keyboard.press("Enter");
  await page.waitForSelector("#palette", { state: "hidden" });
  await page.waitForFunction(() => document.querySelector("#title").textContent === "Browser test chat" && document.querySelectorAll("#messages > li").length === 2);
  // ...and searches the messages (its last item), opening a hit at its message.
  // Typed at once, as people do: every key lands in the palette's box,
  // none in the composer of the chat just opened.
  await page.click("#new");
  await page.keyboard.press("Control+k");
  await page.keyboard.type("format this");
  assert.equal(await page.inputValue("#palette-q"), "format this");
  assert.equal(await page.inputValue("#input"), "");
  await page.keyboard.press("ArrowUp");
  await page.waitForSelector("#palette-list li[aria-selected='true'] .label:has-text('Search your messages for “format this”')");
  await page.keyboard.press("Enter");
  await explained(page, "no search hit for \"format this\"", page.waitForSelector("#palette-list li.pick .detail:has-text('format this')"));
  await page.screenshot({ path: join(shots, "palette.png") });
  await page.keyboard.press("Enter");
  await page.waitForSelector("#palette", { state: "hidden" });
  await page.waitForSelector("#messages li.found:has-text('md: format this')");

  // Shift-Enter is a new line in the box, Enter sends, Escape there stops the reply.
  await page.keyboard.press("Control+Shift+O");
  await page.waitForSelector("#messages li.empty");
  await page.keyboard.type("long: one");
  await page.keyboard.press("Shift+Enter");
  await page.keyboard.type("two");
  assert.equal(await page.inputValue("#input"), "long: one\ntwo");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => (document.querySelector("#messages li.streaming")?.textContent ?? "").includes("word2"));
  await contrast(page); // the reply as it streams
  await page.keyboard.press("Escape");
  await page.waitForFunction(() => !document.querySelector("#messages li.streaming"));
  assert.equal(await page.textContent("#messages > li.user .body"), "long: one\ntwo");
  const stopped = await page.textContent("#messages > li.assistant .body");
  assert.ok(stopped.startsWith("echo: long: one") && !stopped.includes("word79"), `Escape did not stop the reply: ${stopped}`);

  // On a phone: the palette fits, at AA contrast; Escape closes it; the
  // drawer and a message's actions at AA contrast too.
  await page.setViewportSize(widths[1].viewport);
  await page.keyboard.press("Control+k");
  await page.waitForSelector("#palette[open]");
  await inView(page, "#palette");
  await contrast(page);
  await page.keyboard.press("Escape");
  await page.waitForSelector("#palette", { state: "hidden" });
  await contrast(page);
  await page.click("#messages > li.assistant .body");
  await page.waitForSelector("#messages > li.assistant.tapped .regenerate");
  await page.waitForTimeout(200);
  await contrast(page);
  await page.click("#chats-open");
  await page.waitForFunction(() => document.querySelector("#chats").getBoundingClientRect().left >= 0);
  await contrast(page);
  await page.screenshot({ path: join(shots, "dark-phone-drawer.png") });
  await context.close();
});
