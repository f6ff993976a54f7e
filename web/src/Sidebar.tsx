// The chat list, live from Firestore: grouped by date, filtered by status,
// each chat with Rename, Archive or Restore, and Delete; a search box over
// every chat's messages. A drawer on a phone.
import { useState, type FormEvent } from "react";
import type { Backend } from "./backend";
import { dateGroup, type Filter, type SessionItem } from "./live";
import { useUI } from "./ui";

export const MAX_TITLE = 200; // the server's limit

export type Hit = { sessionId: string; seq: number };
type Props = {
  backend: Backend;
  sessions: SessionItem[] | null;
  filter: Filter;
  setFilter: (f: Filter) => void;
  current: string | null;
  open: boolean; // as a drawer, on a phone
  close: () => void;
  newChat: () => void;
  openChat: (id: string, hit?: Hit) => void;
  clearFound: () => void;
};

const EMPTY: Record<Filter, string> = {
  active: "No chats yet: write a message to start one.",
  archived: "No archived chats.",
  deleted: "No deleted chats: a deleted chat stays here for 30 days.",
};

export function Sidebar(p: Props) {
  const ui = useUI();
  const api = p.backend.api;
  const rename = (s: SessionItem) => ui.askText("Rename the chat", s.title, "Save", { max: MAX_TITLE, submit: async (v) => {
    const title = v.trim();
    if (title && title !== s.title) await api.updateSession(s.id, { title });
  } });
  const remove = async (s: SessionItem) => {
    if (await ui.confirm(`Delete "${s.title}"?`, "You can restore it from Deleted for 30 days; then it is gone for good.", "Delete")) await api.deleteSession(s.id);
  };
  let group = "";
  return (
    <aside id="chats" aria-label="Your chats" className={p.open ? "open" : ""}>
      <div className="row">
        <button id="chats-close" className="quiet phone" type="button" onClick={p.close}>Close</button>
        <button id="new" type="button" title="New chat (Ctrl+Shift+O)" onClick={p.newChat}>New chat</button>
        <select id="filter" aria-label="Show" value={p.filter} onChange={(e) => p.setFilter(e.target.value as Filter)}>
          <option value="active">Active</option>
          <option value="archived">Archived</option>
          <option value="deleted">Deleted</option>
        </select>
      </div>
      <Search backend={p.backend} openChat={p.openChat} clearFound={p.clearFound} />
      <ul id="sessions">
        {p.sessions?.length === 0 && <li className="none">{EMPTY[p.filter]}</li>}
        {p.sessions?.flatMap((s) => {
          const g = dateGroup(s.updatedAt);
          const heading = g !== group ? [<li key={"g-" + s.id} className="group" role="presentation">{g}</li>] : [];
          group = g;
          return [...heading, (
            <li key={s.id} data-id={s.id} className={s.id === p.current ? "current" : ""}>
              <span className="name" title="Open" onClick={() => p.openChat(s.id)}>{s.title}</span>
              <div className="row">
                <button className="quiet" type="button" onClick={() => void ui.guard(() => rename(s))}>Rename</button>
                {s.status === "active"
                  ? <button className="quiet" type="button" onClick={() => void ui.guard(() => api.archiveSession(s.id))}>Archive</button>
                  : <button className="quiet" type="button" onClick={() => void ui.guard(() => api.restoreSession(s.id))}>Restore</button>}
                {s.status !== "deleted" && <button className="quiet danger" type="button" onClick={() => void ui.guard(() => remove(s))}>Delete</button>}
              </div>
            </li>
          )];
        })}
      </ul>
    </aside>
  );
}

type Result = { sessionId: string; sessionTitle: string; seq: number; snippet: string };

// Search finds the user's messages by meaning and exact phrase; a hit
// opens its chat at the message. A cleared box clears what it found.
function Search({ backend, openChat, clearFound }: { backend: Backend; openChat: Props["openChat"]; clearFound: () => void }) {
  const ui = useUI();
  const [q, setQ] = useState("");
  const [hits, setHits] = useState<Result[] | null>(null);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!q.trim()) return;
    void ui.guard(async () => setHits((await backend.api.search({ q: q.trim(), limit: 10 })).results));
  };
  return (
    <form id="search" role="search" onSubmit={submit}>
      <input id="q" type="search" placeholder="Search your chats" aria-label="Search your chats" maxLength={500} value={q}
        onChange={(e) => { setQ(e.target.value); if (!e.target.value.trim()) { setHits(null); clearFound(); } }} />
      <ul id="hits">
        {hits?.length === 0 && <li className="none">Nothing found.</li>}
        {hits?.map((r, i) => (
          <li key={i}>
            <button className="quiet hit" type="button" title="Open the conversation here" onClick={() => openChat(r.sessionId, { sessionId: r.sessionId, seq: r.seq })}>
              <span className="name">{r.sessionTitle}</span><span className="snippet">{r.snippet}</span>
            </button>
          </li>
        ))}
      </ul>
    </form>
  );
}
