// A reply's Markdown as React elements (markdown.ts reads it): text is
// always text, so nothing a model writes runs; code blocks are
// highlighted, with their language and a Copy button.
import { useState, type ReactNode } from "react";
import { highlight, parseBlocks, parseInline, type Inline } from "./markdown";

export function Markdown({ text }: { text: string }) {
  return <>{parseBlocks(text).map((b, i) => {
    switch (b.kind) {
      case "code": return <CodeBlock key={i} lang={b.lang} text={b.text} />;
      case "heading": {
        const H = `h${b.level}` as "h3";
        return <H key={i}>{inline(b.text)}</H>;
      }
      case "list": {
        const L = b.ordered ? "ol" : "ul";
        return <L key={i}>{b.items.map((t, j) => <li key={j}>{inline(t)}</li>)}</L>;
      }
      default: return <p key={i}>{inline(b.text)}</p>;
    }
  })}</>;
}

const inline = (text: string) => parseInline(text).map(node);

function node(run: Inline, key: number): ReactNode {
  switch (run.kind) {
    case "text": return run.text;
    case "code": return <code key={key}>{run.text}</code>;
    case "link": return <a key={key} href={run.href} rel="noopener noreferrer" target="_blank">{run.children.map(node)}</a>;
    case "strong": return <strong key={key}>{run.children.map(node)}</strong>;
    default: return <em key={key}>{run.children.map(node)}</em>;
  }
}

function CodeBlock({ lang, text }: { lang: string; text: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    await navigator.clipboard.writeText(text);
    setCopied(true);
    setTimeout(() => setCopied(false), 1500);
  };
  return (
    <div className="code">
      <div className="code-bar">
        <span>{lang || "code"}</span>
        <button type="button" className="quiet copy-code" aria-label="Copy the code" onClick={copy}>{copied ? "Copied" : "Copy"}</button>
      </div>
      <pre><code>{highlight(text).map((t, i) => t.kind === "text" ? t.text : <span key={i} className={`tok-${t.kind}`}>{t.text}</span>)}</code></pre>
    </div>
  );
}
