// A small Markdown renderer for replies that builds DOM nodes and never
// parses HTML: whatever a model writes (script tags, raw HTML, event
// attributes) ends up as text. It knows fenced code, headings, lists,
// paragraphs, inline code, bold, italics and links (http, https and mailto
// only).

const SAFE_URL = /^(https?:|mailto:)/i;

export function renderMarkdown(source: string): DocumentFragment {
  const out = document.createDocumentFragment();
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (/^```/.test(line)) {
      const code: string[] = [];
      for (i++; i < lines.length && !/^```/.test(lines[i]); i++) code.push(lines[i]);
      i++; // the closing fence
      const pre = document.createElement("pre");
      const c = document.createElement("code");
      c.textContent = code.join("\n");
      pre.append(c);
      out.append(pre);
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

// inline renders code spans, links, bold and italics as nodes.
function inline(text: string): DocumentFragment {
  const out = document.createDocumentFragment();
  const token = /`([^`]+)`|\[([^\]]+)\]\(([^)\s]+)\)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|_([^_\s][^_]*)_/g;
  let last = 0;
  for (let m: RegExpExecArray | null; (m = token.exec(text)); ) {
    out.append(text.slice(last, m.index));
    last = token.lastIndex;
    if (m[1] !== undefined) {
      const c = document.createElement("code");
      c.textContent = m[1];
      out.append(c);
    } else if (m[2] !== undefined) {
      if (SAFE_URL.test(m[3])) {
        const a = document.createElement("a");
        a.href = m[3];
        a.rel = "noopener noreferrer";
        a.target = "_blank";
        a.append(inline(m[2]));
        out.append(a);
      } else {
        out.append(m[2]); // an unsafe link keeps only its text
      }
    } else if (m[4] !== undefined || m[5] !== undefined) {
      const b = document.createElement("strong");
      b.append(inline(m[4] ?? m[5]));
      out.append(b);
    } else {
      const e = document.createElement("em");
      e.append(inline(m[6] ?? m[7]));
      out.append(e);
    }
  }
  out.append(text.slice(last));
  return out;
}
