// The example web client: sign in with Firebase Auth, read your own sessions
// and messages live from Firestore (under the security rules), and chat
// through the backend, which does every write.
import { initializeApp } from "firebase/app";
import { getToken, initializeAppCheck, ReCaptchaEnterpriseProvider } from "firebase/app-check";
import {
  connectAuthEmulator, createUserWithEmailAndPassword, getAuth, onAuthStateChanged,
  signInWithEmailAndPassword, signOut, type User,
} from "firebase/auth";
import {
  collection, connectFirestoreEmulator, doc, getFirestore, limit, limitToLast, onSnapshot,
  orderBy, query, where, type Timestamp, type Unsubscribe,
} from "firebase/firestore";
import { ChatMemoryClient, type ChatRequest, type Message } from "../client";
import { renderMarkdown } from "./markdown";
import { setupMemory } from "./memory";
import { setupSettings } from "./settings";
import { $, askText, clearError, confirmAction, el, icon, showError, THUMB, toast } from "./ui";
import { setupLayout } from "./layout";
import { setupPalette } from "./palette";
import { activeBranch, dateGroup, emptyChat, messageOf, parentOf, setupExport, showSessionUsage, showUsage } from "./views";

// A turn that branches: answer a message anew, or send an edited one.
type Fork = Pick<ChatRequest, "regenerate" | "edit">;

type Config = {
  apiBase: string;
  firebase: { apiKey: string; projectId: string; authDomain: string };
  authEmulator?: string;
  firestoreEmulator?: string;
  // App Check, for a deployed app whose backend runs with APP_CHECK on:
  // the reCAPTCHA Enterprise site key, and a debug token for development.
  appCheck?: { siteKey: string; debugToken?: string };
};
type Session = { id: string; title: string; status: string; updatedAt: number };

$("error-close").addEventListener("click", clearError);

const config: Config = await (await fetch("/config.json")).json();
const app = initializeApp(config.firebase);
const auth = getAuth(app);
const db = getFirestore(app);
if (config.authEmulator) connectAuthEmulator(auth, config.authEmulator, { disableWarnings: true });
if (config.firestoreEmulator) {
  const [host, port] = config.firestoreEmulator.split(":");
  connectFirestoreEmulator(db, host, Number(port));
}
let appCheckToken: (() => Promise<string>) | undefined;
if (config.appCheck?.siteKey) {
  if (config.appCheck.debugToken) {
    (self as unknown as { FIREBASE_APPCHECK_DEBUG_TOKEN: string }).FIREBASE_APPCHECK_DEBUG_TOKEN = config.appCheck.debugToken;
  }
  const appCheck = initializeAppCheck(app, {
    provider: new ReCaptchaEnterpriseProvider(config.appCheck.siteKey),
    isTokenAutoRefreshEnabled: true,
  });
  appCheckToken = async () => (await getToken(appCheck, false)).token;
}
const api = new ChatMemoryClient({
  baseUrl: config.apiBase || location.origin,
  idToken: async () => auth.currentUser?.getIdToken(),
  appCheckToken,
});

let user: User | null = null;
let current: string | null = null; // the open session
let status = "active"; // the open session's, from its document: only an active one takes messages
let found: { session: string; seq: number } | null = null; // the search hit opened last
let sessions: Session[] = [];
let messages: Message[] = [];
let leaf: number | null = null; // the active branch's last message, from the session document
// When the session was written as leaf shows it (ms): a switch of branch
// shows what the server answered at once, and a snapshot older than that
// answer (a listener that has not caught up) does not take it back. (The
// servers' clocks agree far more closely than two actions of a user.)
let leafAt = 0;
let historyFrom = 0; // the first seq still stored: message retention deleted those before it
// The reply this tab is streaming, and the one it follows through the
// session's draft (streamed by another tab, or by this page before a reload).
let streaming: { text: string; replyId?: string } | null = null;
let following: { text: string; replyId: string } | null = null;
// Stop was pressed: the reply on screen stops growing at once, and says
// "Stopping…" until the server has stopped it.
let stopping = false;
let title = ""; // the open chat's title, from its document (it may be outside the list's filter)
let tapped: number | null = null; // the message whose actions a tap showed (phones show none until then)
let stopSessions: Unsubscribe | null = null;
let stopMessages: Unsubscribe | null = null;
let stopDraft: Unsubscribe | null = null;
let stopSession: Unsubscribe | null = null;
const settings = setupSettings(api, () => current);
const layout = setupLayout();
// The chat open last, per user, reopened after a reload.
const lastChat = (uid: string) => `chat-memory.last.${uid}`;

