// The page's layout on a phone: the chat list is a drawer, opened by the
// Chats button in the chat's header and closed by choosing a chat, the
// scrim behind it or Escape.
import { $ } from "./ui";

export function setupLayout() {
  const aside = $("chats");
  const openChats = () => {
    aside.classList.add("open");
    $("scrim").hidden = false;
    $("chats-open").setAttribute("aria-expanded", "true");
  };
  const closeChats = () => {
    aside.classList.remove("open");
    $("scrim").hidden = true;
    $("chats-open").setAttribute("aria-expanded", "false");
  };
  $("chats-open").addEventListener("click", openChats);
  $("chats-close").addEventListener("click", closeChats);
  $("scrim").addEventListener("click", closeChats);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && aside.classList.contains("open")) closeChats();
  });
  // Shortcuts: Ctrl/Cmd-Shift-O starts a new chat; Escape in the composer
  // stops the reply streaming (Ctrl/Cmd-K, the command palette: palette.ts).
  document.addEventListener("keydown", (ev) => {
    if ($("app").hidden) return;
    if (ev.key.toLowerCase() === "o" && ev.shiftKey && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      $("new").click();
    } else if (ev.key === "Escape" && ev.target === $("input") && !$("stop").hidden) {
      $("stop").click();
    }
  });
  return { closeChats };
}
