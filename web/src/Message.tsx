// One message of the conversation as the AI SDK holds it (a UIMessage):
// the user's words as typed, a reply as Markdown, an app's tool calls and
// their results collapsed; and its actions (copy, edit, regenerate, the
// versions, thumbs), shown on hover, focus, a tap, and on the last message.
import type { FileUIPart, UIMessage } from "ai";
import { FilePart } from "./Attachments";
import { Markdown } from "./Markdown";
import { Thumb } from "./ui";

// The metadata the server gives a loaded message (and a streamed reply's finish).
export type Meta = { sessionId?: string; replyId?: string; seq?: number; versions?: { id: string; seq: number }[]; activeVersion?: number };
export const metaOf = (m: UIMessage) => (m.metadata ?? {}) as Meta;
export const textOf = (m: UIMessage) => m.parts.map((p) => (p.type === "text" ? p.text : "")).join("");

export type Actions = {
  disabled: boolean; // a reply streams, or the chat is read-only
  copy: (m: UIMessage) => void;
  edit: (m: UIMessage) => void;
  regenerate: (m: UIMessage) => void;
  version: (m: UIMessage, index: number) => void;
  rate: (m: UIMessage, rating: "up" | "down", on: boolean) => void;
  rating: (m: UIMessage) => string | undefined;
  fetchFile: (url: string) => Promise<Blob>; // an attachment's bytes, with the user's token
};

type ToolPart = { type: string; toolName?: string; toolCallId: string; state: string; input?: unknown; output?: unknown };
const isTool = (p: { type: string }) => p.type.startsWith("tool-") || p.type === "dynamic-tool";
const json = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));

// ToolItems are a reply's tool calls and their results, each collapsed.
function ToolItems({ m }: { m: UIMessage }) {
  return <>{(m.parts.filter(isTool) as unknown as ToolPart[]).flatMap((p) => {
    const name = p.toolName ?? p.type.replace(/^tool-/, "");
    const items = [
      <li key={p.toolCallId} className="tool"><details className="tool"><summary>Called {name}</summary><pre>{name}({json(p.input)})</pre></details></li>,
    ];
    if (p.state === "output-available") {
      items.push(<li key={p.toolCallId + "-out"} className="tool"><details className="tool"><summary>Tool result</summary><pre>{json(p.output)}</pre></details></li>);
    }
    return items;
  })}</>;
}

type Props = { m: UIMessage; actions: Actions; found: boolean; tapped: boolean; onTap: () => void };

export function Message({ m, actions, found, tapped, onTap }: Props) {
  const text = textOf(m);
  const meta = metaOf(m);
  const files = m.parts.filter((p): p is FileUIPart => p.type === "file");
  if (m.role === "assistant" && !text) return <ToolItems m={m} />;
  const classes = [m.role, found ? "found" : "", tapped ? "tapped" : ""].filter(Boolean).join(" ");
  return (
    <>
      {m.role === "assistant" && <ToolItems m={m} />}
      <li className={classes} data-id={m.id} onClick={(e) => { if (!(e.target as Element).closest("button, a, details")) onTap(); }}>
        {files.length > 0 && <div className="files">{files.map((f, i) => <FilePart key={i} part={f} fetchFile={actions.fetchFile} />)}</div>}
        <div className="body">{m.role === "assistant" ? <Markdown text={text} /> : text}</div>
        <Tools m={m} meta={meta} text={text} actions={actions} />
      </li>
    </>
  );
}

function Tools({ m, meta, text, actions: a }: { m: UIMessage; meta: Meta; text: string; actions: Actions }) {
  const versions = meta.versions ?? [];
  const at = meta.activeVersion ?? 0;
  const rating = a.rating(m);
  return (
    <div className="tools">
      {versions.length > 1 && <>
        <button type="button" className="quiet prev" title="Previous version" aria-label="Previous version" disabled={a.disabled || at === 0} onClick={() => a.version(m, at - 1)}>‹</button>
        <span className="version">{at + 1} / {versions.length}</span>
        <button type="button" className="quiet next" title="Next version" aria-label="Next version" disabled={a.disabled || at === versions.length - 1} onClick={() => a.version(m, at + 1)}>›</button>
      </>}
      <button type="button" className="quiet copy" title="Copy the message" onClick={() => a.copy(m)} disabled={!text}>Copy</button>
      {m.role === "user" && <button type="button" className="quiet edit" title="Edit and send again" disabled={a.disabled} onClick={() => a.edit(m)}>Edit</button>}
      {m.role === "assistant" && <>
        <button type="button" className="quiet regenerate" title="Answer again" disabled={a.disabled} onClick={() => a.regenerate(m)}>Regenerate</button>
        {(["up", "down"] as const).map((r) => {
          const label = r === "up" ? "Good reply" : "Bad reply";
          return (
            <button key={r} type="button" className={`quiet rate-${r}`} title={label} aria-label={label} aria-pressed={rating === r}
              disabled={a.disabled || !meta.replyId} onClick={() => a.rate(m, r, rating === r)}><Thumb down={r === "down"} /></button>
          );
        })}
      </>}
    </div>
  );
}
