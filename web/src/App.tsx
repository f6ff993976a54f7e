// The page: the header (account, usage, memory, export), sign-in, and,
// signed in, the chat list beside the open chat, with the panels, the
// command palette and the keyboard shortcuts.
import { generateId } from "ai";
import { onAuthStateChanged, signOut, type User } from "firebase/auth";
import { useCallback, useEffect, useState } from "react";
import { flushSync } from "react-dom";
import type { Backend } from "./backend";
import { Auth } from "./Auth";
import { ChatPane, type Open } from "./ChatPane";
import { useSessions, type Filter } from "./live";
import { Memory } from "./Memory";
import { Palette } from "./Palette";
import { Sidebar, type Hit } from "./Sidebar";
import { UIProvider, useUI } from "./ui";

export function App({ backend }: { backend: Backend }) {
  const [user, setUser] = useState<User | null | undefined>(undefined);
  useEffect(() => onAuthStateChanged(backend.auth, setUser), [backend]);
  return <UIProvider><Shell backend={backend} user={user} /></UIProvider>;
}

function Shell({ backend, user }: { backend: Backend; user: User | null | undefined }) {
  const ui = useUI();
  const [usage, setUsage] = useState("");
  const [memory, setMemory] = useState(false);
  const refreshUsage = useCallback(() => void ui.guard(async () => {
    const u = await backend.api.usage();
    const n = (x: number) => x.toLocaleString("en");
    setUsage(u.tokens.limit > 0 ? `Today: ${n(u.tokens.used)} of ${n(u.tokens.limit)} tokens` : `Today: ${n(u.tokens.used)} tokens`);
  }), [backend]);
  useEffect(() => { setUsage(""); setMemory(false); if (user) refreshUsage(); }, [user, refreshUsage]);
  const exportData = () => ui.guard(async () => {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(await backend.api.exportAccount());
    a.download = "chat-export.json";
    a.click();
    URL.revokeObjectURL(a.href);
  });
  return (
    <>
      <header>
        <h1>Chat memory</h1>
        <div id="account" hidden={!user}>
          <span id="who">{user?.email}</span>
          <span id="usage" title="Tokens spent today (UTC) of your daily limit">{usage}</span>
          <button id="memory-open" type="button" aria-expanded={memory} aria-controls="memory" onClick={() => setMemory(!memory)}>Memory</button>
          <button id="export" type="button" title="Export my data" onClick={() => void exportData()}>Export<span className="long"> my data</span></button>
          <button id="signout" type="button" onClick={() => void signOut(backend.auth)}>Sign out</button>
        </div>
      </header>
      {memory && <Memory backend={backend} close={() => setMemory(false)} />}
      {user === null && <Auth auth={backend.auth} />}
      {user && <Main key={user.uid} backend={backend} user={user} refreshUsage={refreshUsage}
        openMemory={() => setMemory(true)} exportData={exportData} />}
    </>
  );
}

const fresh = (): Open => ({ chatId: generateId(), sessionId: null });

type MainProps = { backend: Backend; user: User; refreshUsage: () => void; openMemory: () => void; exportData: () => unknown };

function Main({ backend, user, refreshUsage, openMemory, exportData }: MainProps) {
  const ui = useUI();
  const last = `chat-memory.last.${user.uid}`; // the chat open last, reopened after a reload
  const [open, setOpen] = useState<Open>(() => {
    const id = localStorage.getItem(last);
    return id ? { chatId: id, sessionId: id } : fresh();
  });
  const [found, setFound] = useState<Hit | null>(null);
  const [filter, setFilter] = useState<Filter>("active");
  const [drawer, setDrawer] = useState(false);
  const [palette, setPalette] = useState(false);
  const sessions = useSessions(backend.db, user.uid, filter, ui.showError);
  useEffect(() => {
    if (open.sessionId) localStorage.setItem(last, open.sessionId);
    else localStorage.removeItem(last);
  }, [open.sessionId, last]);
  const openChat = (id: string, hit?: Hit) => {
    setFound(hit ?? null);
    setDrawer(false);
    if (id !== open.sessionId) setOpen({ chatId: id, sessionId: id });
  };
  const newChat = () => {
    setFound(null);
    setDrawer(false);
    setOpen(fresh());
    requestAnimationFrame(() => document.getElementById("input")?.focus());
  };
  // The palette opens within the key's event (its box focused before the
  // next key is handled): what is typed at once after Ctrl-K lands in it,
  // not in the composer.
  useShortcuts({ newChat, togglePalette: () => flushSync(() => setPalette((p) => !p)), closeDrawer: () => setDrawer(false) });
  return (
    <main id="app">
      <div id="scrim" hidden={!drawer} onClick={() => setDrawer(false)}></div>
      <Sidebar backend={backend} sessions={sessions} filter={filter} setFilter={setFilter} current={open.sessionId}
        open={drawer} close={() => setDrawer(false)} newChat={newChat} openChat={openChat} clearFound={() => setFound(null)} />
      <ChatPane key={open.chatId} backend={backend} open={open} found={found?.sessionId === open.sessionId ? found.seq : null}
        listed={sessions?.find((s) => s.id === open.sessionId)?.title} drawer={drawer} openDrawer={() => setDrawer(true)}
        onSession={(sessionId) => setOpen((o) => (o.chatId === open.chatId ? { ...o, sessionId } : o))}
        onGone={newChat} onTurnEnd={refreshUsage} />
      <Palette open={palette} close={() => setPalette(false)} chats={sessions ?? []} openChat={(id) => openChat(id)}
        commands={[
          { label: "New chat", detail: "Ctrl+Shift+O", run: newChat },
          { label: "Memory", detail: "What the assistant remembers", run: openMemory },
          { label: "Export my data", run: exportData },
        ]}
        searchMessages={async (q) => (await backend.api.search({ q, limit: 10 })).results.map((r) => ({
          label: r.sessionTitle, detail: r.snippet, run: () => openChat(r.sessionId, { sessionId: r.sessionId, seq: r.seq }),
        }))} />
    </main>
  );
}

// useShortcuts: Ctrl/Cmd-K opens the command palette, Ctrl/Cmd-Shift-O
// starts a new chat, Escape closes the chat drawer (Escape in the composer
// stops a reply: Chat.tsx).
function useShortcuts(on: { newChat: () => void; togglePalette: () => void; closeDrawer: () => void }) {
  useEffect(() => {
    const key = (e: KeyboardEvent) => {
      const mod = e.ctrlKey || e.metaKey;
      if (mod && e.key.toLowerCase() === "k") {
        e.preventDefault();
        on.togglePalette();
      } else if (mod && e.shiftKey && e.key.toLowerCase() === "o") {
        e.preventDefault();
        on.newChat();
      } else if (e.key === "Escape") on.closeDrawer();
    };
    document.addEventListener("keydown", key);
    return () => document.removeEventListener("keydown", key);
  });
}
