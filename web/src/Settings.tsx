// A chat's settings panel: its own instructions and its model, saved with
// PATCH /sessions/{id}. It opens over the page from the chat's header (it
// never squeezes the conversation) and closes with Close, Escape or a save.
import { useEffect, useState } from "react";
import type { Backend } from "./backend";
import { useUI } from "./ui";

type Model = { name: string; contextWindow: number };

export function Settings({ backend, sessionId, stored, close }: { backend: Backend; sessionId: string; stored: { instructions: string; model: string }; close: () => void }) {
  const ui = useUI();
  const [models, setModels] = useState<Model[] | null>(null);
  const [instructions, setInstructions] = useState(stored.instructions);
  const [model, setModel] = useState(stored.model);
  useEffect(() => {
    void ui.guard(async () => setModels((await backend.api.listModels()).models));
  }, [backend]);
  useEffect(() => { setInstructions(stored.instructions); setModel(stored.model); }, [stored.instructions, stored.model]);
  useEffect(() => { if (models) document.getElementById("instructions")?.focus(); }, [models]);
  const save = () => ui.guard(async () => {
    await backend.api.updateSession(sessionId, { instructions, model });
    close();
    ui.toast("Settings saved: they apply from the next message.");
  });
  return (
    <form id="settings" aria-label="Chat settings" hidden={!models} onSubmit={(e) => { e.preventDefault(); void save(); }}
      onKeyDown={(e) => { if (e.key === "Escape") close(); }}>
      <label>Instructions for this chat <span className="quiet">(sent after the server's own, from the next message)</span>
        <textarea id="instructions" rows={3} maxLength={100000} placeholder="e.g. Answer briefly, in French." value={instructions} onChange={(e) => setInstructions(e.target.value)} />
      </label>
      <label>Model <select id="model" value={model} onChange={(e) => setModel(e.target.value)}>
        {models?.map((m) => <option key={m.name} value={m.name}>{m.name} ({m.contextWindow.toLocaleString()} tokens)</option>)}
      </select></label>
      <div className="row">
        <button id="settings-save" type="submit">Save</button>
        <button id="settings-close" className="quiet" type="button" onClick={close}>Close</button>
      </div>
    </form>
  );
}