// ---- Sign in ----
$("auth").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  clearError();
  try {
    await signInWithEmailAndPassword(auth, $<HTMLInputElement>("email").value, $<HTMLInputElement>("password").value);
  } catch (e) { showError(e); }
});
$("signup").addEventListener("click", async () => {
  clearError();
  try {
    await createUserWithEmailAndPassword(auth, $<HTMLInputElement>("email").value, $<HTMLInputElement>("password").value);
  } catch (e) { showError(e); }
});
$("signout").addEventListener("click", () => signOut(auth));
// The buttons work from now on (until now a click would have been lost).
$<HTMLButtonElement>("signin").disabled = $<HTMLButtonElement>("signup").disabled = false;

onAuthStateChanged(auth, (u) => {
  user = u;
  $("auth").hidden = !!u;
  $("app").hidden = $("account").hidden = !u;
  $("who").textContent = u?.email ?? "";
  openSession(u ? localStorage.getItem(lastChat(u.uid)) : null);
  watchSessions();
  void showUsage(api, !!user);
});


// ---- The session list, live from Firestore ----
function watchSessions() {
  stopSessions?.();
  stopSessions = null;
  sessions = [];
  renderSessions();
  if (!user) return;
  const q = query(
    collection(db, "chat_sessions"),
    where("userId", "==", user.uid), // the rules require this constraint
    where("status", "==", $<HTMLSelectElement>("filter").value),
    orderBy("updatedAt", "desc"),
    limit(50),
  );
  stopSessions = onSnapshot(q, (snap) => {
    sessions = snap.docs.map((d) => ({ id: d.id, title: d.get("title"), status: d.get("status"),
      updatedAt: (d.get("updatedAt") as Timestamp | undefined)?.toMillis() ?? Date.now() }));
    renderSessions();
  }, showError);
}
$("filter").addEventListener("change", watchSessions);

function renderSessions() {
  const list = $("sessions");
  const filter = $<HTMLSelectElement>("filter").value;
  const none = { active: "No chats yet: write a message to start one.", archived: "No archived chats.", deleted: "No deleted chats: a deleted chat stays here for 30 days." }[filter] ?? "";
  let group = "";
  if (!sessions.length) list.replaceChildren(el("li", { className: "none" }, none));
  else list.replaceChildren(...sessions.flatMap((s) => {
    const g = dateGroup(s.updatedAt);
    const heading = g !== group ? [el("li", { className: "group", role: "presentation" }, g)] : [];
    group = g;
    const li = el("li", { className: s.id === current ? "current" : "" });
    li.dataset.id = s.id;
    const name = el("span", { className: "name", title: "Open" }, s.title);
    name.addEventListener("click", () => { openSession(s.id); layout.closeChats(); });
    const actions = el("div", { className: "row" });
    const action = (label: string, fn: () => Promise<unknown>) => {
      const b = el("button", { className: label === "Delete" ? "quiet danger" : "quiet", type: "button" }, label);
      b.addEventListener("click", async () => { clearError(); try { await fn(); } catch (e) { showError(e); } });
      actions.append(b);
    };
    // Rename: at most 200 characters (the server's limit); a refusal shows
    // in the dialog, which keeps the text typed.
    action("Rename", () => askText("Rename the chat", s.title, "Save", { max: MAX_TITLE, submit: async (v) => {
      const title = v.trim();
      if (title && title !== s.title) await api.updateSession(s.id, { title });
    } }));
    if (s.status === "active") action("Archive", () => api.archiveSession(s.id));
    else action("Restore", () => api.restoreSession(s.id));
    if (s.status !== "deleted") action("Delete", async () => {
      if (await confirmAction(`Delete "${s.title}"?`, "You can restore it from Deleted for 30 days; then it is gone for good.", "Delete")) {
        await api.deleteSession(s.id);
      }
    });
    li.append(name, actions);
    return [...heading, li];
  }));
  $("title").textContent = current ? sessions.find((s) => s.id === current)?.title ?? title : "New chat";
}
const MAX_TITLE = 200;


