// Markdown for replies, read into plain data that Markdown.tsx renders as
// React elements: no HTML a model writes is ever parsed (script tags, raw
// HTML and event attributes end up as text). It knows fenced code,
// headings, lists, paragraphs, inline code, bold, italics and links (http,
// https and mailto only); code is highlighted as text in spans. Pure
// functions, tested in web/e2e/markdown.test.mjs.

const SAFE_URL = /^(https?:|mailto:)/i;

// Block is a block of a reply: fenced code, a heading, a list, a paragraph.
export type Block =
  | { kind: "code"; lang: string; text: string }
  | { kind: "heading"; level: number; text: string }
  | { kind: "list"; ordered: boolean; items: string[] }
  | { kind: "para"; text: string };

const ITEM = /^\s*([-*+]|\d+[.)])\s+/;

// parseBlocks reads Markdown source into blocks (an unclosed fence, as a
// reply streams, runs to the end).
export function parseBlocks(source: string): Block[] {
  const out: Block[] = [];
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (/^```/.test(line)) {
      const code: string[] = [];
      for (i++; i < lines.length && !/^```/.test(lines[i]); i++) code.push(lines[i]);
      i++; // the closing fence
      out.push({ kind: "code", lang: line.slice(3).trim(), text: code.join("\n") });
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      out.push({ kind: "heading", level: Math.min(6, heading[1].length + 2), text: heading[2] });
      i++;
    } else if (ITEM.test(line)) {
      const items: string[] = [];
      for (; i < lines.length && ITEM.test(lines[i]); i++) items.push(lines[i].replace(ITEM, ""));
      out.push({ kind: "list", ordered: /^\s*\d/.test(line), items });
    } else if (line.trim() === "") {
      i++;
    } else {
      const para: string[] = [];
      for (; i < lines.length && lines[i].trim() !== "" && !/^```/.test(lines[i]) && !/^#{1,6}\s/.test(lines[i]) && !ITEM.test(lines[i]); i++) {
        para.push(lines[i]);
      }
      out.push({ kind: "para", text: para.join("\n") });
    }
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
