// The page's small helpers: elements, the error banner, inline dialogs
// (instead of prompt and confirm) and icons with text alternatives.
import { ApiError } from "../client";

export const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

export const el = (tag: string, props: Record<string, string> = {}, text = "") => {
  const e = document.createElement(tag);
  Object.assign(e, props);
  if (text) e.textContent = text;
  return e;
};

// Friendly words for Firebase Auth's codes; anything else as it came.
const authMessages: Record<string, string> = {
  "auth/weak-password": "Choose a password of at least 6 characters.",
  "auth/email-already-in-use": "An account with this email exists already: sign in instead.",
  "auth/invalid-credential": "Wrong email or password.",
  "auth/wrong-password": "Wrong email or password.",
  "auth/user-not-found": "No account with this email: create one.",
  "auth/invalid-email": "Enter a valid email address.",
  "auth/missing-password": "Enter your password.",
  "auth/too-many-requests": "Too many attempts: wait a minute and try again.",
  "auth/network-request-failed": "The sign-in service cannot be reached: check your connection.",
};

export function messageOf(e: unknown): string {
  const code = (e as { code?: unknown })?.code;
  if (typeof code === "string" && code.startsWith("auth/")) return authMessages[code] ?? "Signing in failed. Try again.";
  return e instanceof ApiError || e instanceof Error ? e.message : String(e);
}

// The error banner floats over the page (it never pushes the composer
// away) until dismissed or the next action.
export function showError(e: unknown) {
  $("error-text").textContent = messageOf(e);
  $("error").hidden = false;
}
export const clearError = () => ($("error").hidden = true);

// ask shows the page's dialog and resolves with the text entered (null if
// cancelled), or, without a field, with "ok". With submit, the dialog stays
// open until submit resolves: its error shows inside the dialog, under the
// field, and the text typed stays to correct.
type AskOpts = { text?: string; value?: string; ok: string; field: boolean; danger?: boolean; max?: number; submit?: (v: string) => Promise<unknown> };
function ask(title: string, opts: AskOpts): Promise<string | null> {
  const dialog = $<HTMLDialogElement>("dialog");
  const input = $<HTMLTextAreaElement>("dialog-input");
  const form = dialog.querySelector("form")!;
  const count = $("dialog-count");
  $("dialog-title").textContent = title;
  $("dialog-text").textContent = opts.text ?? "";
  $("dialog-text").hidden = !opts.text;
  $("dialog-error").hidden = true;
  input.hidden = !opts.field;
  if (opts.max) input.maxLength = opts.max;
  else input.removeAttribute("maxlength");
  input.value = opts.value ?? "";
  const counted = () => { count.textContent = opts.max ? `${input.value.length} / ${opts.max}` : ""; };
  count.hidden = !opts.max;
  counted();
  input.oninput = counted;
  $("dialog-ok").textContent = opts.ok;
  $("dialog-ok").className = opts.danger ? "danger" : "";
  dialog.returnValue = "";
  dialog.showModal();
  if (opts.field) input.select();
  return new Promise((resolve) => {
    form.onsubmit = async (ev) => {
      const ok = (ev.submitter as HTMLButtonElement | null)?.value === "ok";
      if (!ok || !opts.submit) return; // the dialog closes itself
      ev.preventDefault();
      try {
        await opts.submit(input.value);
        dialog.close("ok");
      } catch (e) {
        $("dialog-error").textContent = messageOf(e);
        $("dialog-error").hidden = false;
        input.focus();
      }
    };
    dialog.addEventListener("close", () => {
      form.onsubmit = null;
      resolve(dialog.returnValue === "ok" ? (opts.field ? input.value : "ok") : null);
    }, { once: true });
  });
}

// askText asks for a text (a title, an edited message), null if cancelled;
// with submit, it is kept open until submit takes the text.
export const askText = (title: string, value: string, ok = "Save", more: Pick<AskOpts, "max" | "submit"> = {}) =>
  ask(title, { value, ok, field: true, ...more });

// confirmAction asks before an action that cannot simply be undone; its
// button looks destructive.
export const confirmAction = async (title: string, text: string, ok: string) => (await ask(title, { text, ok, field: false, danger: true })) !== null;

// toast says briefly that something was done (a save), without a click.
let toastTimer = 0;
export function toast(text: string) {
  const t = $("toast");
  t.textContent = text;
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = window.setTimeout(() => { t.hidden = true; }, 3000);
}

// icon is a small SVG icon (the page needs no icon font), hidden from
// assistive technology: its button carries the words.
export function icon(path: string, rotate = 0): SVGSVGElement {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("width", "14");
  svg.setAttribute("height", "14");
  svg.setAttribute("aria-hidden", "true");
  if (rotate) svg.setAttribute("transform", `rotate(${rotate})`);
  const p = document.createElementNS("http://www.w3.org/2000/svg", "path");
  p.setAttribute("d", path);
  p.setAttribute("fill", "currentColor");
  svg.append(p);
  return svg;
}

// A thumb (Material Design's thumb_up, Apache-2.0); down is it turned over.
export const THUMB = "M1 21h4V9H1v12zm22-11c0-1.1-.9-2-2-2h-6.31l.95-4.57.03-.32c0-.41-.17-.79-.44-1.06L14.17 1 7.59 7.59C7.22 7.95 7 8.45 7 9v10c0 1.1.9 2 2 2h9c.83 0 1.54-.5 1.84-1.22l3.02-7.05c.09-.23.14-.47.14-.73v-2z";