// ---- A session's messages, live from Firestore ----
// openSession shows session id (none: a new chat); from a search hit, the
// hit stays outlined, else none is.
function openSession(id: string | null, fromHit = false) {
  if (!fromHit) {
    found = null;
    $("hits").querySelector("li.none")?.remove(); // "Nothing found." was about the last search
  }
  current = id;
  if (user && id) localStorage.setItem(lastChat(user.uid), id);
  else if (user) localStorage.removeItem(lastChat(user.uid));
  status = "active";
  title = "";
  stopping = false;
  tapped = null;
  $("settings-open").hidden = !id;
  settings.close();
  stopMessages?.();
  stopDraft?.();
  stopSession?.();
  stopMessages = stopDraft = stopSession = null;
  messages = [];
  leaf = null;
  leafAt = 0;
  historyFrom = 0;
  following = null;
  showSessionUsage();
  showStatus();
  renderSessions();
  if (!id || !user) return;
  const q = query(collection(db, "chat_sessions", id, "messages"), orderBy("seq"), limitToLast(200));
  stopMessages = onSnapshot(q, (snap) => {
    messages = snap.docs.map((d) => messageOf(d.id, d.data()));
    renderMessages();
  }, showError);
  // The active branch: its leaf is in the session document once it branched.
  stopSession = onSnapshot(doc(db, "chat_sessions", id), (snap) => {
    if (!snap.exists()) { // gone for good (or never this user's): a new chat instead
      if (current === id) openSession(null);
      return;
    }
    title = snap.get("title") ?? "";
    settings.show({ instructions: snap.get("instructions") ?? "", model: snap.get("model") ?? "" });
    const at = (snap.get("updatedAt") as Timestamp | undefined)?.toMillis() ?? 0;
    if (at >= leafAt) [leaf, leafAt] = [snap.get("branches.leaf") ?? null, at];
    status = snap.get("status") ?? "active";
    showStatus();
    historyFrom = snap.get("historyFrom") ?? 0;
    showSessionUsage(snap.get("usage"));
    renderSessions();
    renderMessages();
  }, showError);
  // A reply in progress, as its draft shows it: picked up after a reload.
  stopDraft = onSnapshot(doc(db, "chat_sessions", id, "context", "draft"), (snap) => {
    if (!snap.exists()) [following, stopping] = [null, streaming ? stopping : false];
    else if (!stopping || !following) following = { text: snap.get("text") ?? "", replyId: snap.get("replyId") };
    renderMessages();
  }, showError);
}
$("new").addEventListener("click", () => { openSession(null); layout.closeChats(); $("input").focus(); });

// showStatus makes the open chat writable only while it is active, and
// says why it is not (with a way back).
function showStatus() {
  const readOnly = !!current && status !== "active";
  $("readonly").hidden = !readOnly;
  $("readonly-text").textContent = status === "archived"
    ? "This chat is archived: restore it to continue it."
    : "This chat is deleted: restore it within 30 days to keep it, or it goes for good.";
  const input = $<HTMLTextAreaElement>("input");
  input.disabled = readOnly;
  input.placeholder = readOnly ? "This chat is read-only" : "Message";
  $<HTMLButtonElement>("send").disabled = readOnly || !!streaming;
  $("settings-open").hidden = !current || readOnly;
  if (readOnly) settings.close();
  renderMessages();
}
$("readonly-restore").addEventListener("click", async () => {
  if (!current) return;
  clearError();
  try { await api.restoreSession(current); } catch (e) { showError(e); }
});

// switchBranch shows the branch through message seq of session id, as the
// server answers it, without waiting for the session's listener.
async function switchBranch(id: string, seq: number) {
  const s = await api.switchBranch(id, seq);
  const at = Date.parse(s.updatedAt);
  if (current !== id || at < leafAt) return;
  [leaf, leafAt] = [s.branches?.leaf ?? null, at];
  renderMessages();
}

// branchTurn streams a turn that branches (a regeneration or an edit).
async function branchTurn(fork: Fork, text = "") {
  if (!current || streaming) return;
  clearError();
  await send(text, fork);
}


