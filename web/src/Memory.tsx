// The memory panel: what the assistant remembers about the user (profile,
// history, facts), to read, correct and forget; memory on or off. It
// opens over the page and closes with Close, Escape, or Memory again.
import { useEffect, useState } from "react";
import type { MemoryView } from "../client";
import type { Backend } from "./backend";
import { useUI } from "./ui";

const TIERS = [["recent", "Last 30 days"], ["months", "1 to 6 months ago"], ["earlier", "Earlier"]] as const;

export function Memory({ backend, close }: { backend: Backend; close: () => void }) {
  const ui = useUI();
  const api = backend.api;
  const [m, setM] = useState<MemoryView | null>(null);
  const [offline, setOffline] = useState(false); // the offline stand-in model learns nothing
  useEffect(() => {
    void ui.guard(async () => {
      setOffline((await api.listModels()).default === "offline-stand-in");
      setM(await api.getMemory());
    });
    document.getElementById("memory-close")?.focus();
  }, [api]);
  const load = async (view?: MemoryView) => setM(view ?? (await api.getMemory()));
  const why = !m?.enabled ? " Memory is off: turn it on above to let the assistant learn."
    : offline ? " The server runs the offline stand-in model, which learns nothing: set OPENAI_API_KEY (or OPENAI_BASE_URL) for a model that does."
    : " The assistant learns from your chats after a few messages.";
  const profile = (["work", "personal", "focus"] as const).filter((k) => m?.profile?.[k]?.text);
  const history = TIERS.filter(([k]) => m?.history?.[k]?.text);
  const editTier = async (k: string, label: string, text: string) => {
    const t = await ui.askText(`${label}, in your own words (the daily roll-up then leaves it as you wrote it)`, text);
    if (t !== null && t.trim() !== "") await load(await api.updateHistory({ [k]: t }));
  };
  const forgetAll = async () => {
    if (await ui.confirm("Forget everything?", "Everything the assistant remembers about you goes, for good.", "Forget everything")) {
      await api.forgetAll();
      await load();
    }
  };
  return (
    <section id="memory" aria-label="Long-term memory" hidden={!m}
      onKeyDown={(e) => { if (e.key === "Escape" && !(document.getElementById("dialog") as HTMLDialogElement).open) close(); }}>
      <div className="row between">
        <h2>What the assistant remembers about you</h2>
        <button id="memory-close" className="quiet" type="button" onClick={close}>Close</button>
      </div>
      <label><input id="memory-enabled" type="checkbox" checked={!!m?.enabled}
        onChange={(e) => void ui.guard(async () => load(await api.setMemory(e.target.checked)))} /> Remember things across chats</label>
      <h3>Profile</h3>
      <ul id="profile">
        {profile.length ? profile.map((k) => <li key={k}>{k}: {m!.profile[k]!.text}</li>) : <li className="none">Nothing yet.{why}</li>}
      </ul>
      <h3>History</h3>
      <ul id="history">
        {history.length ? history.map(([k, label]) => (
          <li key={k} data-tier={k}>{label}: {m!.history[k].text}{" "}
            <button className="quiet" type="button" onClick={() => void ui.guard(() => editTier(k, label, m!.history[k].text))}>Edit</button>{" "}
            <button className="quiet" type="button" onClick={() => void ui.guard(async () => load(await api.updateHistory({ [k]: "" })))}>Forget</button>
          </li>
        )) : <li className="none">Nothing yet: the daily roll-up writes it from your chats.</li>}
      </ul>
      <h3>Facts</h3>
      <ul id="facts">
        {m?.facts?.length ? m.facts.map((f) => (
          <li key={f.id} data-id={f.id}>{f.content}{" "}
            <button className="quiet" type="button" onClick={() => void ui.guard(async () => { await api.forgetFact(f.id!); await load(); })}>Forget</button>
          </li>
        )) : <li className="none">No facts yet.{why}</li>}
      </ul>
      <button id="memory-forget-all" className="danger" type="button" onClick={() => void ui.guard(forgetAll)}>Forget everything</button>
    </section>
  );
}
