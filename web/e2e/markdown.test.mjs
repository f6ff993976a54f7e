// The web app's Markdown, inline: emphasis never inside a word, links only
// to safe places. Bundled for Node as the app bundles it for the browser.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const out = join(mkdtempSync(join(tmpdir(), "chat-markdown-")), "markdown.mjs");
execFileSync(join(root, "node_modules", ".bin", "esbuild"), ["web/src/markdown.ts", "--bundle", "--format=esm", "--platform=node", `--outfile=${out}`], { cwd: root });
const { parseInline } = await import(out);

// shape writes runs compactly: text as is, others as kind(children).
const shape = (runs) => runs.map((r) => r.kind === "text" ? r.text : r.kind === "code" ? `code(${r.text})` :
  r.kind === "link" ? `link(${r.href}|${shape(r.children)})` : `${r.kind}(${shape(r.children)})`).join("");

for (const [name, source, want] of [
  ["snake_case stays", "use snake_case here", "use snake_case here"],
  ["an environment variable stays", "set OPENAI_API_KEY or OPENAI_BASE_URL", "set OPENAI_API_KEY or OPENAI_BASE_URL"],
  ["a dunder stays", "call __init__ first", "call __init__ first"],
  ["arithmetic stays", "2*3*4 = 24", "2*3*4 = 24"],
  ["a product of names stays", "a*b*c", "a*b*c"],
  ["bold", "this is **very** good", "this is strong(very) good"],
  ["bold with underscores, of words", "__two words__ here", "strong(two words) here"],
  ["italics", "*really* and _truly_", "em(really) and em(truly)"],
  ["italics beside punctuation", "(*yes*), _no_.", "(em(yes)), em(no)."],
  ["code keeps its underscores", "run `make_it_so()` now", "run code(make_it_so()) now"],
  ["a safe link", "see [the docs](https://example.com/a_b)", "see link(https://example.com/a_b|the docs)"],
  ["an unsafe link keeps its text", "[click](javascript:alert(1))", "click)"],
  ["spaces do not open emphasis", "a * b * c", "a * b * c"],
]) {
  test(`inline Markdown: ${name}`, () => assert.equal(shape(parseInline(source)), want));
}

// Code is highlighted as text in spans: every character kept, in order.
const { highlight } = await import(out);
const spans = (code) => highlight(code).map((t) => t.kind === "text" ? t.text : `${t.kind}(${t.text})`).join("");
for (const [name, source, want] of [
  ["Go", 'func main() { x := 42 // the answer\n\tfmt.Println("hi") }', 'keyword(func) main() { x := number(42) comment(// the answer)\n\tfmt.Println(string("hi")) }'],
  ["Python", "def f(a):\n    return 'x' # done", "keyword(def) f(a):\n    keyword(return) string('x') comment(# done)"],
  ["HTML stays text", '<script>alert("x")</script>', '<script>alert(string("x"))</script>'],
  ["an escaped quote stays in its string", String.raw`"a\"b" + c`, String.raw`string("a\"b") + c`],
]) {
  test(`code highlighting: ${name}`, () => {
    assert.equal(spans(source), want);
    assert.equal(highlight(source).map((t) => t.text).join(""), source);
  });
}