function renderMessages() {
  // The user's words as typed; replies as Markdown, built as DOM nodes, so
  // no HTML a model writes is ever parsed.
  const bubble = (className: string, text: string) => {
    const li = el("li", { className });
    const body = el("div", { className: "body" });
    if (className.startsWith("assistant")) body.append(renderMarkdown(text));
    else body.textContent = text;
    li.append(body);
    return li;
  };
  const button = (className: string, label: string, title: string, fn: () => Promise<unknown>) => {
    const b = el("button", { className: `quiet ${className}`, type: "button", title }, label) as HTMLButtonElement;
    b.disabled = !!streaming || status !== "active";
    b.addEventListener("click", async () => { clearError(); try { await fn(); } catch (e) { showError(e); } });
    return b;
  };
  // Tool calls and their results (an app's tools, run by the app), collapsed.
  const toolDetails = (m: Message) => {
    const calls = m.toolCalls ?? [];
    const d = el("details", { className: "tool" });
    d.append(
      el("summary", {}, m.role === "tool" ? "Tool result" : `Called ${calls.map((c) => c.function?.name).join(", ")}`),
      el("pre", {}, m.role === "tool" ? m.content : calls.map((c) => `${c.function?.name}(${c.function?.arguments})`).join("\n")),
    );
    return d;
  };
  const { path, versions } = activeBranch(messages, leaf);
  const items = path
    .filter((m) => m.role === "user" || m.role === "tool" || (m.role === "assistant" && (m.content || m.toolCalls?.length)))
    .map((m) => {
      if (m.role === "tool" || !m.content) {
        const li = el("li", { className: "tool" });
        li.dataset.seq = String(m.seq);
        li.append(toolDetails(m));
        return li;
      }
      const li = bubble(m.role, m.content);
      if (m.toolCalls?.length) li.append(toolDetails(m));
      li.dataset.seq = String(m.seq);
      // A tap shows this message's actions (a phone shows them only then).
      if (tapped === m.seq) li.classList.add("tapped");
      li.addEventListener("click", (ev) => {
        if ((ev.target as Element).closest("button, a, details")) return;
        tapped = m.seq;
        for (const o of $("messages").querySelectorAll("li.tapped")) o.classList.remove("tapped");
        li.classList.add("tapped");
      });
      const tools = el("div", { className: "tools" });
      const sibs = versions.get(parentOf(m)) ?? [m.seq];
      if (sibs.length > 1 && current) {
        const i = sibs.indexOf(m.seq);
        const id = current;
        const prev = button("prev", "‹", "Previous version", () => switchBranch(id, sibs[i - 1]));
        const next = button("next", "›", "Next version", () => switchBranch(id, sibs[i + 1]));
        prev.disabled ||= i === 0;
        next.disabled ||= i === sibs.length - 1;
        tools.append(prev, el("span", { className: "version" }, `${i + 1} / ${sibs.length}`), next);
      }
      const copy = el("button", { className: "quiet copy", type: "button", title: "Copy the message" }, "Copy");
      copy.addEventListener("click", async () => {
        try { await navigator.clipboard.writeText(m.content); toast("Copied."); } catch (e) { showError(e); }
      });
      tools.append(copy);
      if (m.role === "assistant") tools.append(button("regenerate", "Regenerate", "Answer again", () => branchTurn({ regenerate: m.id })));
      if (m.role === "assistant" && current) {
        // Thumbs: pressed shows the rating held; pressing it again withdraws it.
        const id = current;
        for (const [rating, title, turn] of [["up", "Good reply", 0], ["down", "Bad reply", 180]] as const) {
          const on = m.feedback?.rating === rating;
          const b = button(`rate-${rating}`, "", title, () =>
            on ? api.deleteFeedback(id, m.id) : api.setFeedback(id, m.id, { rating }));
          b.setAttribute("aria-label", title);
          b.setAttribute("aria-pressed", String(on));
          b.append(icon(THUMB, turn));
          tools.append(b);
        }
      }
      if (m.role === "user") tools.append(button("edit", "Edit", "Edit and send again", async () => {
        const text = (await askText("Edit your message", m.content, "Send"))?.trim();
        if (text && text !== m.content) await branchTurn({ edit: m.id }, text);
      }));
      li.append(tools);
      return li;
    });
  if (historyFrom > 0 && path.length && parentOf(path[0]) >= 0 && parentOf(path[0]) < historyFrom) { // its parent was deleted, not merely not loaded
    items.unshift(el("li", { className: "none retention" }, "Earlier messages of this chat were deleted after their retention period."));
  }
  if (streaming) items.push(bubble("assistant streaming", streaming.text || "…"));
  else if (following && !messages.some((m) => m.id === following!.replyId)) {
    items.push(bubble("assistant streaming following", following.text || "…"));
  }
  if (!current && !streaming) items.push(emptyChat());
  $("messages").replaceChildren(...items);
  $("stop").hidden = !(streaming?.replyId || following);
  $("stop").textContent = stopping ? "Stopping…" : "Stop";
  $<HTMLButtonElement>("stop").disabled = stopping;
  for (const b of $("messages").querySelectorAll("li.streaming")) b.classList.toggle("stopping", stopping);
  const hit = found && found.session === current ? $("messages").querySelector(`li[data-seq="${found.seq}"]`) : null;
  if (hit) {
    hit.classList.add("found");
    hit.scrollIntoView({ block: "center" });
  } else {
    $("messages").lastElementChild?.scrollIntoView({ block: "end" });
  }
}


