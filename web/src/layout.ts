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
  return { closeChats };
}
