// End-to-end: attachments in the web app (the real server, see webapp.mjs,
// with the Cloud Storage emulator that make test's cmd/emulators starts):
// files added with the Attach button, a paste and a drop, each uploaded
// (its progress shown meanwhile, Send waiting) and previewed; a refused
// file's reason in the server's plain words, and taken off; the message
// sent through useChat with its files as the AI SDK's file parts
// (url /attachments/{id}).
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { email } from "./helpers.mjs";
import { contrast, missing, shots, signUp, useWebApp } from "./webapp.mjs";

const storage = process.env.STORAGE_EMULATOR_HOST ? "" : "the Cloud Storage emulator (STORAGE_EMULATOR_HOST: run under go run ./cmd/emulators)";
if (storage && !missing && process.env.CI === "true") throw new Error(`the attachments test needs ${storage}`);
const web = useWebApp();
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64");

// put adds a file to the composer as a paste (on the box) or a drop (on the composer).
const put = (page, how, name, type, text) => page.evaluate(([how, name, type, text]) => {
  const dt = new DataTransfer();
  dt.items.add(new File([text], name, { type }));
  if (how === "paste") document.querySelector("#input").dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
  else document.querySelector("#composer").dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
}, [how, name, type, text]);

test("attach by button, paste and drop: progress, previews, a refusal in plain words, sent as file parts", { skip: missing ? `needs ${missing}` : storage ? `needs ${storage}` : false }, async () => {
  const context = await web.browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const turns = [];
  page.on("request", (r) => { if (r.method() === "POST" && r.url() === `${web.base}/ai-sdk/chat`) turns.push(JSON.parse(r.postData())); });
  await signUp(page, email("attach"));

  // The button: the upload's progress shows, and Send waits for it.
  let release;
  const held = new Promise((ok) => (release = ok));
  await page.route("**/attachments", async (route) => { await held; await route.continue(); });
  await page.setInputFiles("#file", { name: "cat.png", mimeType: "image/png", buffer: PNG });
  await page.waitForSelector("#attachments li.attachment progress");
  assert.ok(await page.isDisabled("#send"), "Send does not wait for the upload");
  assert.equal(await page.locator("#attachments li.attachment img").count(), 1, "no preview of the image");
  release();
  await page.waitForSelector("#attachments li.attachment:not(:has(progress))");
  await page.unroute("**/attachments");

  // A paste, and a drop of a file the server refuses (SVG), said in its words.
  await put(page, "paste", "notes.txt", "text/plain", "meeting notes");
  await put(page, "drop", "logo.svg", "image/svg+xml", '<svg xmlns="http://www.w3.org/2000/svg"/>');
  await page.waitForSelector("#attachments li.failed .attach-error");
  assert.match(await page.textContent("#attachments li.failed .attach-error"), /^file: /);
  await page.waitForFunction(() => document.querySelectorAll("#attachments li.attachment:not(.failed):not(:has(progress))").length === 2);
  assert.deepEqual(await page.locator("#attachments .file-name").allTextContents(), ["cat.png", "notes.txt", "logo.svg"]);
  await contrast(page);
  await page.screenshot({ path: join(shots, "attachments.png") });
  await page.click("#attachments li.failed button.remove");
  await page.waitForFunction(() => document.querySelectorAll("#attachments li").length === 2);

  // Sent: the text and both files as file parts, then the list is empty.
  await page.fill("#input", "What is in these?");
  await page.press("#input", "Enter");
  await page.waitForSelector("#attachments", { state: "detached" });
  const sent = turns.at(-1).messages.at(-1);
  const files = sent.parts.filter((p) => p.type === "file");
  assert.deepEqual(files.map((f) => [f.filename, f.mediaType]), [["cat.png", "image/png"], ["notes.txt", "text/plain"]]);
  for (const f of files) assert.match(f.url, /^\/attachments\/[A-Za-z0-9_-]+$/);
  assert.deepEqual(sent.parts.filter((p) => p.type === "text").map((p) => p.text), ["What is in these?"]);
  // Without the user's token the server serves none of it (past the browser's cache).
  const bare = await page.evaluate(async (url) => (await fetch(url, { cache: "no-store" })).status, files[0].url);
  assert.equal(bare, 401, "an attachment is served without the user's token");
  await page.waitForSelector("#messages li.assistant:not(.streaming)");
  await context.close();
});