// ---- Search: the user's own conversations, by meaning and exact phrase ----

// A cleared search box clears what it found.
$("q").addEventListener("input", () => {
  if ($<HTMLInputElement>("q").value.trim() !== "") return;
  $("hits").replaceChildren();
  found = null;
  renderMessages();
});
$("search").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  clearError();
  const q = $<HTMLInputElement>("q").value.trim();
  if (!q) return;
  try {
    const { results } = await api.search({ q, limit: 10 });
    $("hits").replaceChildren(...(results.length ? results.map((r) => {
      const li = el("li");
      const open = el("button", { className: "quiet hit", type: "button", title: "Open the conversation here" });
      open.append(el("span", { className: "name" }, r.sessionTitle), el("span", { className: "snippet" }, r.snippet));
      open.addEventListener("click", () => {
        found = { session: r.sessionId, seq: r.seq };
        openSession(r.sessionId, true);
      });
      li.append(open);
      return li;
    }) : [el("li", { className: "none" }, "Nothing found.")]));
  } catch (e) { showError(e); }
});

// ---- Sending: the reply is rendered as it streams ----
async function send(text: string, fork: Fork = {}) {
  $<HTMLButtonElement>("send").disabled = true;
  const reply: { text: string; replyId?: string } = { text: "" };
  streaming = reply;
  renderMessages();
  try {
    const turn = api.chat({ sessionId: current ?? undefined, message: fork.regenerate ? undefined : text, ...fork });
    for await (const ev of turn) {
      if (ev.type === "session") {
        if (ev.sessionId !== current) openSession(ev.sessionId);
        reply.replyId = ev.replyId;
      } else if (ev.type === "delta" && !stopping) { // stopped: what came after the click is not shown
        reply.text += ev.text;
      }
      renderMessages();
    }
  } finally {
    streaming = null;
    stopping = false;
    renderMessages();
    $<HTMLButtonElement>("send").disabled = status !== "active";
    void showUsage(api, !!user);
  }
}

$("composer").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const input = $<HTMLTextAreaElement>("input");
  const text = input.value.trim();
  if (!text || streaming) return; // one reply at a time: the text waits in the box
  clearError();
  input.value = "";
  try {
    await send(text);
  } catch (e) {
    showError(e);
    if (!current) input.value = text;
  }
});
$("stop").addEventListener("click", async () => {
  const replyId = streaming?.replyId ?? following?.replyId;
  if (!current || !replyId || stopping) return;
  clearError();
  stopping = true; // the screen stops now; the server's stop follows
  renderMessages();
  try { await api.stopReply(current, replyId); } catch (e) { stopping = false; renderMessages(); showError(e); }
});
$("input").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
    ev.preventDefault();
    if (!streaming) $<HTMLFormElement>("composer").requestSubmit();
  }
});



setupMemory(api);
setupExport(api);

// The command palette: commands, the listed chats by title, and the search.
setupPalette({
  commands: () => [
    { label: "New chat", detail: "Ctrl+Shift+O", run: () => $("new").click() },
    { label: "Memory", detail: "What the assistant remembers", run: () => $("memory-open").click() },
    { label: "Export my data", run: () => $("export").click() },
  ],
  chats: () => sessions,
  openChat: (id) => openSession(id),
  searchMessages: async (q) => (await api.search({ q, limit: 10 })).results.map((r) => ({
    label: r.sessionTitle, detail: r.snippet,
    run: () => { found = { session: r.sessionId, seq: r.seq }; openSession(r.sessionId, true); },
  })),
});
