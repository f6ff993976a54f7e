// The command palette (Ctrl/Cmd-K): one box to open a chat by its title,
// run a command (new chat, memory, export) or search the messages of every
// chat by meaning; arrows move, Enter picks, Escape closes.
import { $, el } from "./ui";

export type Pick = { label: string; detail?: string; run: () => unknown };

type Sources = {
  commands: () => Pick[];
  chats: () => { id: string; title: string }[];
  openChat: (id: string) => void;
  // searchMessages answers a query with hits that open their message.
  searchMessages: (q: string) => Promise<Pick[]>;
};

export function setupPalette(src: Sources) {
  const dialog = $<HTMLDialogElement>("palette");
  const input = $<HTMLInputElement>("palette-q");
  const list = $("palette-list");
  let picks: Pick[] = [];
  let at = 0;

  const show = (items: Pick[], empty = "Nothing matches.") => {
    picks = items;
    at = 0;
    list.replaceChildren(...(items.length ? items.map((p, i) => {
      const li = el("li", { className: "pick", role: "option" });
      li.id = `pick-${i}`;
      li.append(el("span", { className: "label" }, p.label));
      if (p.detail) li.append(el("span", { className: "detail" }, p.detail));
      li.addEventListener("click", () => choose(i));
      return li;
    }) : [el("li", { className: "none" }, empty)]));
    mark();
  };
  const mark = () => {
    list.querySelectorAll("li.pick").forEach((li, i) => li.setAttribute("aria-selected", String(i === at)));
    input.setAttribute("aria-activedescendant", picks.length ? `pick-${at}` : "");
    list.querySelector(`#pick-${at}`)?.scrollIntoView({ block: "nearest" });
  };
  const filter = () => {
    const q = input.value.trim();
    const has = (s: string) => s.toLowerCase().includes(q.toLowerCase());
    const search: Pick[] = q ? [{ label: `Search your messages for “${q}”`, run: () => searchFor(q) }] : [];
    const chats = src.chats().filter((c) => has(c.title)).map((c) => ({ label: c.title, detail: "Chat", run: () => src.openChat(c.id) }));
    show([...src.commands().filter((c) => has(c.label)), ...chats, ...search]);
  };
  async function searchFor(q: string) {
    list.replaceChildren(el("li", { className: "none" }, "Searching…"));
    try {
      show(await src.searchMessages(q), "Nothing found.");
    } catch (e) {
      show([], e instanceof Error ? e.message : String(e));
    }
    return "stay";
  }
  async function choose(i: number) {
    const p = picks[i];
    if (!p) return;
    if ((await p.run()) !== "stay") dialog.close();
  }

  input.addEventListener("input", filter);
  input.addEventListener("keydown", (e) => {
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      if (picks.length) at = (at + (e.key === "ArrowDown" ? 1 : picks.length - 1)) % picks.length;
      mark();
    } else if (e.key === "Enter") {
      e.preventDefault();
      void choose(at);
    }
  });
  dialog.addEventListener("click", (e) => { if (e.target === dialog) dialog.close(); }); // the backdrop
  document.addEventListener("keydown", (e) => {
    if (e.key.toLowerCase() !== "k" || !(e.ctrlKey || e.metaKey) || $("app").hidden) return;
    e.preventDefault();
    if (dialog.open) return dialog.close();
    input.value = "";
    filter();
    dialog.showModal();
    input.focus();
  });
}
