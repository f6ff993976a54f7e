// A small Markdown renderer for replies that builds DOM nodes and never
// parses HTML: whatever a model writes (script tags, raw HTML, event
// attributes) ends up as text. It knows fenced code, headings, lists,
// paragraphs, inline code, bold, italics and links (http, https and mailto
// only). Code blocks are highlighted (as text in spans) and have a Copy
// button.

const SAFE_URL = /^(https?:|mailto:)/i;

export function renderMarkdown(source: string): DocumentFragment {
  const out = document.createDocumentFragment();
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (/^```/.test(line)) {
      const lang = line.slice(3).trim();
      const code: string[] = [];
      for (i++; i < lines.length && !/^```/.test(lines[i]); i++) code.push(lines[i]);
      i++; // the closing fence
      out.append(codeBlock(code.join("\n"), lang));
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      const h = document.createElement(`h${Math.min(6, heading[1].length + 2)}`);
      h.append(inline(heading[2]));
      out.append(h);
      i++;
      continue;
    }
    const item = /^\s*([-*+]|\d+[.)])\s+/;
    if (item.test(line)) {
      const list = document.createElement(/^\s*\d/.test(line) ? "ol" : "ul");
      for (; i < lines.length && item.test(lines[i]); i++) {
        const li = document.createElement("li");
        li.append(inline(lines[i].replace(item, "")));
        list.append(li);
      }
      out.append(list);
      continue;
    }
    if (line.trim() === "") {
      i++;
      continue;
    }
    const para: string[] = [];
    for (; i < lines.length && lines[i].trim() !== "" && !/^```/.test(lines[i]) && !/^#{1,6}\s/.test(lines[i]) && !item.test(lines[i]); i++) {
      para.push(lines[i]);
    }
    const p = document.createElement("p");
    p.append(inline(para.join("\n")));
    out.append(p);
  }
  return out;
}

// Inline is a run of inline Markdown: text, code, a link, bold or italics.
export type Inline =
  | { kind: "text" | "code"; text: string }
  | { kind: "link"; href: string; children: Inline[] }
  | { kind: "strong" | "em"; children: Inline[] };

// Emphasis never opens or closes inside a word: snake_case, OPENAI_API_KEY,
// 2*3*4 and a __dunder__ stay as written. A word is letters and digits (and,
// for underscores, underscores); bold with __ wants more than one word.
const W = "[\\p{L}\\p{N}]";
const token = new RegExp(
  "`([^`]+)`" + // code
  "|\\[([^\\]]+)\\]\\(([^)\\s]+)\\)" + // a link
  `|(?<!${W})\\*\\*(?!\\s)([^*]+?)(?<!\\s)\\*\\*(?!${W})` + // **bold**
  `|(?<![\\p{L}\\p{N}_])__(?!\\s)([^_]*\\s[^_]*?)(?<!\\s)__(?![\\p{L}\\p{N}_])` + // __bold words__
  `|(?<!${W}|\\*)\\*(?![\\s*])([^*]+?)(?<![\\s*])\\*(?!${W}|\\*)` + // *italics*
  `|(?<![\\p{L}\\p{N}_])_(?![\\s_])([^_]+?)(?<![\\s_])_(?![\\p{L}\\p{N}_])`, // _italics_
  "gu",
);

// parseInline reads inline Markdown into runs (a pure function: tested in
// web/e2e/markdown.test.mjs).
export function parseInline(text: string): Inline[] {
  const out: Inline[] = [];
  const push = (t: string) => {
    if (!t) return;
    const prev = out[out.length - 1];
    if (prev?.kind === "text") prev.text += t;
    else out.push({ kind: "text", text: t });
  };
  let last = 0;
  token.lastIndex = 0;
  const matches = [...text.matchAll(token)];
  for (const m of matches) {
    push(text.slice(last, m.index));
    last = m.index! + m[0].length;
    if (m[1] !== undefined) out.push({ kind: "code", text: m[1] });
    else if (m[2] !== undefined) {
      if (SAFE_URL.test(m[3])) out.push({ kind: "link", href: m[3], children: parseInline(m[2]) });
      else push(m[2]); // an unsafe link keeps only its text
    } else if (m[4] !== undefined || m[5] !== undefined) out.push({ kind: "strong", children: parseInline(m[4] ?? m[5]) });
    else out.push({ kind: "em", children: parseInline(m[6] ?? m[7]) });
  }
  push(text.slice(last));
  return out;
}

// inline renders inline Markdown as nodes.
function inline(text: string): DocumentFragment {
  const out = document.createDocumentFragment();
  for (const run of parseInline(text)) out.append(nodeOf(run));
  return out;
}

function nodeOf(run: Inline): Node {
  switch (run.kind) {
    case "text":
      return document.createTextNode(run.text);
    case "code": {
      const c = document.createElement("code");
      c.textContent = run.text;
      return c;
    }
    case "link": {
      const a = document.createElement("a");
      a.href = run.href;
      a.rel = "noopener noreferrer";
      a.target = "_blank";
      for (const child of run.children) a.append(nodeOf(child));
      return a;
    }
    default: {
      const e = document.createElement(run.kind);
      for (const child of run.children) e.append(nodeOf(child));
      return e;
    }
  }
}

// codeBlock is a fenced block: its language and a Copy button above the
// code, highlighted.
function codeBlock(text: string, lang: string): HTMLElement {
  const box = document.createElement("div");
  box.className = "code";
  const bar = document.createElement("div");
  bar.className = "code-bar";
  const name = document.createElement("span");
  name.textContent = lang || "code";
  const copy = document.createElement("button");
  copy.type = "button";
  copy.className = "quiet copy-code";
  copy.textContent = "Copy";
  copy.setAttribute("aria-label", "Copy the code");
  copy.addEventListener("click", async () => {
    await navigator.clipboard.writeText(text);
    copy.textContent = "Copied";
    setTimeout(() => { copy.textContent = "Copy"; }, 1500);
  });
  bar.append(name, copy);
  const pre = document.createElement("pre");
  const c = document.createElement("code");
  for (const t of highlight(text)) {
    if (t.kind === "text") c.append(t.text);
    else {
      const span = document.createElement("span");
      span.className = `tok-${t.kind}`;
      span.textContent = t.text;
      c.append(span);
    }
  }
  pre.append(c);
  box.append(bar, pre);
  return box;
}

// Token is a piece of code, kind for its colour.
export type Token = { kind: "text" | "keyword" | "string" | "comment" | "number"; text: string };

const KEYWORDS = new Set(("async await break case catch class const continue def defer default del do elif else enum export extends " +
  "false fn for from func function go if impl import in interface lambda let match mut new nil none null package pass pub " +
  "raise return select self static struct super switch this throw true try type typeof use var void while with yield").split(" "));
const codeToken = /(\/\/[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/)|("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`]*`)|\b(\d[\d_.]*(?:e[+-]?\d+)?)\b|([A-Za-z_]\w*)/g;

// highlight splits code into tokens for colour, the same text in order (a
// pure function, language-agnostic: keywords of the common languages,
// strings, comments, numbers).
export function highlight(code: string): Token[] {
  const out: Token[] = [];
  const push = (kind: Token["kind"], text: string) => {
    const prev = out[out.length - 1];
    if (prev?.kind === kind) prev.text += text;
    else if (text) out.push({ kind, text });
  };
  let last = 0;
  for (const m of code.matchAll(codeToken)) {
    push("text", code.slice(last, m.index));
    last = m.index! + m[0].length;
    if (m[1] !== undefined) push("comment", m[1]);
    else if (m[2] !== undefined) push("string", m[2]);
    else if (m[3] !== undefined) push("number", m[3]);
    else push(KEYWORDS.has(m[4]) ? "keyword" : "text", m[4]);
  }
  push("text", code.slice(last));
  return out;
}
