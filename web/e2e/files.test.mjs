// End-to-end: a photo and a PDF attached in the web app reach the model
// (an image_url part and the PDF's text), stay with the message across a
// reload (the image in place, the document by name), and are served to
// their owner, byte for byte, and to no one else; at a desktop's and a
// phone's width.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { authHost, email, signUpToken } from "./helpers.mjs";
import { missing, shots, signUp, useWebApp } from "./webapp.mjs";

const storage = process.env.STORAGE_EMULATOR_HOST ? "" : "the Cloud Storage emulator (STORAGE_EMULATOR_HOST: run under go run ./cmd/emulators)";
if (storage && !missing && process.env.CI === "true") throw new Error(`the files test needs ${storage}`);
const web = useWebApp();
const widths = [{ name: "desktop", viewport: { width: 1280, height: 800 } }, { name: "phone", viewport: { width: 390, height: 844 } }];
// A 4×3 PNG, and a one-page PDF whose text a reader extracts.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAQAAAADCAIAAAA7ljmRAAAAHElEQVR4nGJhYDhhw8AAQSwMAQxwgMIBBAAA//8+7wIp3Ypf3wAAAABJRU5ErkJggg==", "base64");
const PHRASE = "Quarterly figures rose by nine percent";

function pdf(text) {
  let out = "%PDF-1.4\n";
  const offsets = [];
  const obj = (body) => { offsets.push(out.length); out += `${offsets.length} 0 obj\n${body}\nendobj\n`; };
  const stream = `BT /F1 12 Tf 20 50 Td (${text}) Tj ET`;
  obj("<</Type/Catalog/Pages 2 0 R>>");
  obj("<</Type/Pages/Kids[4 0 R]/Count 1>>");
  obj("<</Type/Font/Subtype/Type1/BaseFont/Helvetica/Encoding/WinAnsiEncoding>>");
  obj("<</Type/Page/Parent 2 0 R/MediaBox[0 0 400 100]/Contents 5 0 R/Resources<</Font<</F1 3 0 R>>>>>>");
  obj(`<</Length ${stream.length}>>\nstream\n${stream}\nendstream`);
  const xref = out.length;
  out += `xref\n0 ${offsets.length + 1}\n0000000000 65535 f \n` + offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("");
  out += `trailer\n<</Size ${offsets.length + 1}/Root 1 0 R>>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, "latin1");
}

// signIn is the ID token of an account the page signed up.
async function signIn(address) {
  const r = await fetch(`http://${authHost}/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword?key=any`, {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ email: address, password: "password123", returnSecureToken: true }) });
  return (await r.json()).idToken;
}

for (const { name, viewport } of widths) {
  test(`a photo and a PDF (${name}): the model gets the image and the text, a reload shows both, only the owner downloads them`, { skip: missing ? `needs ${missing}` : storage ? `needs ${storage}` : false }, async () => {
    const context = await web.browser.newContext({ viewport });
    const page = await context.newPage();
    const turns = [];
    page.on("request", (r) => { if (r.method() === "POST" && r.url() === `${web.base}/ai-sdk/chat`) turns.push(JSON.parse(r.postData())); });
    const owner = email(`files-${name}`);
    await signUp(page, owner);

    await page.setInputFiles("#file", { name: "photo.png", mimeType: "image/png", buffer: PNG });
    await page.setInputFiles("#file", { name: "report.pdf", mimeType: "application/pdf", buffer: pdf(PHRASE) });
    await page.waitForFunction(() => document.querySelectorAll("#attachments li.attachment:not(.failed):not(:has(progress))").length === 2);
    await page.fill("#input", "What do these say?");
    await page.press("#input", "Enter");
    await page.waitForSelector("#messages li.assistant:not(.streaming)");
    const reply = await page.textContent("#messages li.assistant");
    assert.match(reply, /\[image_url data:image\/png;base64/, "the model got no image_url part");
    assert.ok(reply.includes(PHRASE), `the model got no text of the PDF: ${reply}`);

    // A reload shows the message with both files: the image in place, the document by name.
    await page.reload();
    await page.waitForSelector("#messages li.user .files img.file-image");
    assert.deepEqual(await page.locator("#messages li.user .files .file-chip").allTextContents().then((t) => t.map((s) => s.trim())), ["report.pdf"]);
    await page.screenshot({ path: join(shots, `files-${name}.png`) });

    // The owner downloads the same bytes; another account gets 404.
    const files = turns.at(-1).messages.at(-1).parts.filter((p) => p.type === "file");
    assert.equal(files.length, 2);
    const [mine, theirs] = [await signIn(owner), await signUpToken(email("stranger"))];
    for (const [f, bytes] of [[files[0], PNG], [files[1], pdf(PHRASE)]]) {
      const got = await fetch(web.base + f.url, { headers: { Authorization: `Bearer ${mine}` } });
      assert.equal(got.status, 200);
      assert.ok(Buffer.from(await got.arrayBuffer()).equals(bytes), `${f.filename}: not the bytes uploaded`);
      const other = await fetch(web.base + f.url, { headers: { Authorization: `Bearer ${theirs}` } });
      assert.equal(other.status, 404, `${f.filename} is served to another account`);
    }
    await context.close();
  });
}
