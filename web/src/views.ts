// Parts of the chat view that hold no state of their own: usage lines,
// the list's date groups, a message document read, the active branch, a
// new chat's empty state, and Export.
import type { ChatMemoryClient, Message } from "../client";
import { $, clearError, el, showError } from "./ui";

// The day's spend against the limit, and each chat's totals.
export async function showUsage(api: ChatMemoryClient, signedIn: boolean) {
  $("usage").textContent = "";
  if (!signedIn) return;
  try {
    const u = await api.usage();
    const n = (x: number) => x.toLocaleString("en");
    $("usage").textContent = u.tokens.limit > 0
      ? `Today: ${n(u.tokens.used)} of ${n(u.tokens.limit)} tokens`
      : `Today: ${n(u.tokens.used)} tokens`;
  } catch (e) { showError(e); }
}

export function showSessionUsage(u?: { promptTokens: number; completionTokens: number; turns: number; lastModel?: string }) {
  $("session-usage").textContent = u && u.turns > 0
    ? `This chat: ${u.turns} ${u.turns === 1 ? "reply" : "replies"}, ${(u.promptTokens + u.completionTokens).toLocaleString("en")} tokens` +
      (u.lastModel ? ` (${u.lastModel})` : "")
    : "";
}

// dateGroup names the group of the list a chat last changed at (ms) falls in.
export function dateGroup(at: number): string {
  const today = new Date().setHours(0, 0, 0, 0);
  const day = 86_400_000;
  if (at >= today) return "Today";
  if (at >= today - day) return "Yesterday";
  if (at >= today - 7 * day) return "Previous 7 days";
  if (at >= today - 30 * day) return "Previous 30 days";
  return "Older";
}

// A message document as the API shapes it: stored tool calls keep their
// function's name and arguments flat.
type StoredCall = { id: string; type: string; name: string; arguments: string };
export function messageOf(id: string, data: Record<string, unknown>): Message {
  const m = { id, ...(data as Omit<Message, "id">) };
  const calls = data.toolCalls as StoredCall[] | undefined;
  if (calls?.length) m.toolCalls = calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }));
  return m;
}

export const parentOf = (m: Message) => m.parentSeq ?? m.seq - 1;

// activeBranch is the path from the first message to the active leaf, and
// for each message the versions beside it (those with its parent); leaf
// is the session document's (none: the last message).
export function activeBranch(messages: Message[], leaf: number | null): { path: Message[]; versions: Map<number, number[]> } {
  const bySeq = new Map(messages.map((m) => [m.seq, m]));
  const versions = new Map<number, number[]>();
  for (const m of messages) versions.set(parentOf(m), [...(versions.get(parentOf(m)) ?? []), m.seq]);
  const end = leaf !== null && bySeq.has(leaf) ? leaf : Math.max(-1, ...bySeq.keys());
  const path: Message[] = [];
  for (let m = bySeq.get(end); m; m = bySeq.get(parentOf(m))) path.push(m);
  return { path: path.reverse(), versions };
}

// emptyChat is a new chat's empty state: what to ask, to start from.
const SUGGESTIONS = ["Plan a weekend in Lisbon", "Explain Firestore security rules simply", "Write a haiku about memory", "Help me name a side project"];
export function emptyChat() {
  const li = el("li", { className: "empty" });
  const list = el("div", { className: "suggestions" });
  for (const text of SUGGESTIONS) {
    const b = el("button", { className: "quiet suggestion", type: "button" }, text);
    b.addEventListener("click", () => {
      $<HTMLTextAreaElement>("input").value = text;
      $<HTMLFormElement>("composer").requestSubmit();
    });
    list.append(b);
  }
  li.append(el("h3", {}, "What can I help with?"), el("p", {}, "Your chats are kept, searchable, and remembered across sessions. Try one of these:"), list);
  return li;
}

// setupExport downloads the user's data from Export.
export function setupExport(api: ChatMemoryClient) {
  $("export").addEventListener("click", async () => {
    clearError();
    try {
      const blob = await api.exportAccount();
      const a = el("a", { href: URL.createObjectURL(blob), download: "chat-export.json" }) as HTMLAnchorElement;
      a.click();
      URL.revokeObjectURL(a.href);
    } catch (e) { showError(e); }
  });
}
