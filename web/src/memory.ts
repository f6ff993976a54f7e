// The memory drawer: what the assistant remembers about the user (profile,
// history, facts), to read, correct and forget. It opens over the page
// and closes with its Close button, Escape, or Memory again.
import type { ChatMemoryClient, MemoryView } from "../client";
import { $, askText, clearError, confirmAction, el, showError } from "./ui";

export function setupMemory(api: ChatMemoryClient) {
  // offline: the server answers with the stand-in model, which learns nothing.
  let offline = false;
  const empty = (text: string) => el("li", { className: "none" }, text);

  async function load(view?: MemoryView) {
    const m = view ?? (await api.getMemory());
    $<HTMLInputElement>("memory-enabled").checked = m.enabled;
    const why = !m.enabled ? " Memory is off: turn it on above to let the assistant learn."
      : offline ? " The server runs the offline stand-in model, which learns nothing: set OPENAI_API_KEY (or OPENAI_BASE_URL) for a model that does."
      : " The assistant learns from your chats after a few messages.";
    const profile = (["work", "personal", "focus"] as const)
      .filter((k) => m.profile?.[k]?.text)
      .map((k) => el("li", {}, `${k}: ${m.profile[k]!.text}`));
    $("profile").replaceChildren(...(profile.length ? profile : [empty("Nothing yet." + why)]));
    const tiers = [["recent", "Last 30 days"], ["months", "1 to 6 months ago"], ["earlier", "Earlier"]] as const;
    const history = tiers.filter(([k]) => m.history?.[k]?.text).map(([k, label]) => {
      const tier = m.history[k];
      const li = el("li", {}, `${label}: ${tier.text}`);
      li.dataset.tier = k;
      const edit = el("button", { className: "quiet", type: "button" }, "Edit");
      edit.addEventListener("click", async () => {
        const text = await askText(`${label}, in your own words (the daily roll-up then leaves it as you wrote it)`, tier.text);
        if (text === null || text.trim() === "") return;
        clearError();
        try { await load(await api.updateHistory({ [k]: text })); } catch (e) { showError(e); }
      });
      const forget = el("button", { className: "quiet", type: "button" }, "Forget");
      forget.addEventListener("click", async () => {
        clearError();
        try { await load(await api.updateHistory({ [k]: "" })); } catch (e) { showError(e); }
      });
      li.append(" ", edit, " ", forget);
      return li;
    });
    $("history").replaceChildren(...(history.length ? history : [empty("Nothing yet: the daily roll-up writes it from your chats.")]));
    const facts = (m.facts ?? []).map((f) => {
      const li = el("li", {}, f.content);
      li.dataset.id = f.id;
      const forget = el("button", { className: "quiet", type: "button" }, "Forget");
      forget.addEventListener("click", async () => {
        clearError();
        try { await api.forgetFact(f.id!); await load(); } catch (e) { showError(e); }
      });
      li.append(" ", forget);
      return li;
    });
    $("facts").replaceChildren(...(facts.length ? facts : [empty("No facts yet." + why)]));
  }

  const panel = $("memory");
  const close = () => {
    panel.hidden = true;
    $("memory-open").setAttribute("aria-expanded", "false");
  };
  $("memory-open").addEventListener("click", async () => {
    if (!panel.hidden) return close();
    clearError();
    try {
      offline = (await api.listModels()).default === "offline-stand-in";
      await load();
    } catch (e) {
      showError(e);
      return;
    }
    panel.hidden = false;
    $("memory-open").setAttribute("aria-expanded", "true");
    $("memory-close").focus();
  });
  $("memory-close").addEventListener("click", close);
  document.addEventListener("keydown", (e) => { if (e.key === "Escape" && !panel.hidden && !$<HTMLDialogElement>("dialog").open) close(); });
  $("memory-enabled").addEventListener("change", async () => {
    clearError();
    try {
      await load(await api.setMemory($<HTMLInputElement>("memory-enabled").checked));
    } catch (e) { showError(e); }
  });
  $("memory-forget-all").addEventListener("click", async () => {
    if (!await confirmAction("Forget everything?", "Everything the assistant remembers about you goes, for good.", "Forget everything")) return;
    clearError();
    try { await api.forgetAll(); await load(); } catch (e) { showError(e); }
  });
  return { close };
}
