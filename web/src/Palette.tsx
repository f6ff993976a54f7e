// The command palette (Ctrl/Cmd-K): one box to open a chat by its title,
// run a command (new chat, memory, export) or search the messages of every
// chat by meaning; arrows move, Enter picks, Escape closes.
import { useEffect, useLayoutEffect, useRef, useState } from "react";
import { messageOf } from "./ui";

export type Pick = { label: string; detail?: string; run: () => unknown };

type Props = {
  open: boolean;
  close: () => void;
  commands: Pick[];
  chats: { id: string; title: string }[];
  openChat: (id: string) => void;
  // searchMessages answers a query with hits that open their message.
  searchMessages: (q: string) => Promise<Pick[]>;
};

export function Palette(p: Props) {
  const ref = useRef<HTMLDialogElement>(null);
  const [q, setQ] = useState("");
  const [found, setFound] = useState<{ picks: Pick[]; empty: string } | null>(null); // a search's results
  const [at, setAt] = useState(0);
  // Before the browser handles another event (a layout effect): the box
  // has focus by the time the next key arrives.
  useLayoutEffect(() => {
    const d = ref.current!;
    if (p.open && !d.open) {
      setQ("");
      setFound(null);
      setAt(0);
      d.showModal();
      document.getElementById("palette-q")?.focus();
    } else if (!p.open && d.open) d.close();
  }, [p.open]);
  const has = (s: string) => s.toLowerCase().includes(q.trim().toLowerCase());
  const searchFor = async (text: string) => {
    setFound({ picks: [], empty: "Searching…" });
    try {
      setFound({ picks: await p.searchMessages(text), empty: "Nothing found." });
    } catch (e) {
      setFound({ picks: [], empty: messageOf(e) });
    }
    setAt(0);
    return "stay";
  };
  const picks: Pick[] = found ? found.picks : [
    ...p.commands.filter((c) => has(c.label)),
    ...p.chats.filter((c) => has(c.title)).map((c) => ({ label: c.title, detail: "Chat", run: () => p.openChat(c.id) })),
    ...(q.trim() ? [{ label: `Search your messages for “${q.trim()}”`, run: () => searchFor(q.trim()) }] : []),
  ];
  const choose = async (i: number) => {
    const pick = picks[i];
    if (pick && (await pick.run()) !== "stay") p.close();
  };
  useEffect(() => { document.getElementById(`pick-${at}`)?.scrollIntoView({ block: "nearest" }); }, [at]);
  return (
    <dialog id="palette" ref={ref} aria-label="Search chats and commands" onClose={p.close} onClick={(e) => { if (e.target === ref.current) p.close(); }}>
      {p.open && <input id="palette-q" type="search" role="combobox" aria-controls="palette-list" aria-expanded="true" autoFocus
        placeholder="Open a chat, run a command, or search your messages" aria-label="Search chats and commands" maxLength={500} autoComplete="off"
        aria-activedescendant={picks.length ? `pick-${at}` : ""} value={q}
        onChange={(e) => { setQ(e.target.value); setFound(null); setAt(0); }}
        onKeyDown={(e) => {
          if (e.key === "ArrowDown" || e.key === "ArrowUp") {
            e.preventDefault();
            if (picks.length) setAt((at + (e.key === "ArrowDown" ? 1 : picks.length - 1)) % picks.length);
          } else if (e.key === "Enter") {
            e.preventDefault();
            void choose(at);
          }
        }} />}
      <ul id="palette-list" role="listbox" aria-label="Results">
        {picks.length ? picks.map((pick, i) => (
          <li key={i} id={`pick-${i}`} className="pick" role="option" aria-selected={i === at} onClick={() => void choose(i)}>
            <span className="label">{pick.label}</span>
            {pick.detail && <span className="detail">{pick.detail}</span>}
          </li>
        )) : <li className="none">{found?.empty ?? "Nothing matches."}</li>}
      </ul>
      <p className="hint">↑↓ to move · Enter to open · Esc to close</p>
    </dialog>
  );
}
