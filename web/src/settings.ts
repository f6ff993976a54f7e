// A chat's settings panel: its own instructions and its model, saved with
// PATCH /sessions/{id}. It opens from the chat's header and closes with
// Close, Escape or a save.
import type { ChatMemoryClient } from "../client";
import { $, clearError, el, showError, toast } from "./ui";

export type Settings = { instructions: string; model: string };

// setupSettings wires the panel for the chat current() names; it returns
// close, and show, which the chat's listener calls with what is stored.
export function setupSettings(api: ChatMemoryClient, current: () => string | null) {
  let stored: Settings = { instructions: "", model: "" };

  function close() {
    $("settings").hidden = true;
    $("settings-open").setAttribute("aria-expanded", "false");
  }

  $("settings-open").addEventListener("click", async () => {
    clearError();
    const select = $<HTMLSelectElement>("model");
    try {
      const { models } = await api.listModels();
      select.replaceChildren(...models.map((m) => el("option", { value: m.name }, `${m.name} (${m.contextWindow.toLocaleString()} tokens)`)));
    } catch (e) {
      showError(e);
      return;
    }
    select.value = stored.model;
    $<HTMLTextAreaElement>("instructions").value = stored.instructions;
    $("settings").hidden = false;
    $("settings-open").setAttribute("aria-expanded", "true");
    $("instructions").focus();
  });
  $("settings-close").addEventListener("click", close);
  $("settings").addEventListener("keydown", (e) => { if ((e as KeyboardEvent).key === "Escape") close(); });
  $("settings").addEventListener("submit", async (e) => {
    e.preventDefault();
    const id = current();
    if (!id) return;
    clearError();
    try {
      await api.updateSession(id, { instructions: $<HTMLTextAreaElement>("instructions").value, model: $<HTMLSelectElement>("model").value });
      close();
      toast("Settings saved: they apply from the next message.");
    } catch (err) {
      showError(err);
    }
  });

  return { close, show: (s: Settings) => { stored = s; } };
}
