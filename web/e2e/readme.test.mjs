// README and docs/clients.md show the web app's own useChat lines: each
// line of their tsx block after the link to web/src/Chat.tsx is one of
// that file's lines (comments aside), so the snippet is code CI builds
// and the browser tests drive.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { root } from "./helpers.mjs";

test("README and docs/clients.md show the app's own useChat lines", () => {
  const code = (l) => l.replace(/\s+\/\/ .*$/, "").trim();
  const file = new Set(readFileSync(join(root, "web", "src", "Chat.tsx"), "utf8").split("\n").map(code));
  for (const doc of ["README.md", join("docs", "clients.md")]) {
    const text = readFileSync(join(root, doc), "utf8");
    const at = text.indexOf("web/src/Chat.tsx");
    assert.ok(at >= 0, `${doc} links to web/src/Chat.tsx`);
    const block = text.slice(text.indexOf("```tsx", at) + 6).split("```")[0];
    const lines = block.split("\n").map(code).filter((l) => l && !l.startsWith("//"));
    assert.ok(lines.length >= 8, `${doc} shows the component`);
    for (const l of lines) assert.ok(file.has(l), `${doc} shows a line that is not in web/src/Chat.tsx: ${l}`);
  }
});

// README's picture and docs/web-app.md's two (a desktop's and a phone's)
// are the files browser.test.mjs writes on every run, so they show the app
// as it is.
test("README's and docs/web-app.md's screenshots are the ones the browser test takes", () => {
  const browser = readFileSync(join(root, "web", "e2e", "browser.test.mjs"), "utf8");
  for (const [doc, dir, images] of [["README.md", "docs/", ["screenshot.png"]], [join("docs", "web-app.md"), "", ["screenshot.png", "screenshot-phone.png"]]]) {
    const text = readFileSync(join(root, doc), "utf8");
    const shown = [...text.matchAll(/!\[[^\]]*\]\(([^)]+\.png)\)/g)].map((m) => m[1]);
    assert.deepEqual(shown, images.map((i) => dir + i), `${doc}'s pictures`);
    for (const i of images) assert.ok(browser.includes(`page.screenshot({ path: join(root, "docs", "${i}")`) || browser.includes(`p.screenshot({ path: join(root, "docs", "${i}")`), `browser.test.mjs does not write docs/${i}`);
  }
});
