// The open chat's pane: its header (title, settings), its totals, why it is
// read-only (with Restore), and the conversation, loaded from the server
// before useChat takes it over.
import type { UIMessage } from "ai";
import { useEffect, useRef, useState } from "react";
import type { Backend } from "./backend";
import { Conversation, loadChat } from "./Chat";
import { useRatings, useSessionDoc, type Usage } from "./live";
import { Settings } from "./Settings";
import { useUI } from "./ui";

// Open is the chat shown: chatId is useChat's id (a listed chat's is its
// session's id); sessionId is null for a new chat until the server names it.
export type Open = { chatId: string; sessionId: string | null };

type Props = {
  backend: Backend;
  open: Open;
  found: number | null;
  listed?: string; // the chat's title in the list, when the filter shows it
  drawer: boolean;
  openDrawer: () => void;
  onSession: (sessionId: string) => void;
  onGone: () => void;
  onTurnEnd: () => void;
};

// serverModel is the model the server answers with by default ("" until
// known), asked once a page.
let serverModel: Promise<string> | null = null;
function useServerModel(b: Backend) {
  const [model, setModel] = useState("");
  useEffect(() => { void (serverModel ??= b.api.listModels().then((r) => r.default ?? "", () => "")).then(setModel); }, [b]);
  return model;
}
const OFFLINE = "offline-stand-in";

const usageText = (u?: Usage) => u && u.turns > 0
  ? `This chat: ${u.turns} ${u.turns === 1 ? "reply" : "replies"}, ${(u.promptTokens + u.completionTokens).toLocaleString("en")} tokens` + (u.lastModel ? ` (${u.lastModel})` : "")
  : "";

export function ChatPane(p: Props) {
  const ui = useUI();
  const { sessionId } = p.open;
  const doc = useSessionDoc(p.backend.db, sessionId, ui.showError);
  const ratings = useRatings(p.backend.db, sessionId, ui.showError);
  const [settings, setSettings] = useState(false);
  // The chat as stored, before useChat takes it (a new chat has nothing).
  const [initial, setInitial] = useState<{ messages: UIMessage[]; more: boolean } | null>(sessionId ? null : { messages: [], more: false });
  useEffect(() => {
    if (!sessionId) return;
    loadChat(p.backend, p.open.chatId).then(setInitial, (e) => { ui.showError(e); setInitial({ messages: [], more: false }); });
  }, []);
  useEffect(() => { if (doc?.gone) p.onGone(); }, [doc?.gone]); // gone for good (or never this user's)
  const readOnly = !!sessionId && !!doc && doc.status !== "active";
  // The offline stand-in says so once, here, never in its replies: when it
  // answered the chat last, or (before a reply) when the server runs it.
  const model = useServerModel(p.backend);
  const standIn = (doc?.usage?.lastModel || model) === OFFLINE;
  useEffect(() => { if (readOnly) setSettings(false); }, [readOnly]);
  const title = sessionId ? p.listed ?? doc?.title ?? "" : "New chat";
  // The chat shows once loaded with what its document says (its title,
  // whether it takes messages), and stays (a new chat learning its session
  // is the same chat).
  const shown = useRef(false);
  shown.current ||= !!initial && (!sessionId || !!doc);
  return (
    <section id="chat">
      <div className="row nowrap">
        <button id="chats-open" className="quiet phone" type="button" aria-expanded={p.drawer} aria-controls="chats" onClick={p.openDrawer}>Chats</button>
        <h2 id="title">{title}</h2>
        <button id="settings-open" className="quiet" type="button" aria-expanded={settings} aria-controls="settings"
          hidden={!sessionId || readOnly} onClick={() => setSettings(!settings)}>Chat settings</button>
      </div>
      {settings && sessionId && doc && <Settings backend={p.backend} sessionId={sessionId} stored={doc} close={() => setSettings(false)} />}
      <p id="session-usage" className="quiet">{usageText(doc?.usage)}</p>
      {standIn && <p id="standin" role="note">Replies come from the server's offline stand-in model, not a real one: set OPENAI_API_KEY (or OPENAI_BASE_URL) on the server for a real model.</p>}
      <div id="readonly" role="status" hidden={!readOnly}>
        <span id="readonly-text">{doc?.status === "archived"
          ? "This chat is archived: restore it to continue it."
          : "This chat is deleted: restore it within 30 days to keep it, or it goes for good."}</span>{" "}
        <button id="readonly-restore" type="button" onClick={() => void ui.guard(() => p.backend.api.restoreSession(sessionId!))}>Restore</button>
      </div>
      {shown.current ? (
        <Conversation backend={p.backend} chatId={p.open.chatId} sessionId={sessionId} initial={initial!.messages} resume={!!sessionId}
          readOnly={readOnly} found={p.found} earlierDeleted={!!doc && doc.historyFrom > 0 && !initial!.more} ratings={ratings}
          onSession={p.onSession} onTurnEnd={p.onTurnEnd} />
      ) : (
        <>
          <ol id="messages" aria-busy="true"></ol>
          <form id="composer"><textarea id="input" rows={2} placeholder="Message" aria-label="Message" disabled /><button id="send" type="submit" disabled>Send</button></form>
        </>
      )}
    </section>
  );
}
