// The open chat, on the AI SDK's useChat against this backend's
// /ai-sdk/chat: the conversation, the reply as it streams, a real Stop,
// edit, regenerate and versions, and the composer. A chat listed from
// Firestore opens by its session's id; a new chat by an id of its own,
// until the server names its session.
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, type UIMessage } from "ai";
import { useEffect, useMemo, useRef, useState, type KeyboardEvent } from "react";
import { AttachList, ClipIcon, useAttachments } from "./Attachments";
import { call, type Backend } from "./backend";
import { Markdown } from "./Markdown";
import { Message, metaOf, textOf, type Actions } from "./Message";
import { useUI } from "./ui";

// loadChat is a chat's active branch as UIMessages ([] for a new chat).
export async function loadChat(b: Backend, chatId: string): Promise<{ messages: UIMessage[]; more: boolean }> {
  const page = await (await call(b, "GET", `/ai-sdk/chat/${encodeURIComponent(chatId)}/messages?limit=100`)).json();
  return { messages: page.messages, more: !!page.nextPageToken };
}

export type ChatProps = {
  backend: Backend;
  chatId: string;
  sessionId: string | null;
  initial: UIMessage[];
  resume: boolean; // an existing chat: pick up a reply in progress
  readOnly: boolean;
  found: number | null; // the seq of the search hit to show
  earlierDeleted: boolean;
  ratings: Map<string, string>;
  onSession: (sessionId: string) => void;
  onTurnEnd: () => void;
};

const SUGGESTIONS = ["Plan a weekend in Lisbon", "Explain Firestore security rules simply", "Write a haiku about memory", "Help me name a side project"];

export function Conversation(p: ChatProps) {
  const ui = useUI();
  // README shows these lines (web/e2e/readme.test.mjs checks it).
  const transport = useMemo(() => new DefaultChatTransport({
    api: `${p.backend.base}/ai-sdk/chat`, // the backend's base URL: /config.json's apiBase
    headers: p.backend.headers, // async () => ({ Authorization: `Bearer ${await auth.currentUser!.getIdToken()}` })
    body: { resumable: true }, // a reload leaves the reply going; Stop stops it on the server
  }), [p.backend]);
  // stopping: the text on screen when Stop was clicked, kept there (null: not stopping).
  const [stopping, setStopping] = useState<string | null>(null);
  const [input, setInput] = useState("");
  // The message tapped (a phone shows its actions then), by its place: it
  // stays tapped through a new version of it (edited, regenerated, switched to).
  const [tapped, setTapped] = useState<number | null>(null);
  const following = useRef(p.resume); // the reply streaming was picked up, not sent from here
  const lastSent = useRef("");
  const settled = useRef(0); // how many replies have ended here: a stop's fallback is for its own
  const chat = useChat({
    id: p.chatId, // a listed chat's session id, or a new chat's own id
    messages: p.initial, // GET /ai-sdk/chat/{id}/messages's .messages ([] for a new chat)
    transport,
    resume: p.resume, // pick up a reply in progress (GET /ai-sdk/chat/{id}/stream)
    onFinish: () => void settle(), // then load the chat as stored: its versions, a stopped reply as kept
    onError: (e) => {
      ui.showError(e);
      setInput((t) => t || lastSent.current);
    },
  });
  const busy = chat.status === "submitted" || chat.status === "streaming";
  const status = useRef(chat.status);
  status.current = chat.status;
  const sessionId = p.sessionId ?? chat.messages.map((m) => metaOf(m).sessionId).find(Boolean) ?? null;
  useEffect(() => { if (sessionId && !p.sessionId) p.onSession(sessionId); }, [sessionId, p]);

  // settle shows the chat as stored once a reply ended: its versions, and
  // a stopped reply as far as the server kept it.
  async function settle() {
    try {
      if (sessionId || chat.messages.some((m) => metaOf(m).sessionId)) chat.setMessages((await loadChat(p.backend, p.chatId)).messages);
    } catch (e) { ui.showError(e); }
    following.current = false;
    settled.current++;
    setStopping(null);
    p.onTurnEnd();
  }

  const files = useAttachments(p.backend);
  const send = (text: string) => {
    if (busy || p.readOnly || files.uploading) return false; // one reply at a time: the text waits in the box
    if (!text.trim() && !files.parts.length) return false;
    ui.clearError();
    following.current = false;
    lastSent.current = text;
    void chat.sendMessage({ text, files: files.parts }); // the attached files as FileUIParts (url /attachments/{id})
    files.clear();
    return true;
  };
  const last = chat.messages.at(-1);
  const streaming = busy || stopping !== null ? (last?.role === "assistant" ? last : null) : null;
  const stop = async () => {
    if (stopping !== null) return;
    setStopping(streaming ? textOf(streaming) : ""); // the screen stops now; the server's stop follows
    const reply = settled.current;
    try {
      await call(p.backend, "POST", `/ai-sdk/chat/${encodeURIComponent(p.chatId)}/stop`);
      // The stream ends with the stored reply; if it does not soon, it is let go.
      setTimeout(() => { if (settled.current === reply && (status.current === "streaming" || status.current === "submitted")) void chat.stop(); }, 5000);
    } catch {
      await chat.stop(); // nothing in progress on the server any more
    }
  };
  const actions = useActions(p, chat, sessionId, busy || stopping !== null);
  const shown = streaming ? chat.messages.slice(0, -1) : chat.messages;
  const onKey = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      if (send(input)) setInput("");
    } else if (e.key === "Escape" && (busy || stopping !== null)) void stop();
  };
  useScroll(p.found, chat.messages);
  return (
    <>
      <ol id="messages">
        {p.earlierDeleted && <li className="none retention">Earlier messages of this chat were deleted after their retention period.</li>}
        {shown.map((m, i) => <Message key={m.id} m={m} actions={actions} found={p.found !== null && metaOf(m).seq === p.found}
          tapped={tapped === i} onTap={() => setTapped(i)} />)}
        {(busy || stopping !== null) && (
          <li className={["assistant streaming", following.current ? "following" : "", stopping !== null ? "stopping" : ""].join(" ").trim()}>
            <div className="body">{(stopping ?? (streaming ? textOf(streaming) : "")) ? <Markdown text={stopping ?? textOf(streaming!)} /> : "…"}</div>
          </li>
        )}
        {!sessionId && !busy && chat.messages.length === 0 && <EmptyChat pick={send} />}
      </ol>
      <AttachList items={files.items} remove={files.remove} />
      <form id="composer" onSubmit={(e) => { e.preventDefault(); if (send(input)) setInput(""); }}
        onDragOver={(e) => { if (!p.readOnly) e.preventDefault(); }}
        onDrop={(e) => { e.preventDefault(); if (!p.readOnly && e.dataTransfer.files.length) files.add(e.dataTransfer.files); }}>
        <input id="file" type="file" multiple hidden onChange={(e) => { if (e.target.files) files.add(e.target.files); e.target.value = ""; }} />
        <button id="attach" type="button" className="quiet" title="Attach files (or paste or drop them)" aria-label="Attach files"
          disabled={p.readOnly} onClick={() => document.getElementById("file")?.click()}><ClipIcon /></button>
        <textarea id="input" rows={2} placeholder={p.readOnly ? "This chat is read-only" : "Message"} aria-label="Message"
          disabled={p.readOnly} value={input} onChange={(e) => setInput(e.target.value)} onKeyDown={onKey} autoFocus
          onPaste={(e) => { if (e.clipboardData.files.length) { e.preventDefault(); files.add(e.clipboardData.files); } }} />
        <button id="send" key="send" type="submit" disabled={p.readOnly || busy || files.uploading}>Send</button>
        <button id="stop" key="stop" type="button" hidden={!streaming && stopping === null} disabled={stopping !== null} onClick={() => void stop()}>
          {stopping !== null ? "Stopping…" : "Stop"}
        </button>
      </form>
    </>
  );
}

// useActions are a message's actions, through useChat (edit, regenerate)
// and the API (versions, ratings); none while a reply streams or the chat
// is read-only.
function useActions(p: ChatProps, chat: ReturnType<typeof useChat>, sessionId: string | null, streaming: boolean): Actions {
  const ui = useUI();
  return {
    disabled: streaming || p.readOnly,
    copy: (m) => void ui.guard(async () => { await navigator.clipboard.writeText(textOf(m)); ui.toast("Copied."); }),
    edit: (m) => void ui.guard(async () => {
      const text = (await ui.askText("Edit your message", textOf(m), "Send"))?.trim();
      if (!text || text === textOf(m)) return;
      void chat.sendMessage({ text, messageId: m.id }); // an edit: written beside the original, a version of it
    }),
    regenerate: (m) => void ui.guard(() => chat.regenerate({ messageId: m.id })), // beside the old reply, a version of it
    version: (m, i) => void ui.guard(async () => {
      const v = metaOf(m).versions?.[i];
      if (!v || !sessionId) return;
      await p.backend.api.switchBranch(sessionId, v.seq); // POST /sessions/{sessionId}/branch {seq}
      chat.setMessages((await loadChat(p.backend, p.chatId)).messages); // and load the chat again
    }),
    rate: (m, rating, on) => void ui.guard(async () => {
      const id = metaOf(m).replyId;
      if (!id || !sessionId) return;
      await (on ? p.backend.api.deleteFeedback(sessionId, id) : p.backend.api.setFeedback(sessionId, id, { rating }));
    }),
    rating: (m) => p.ratings.get(metaOf(m).replyId ?? ""),
    fetchFile: async (url) => (await call(p.backend, "GET", url)).blob(),
  };
}

// useScroll keeps the newest message in view, or the search hit shown.
function useScroll(found: number | null, messages: UIMessage[]) {
  useEffect(() => {
    const list = document.getElementById("messages");
    const hit = found !== null ? list?.querySelector("li.found") : null;
    if (hit) hit.scrollIntoView({ block: "center" });
    else list?.lastElementChild?.scrollIntoView({ block: "end" });
  }, [found, messages]);
}

// EmptyChat is a new chat's empty state: what to ask, to start from.
function EmptyChat({ pick }: { pick: (text: string) => unknown }) {
  return (
    <li className="empty">
      <h3>What can I help with?</h3>
      <p>Your chats are kept, searchable, and remembered across sessions. Try one of these:</p>
      <div className="suggestions">
        {SUGGESTIONS.map((s) => <button key={s} type="button" className="quiet suggestion" onClick={() => pick(s)}>{s}</button>)}
      </div>
    </li>
  );
}
