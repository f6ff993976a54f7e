// The page's shared pieces: the error banner, toasts, and the page's own
// dialogs (instead of prompt and confirm), offered to every component by
// useUI(); icons with words for assistive technology.
import { createContext, useCallback, useContext, useEffect, useRef, useState, type ReactNode } from "react";
import { ApiError } from "../client";
import { errorText } from "./backend";

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
  if (e instanceof ApiError) return e.message;
  if (e instanceof Error) return e.message === "Failed to fetch" ? "The server cannot be reached: check your connection." : errorText(e.message);
  return String(e);
}

// Ask is a request for the dialog: a text (a title, an edited message) or
// a confirmation. With submit, the dialog stays open until submit takes
// the text: its refusal shows inside the dialog, the text kept.
type Ask = { title: string; text?: string; value?: string; ok: string; field: boolean; danger?: boolean; max?: number; submit?: (v: string) => Promise<unknown> };
type UI = {
  showError: (e: unknown) => void;
  clearError: () => void;
  toast: (text: string) => void;
  askText: (title: string, value: string, ok?: string, more?: Pick<Ask, "max" | "submit">) => Promise<string | null>;
  confirm: (title: string, text: string, ok: string) => Promise<boolean>;
  // guard runs an action, its failure shown in the banner.
  guard: (fn: () => Promise<unknown>) => Promise<void>;
};
const Ctx = createContext<UI | null>(null);
export const useUI = () => useContext(Ctx)!;

export function UIProvider({ children }: { children: ReactNode }) {
  const [error, setError] = useState<string | null>(null);
  const [toastText, setToast] = useState<string | null>(null);
  const [ask, setAsk] = useState<(Ask & { resolve: (v: string | null) => void }) | null>(null);
  const timer = useRef(0);
  const showError = useCallback((e: unknown) => setError(messageOf(e)), []);
  const clearError = useCallback(() => setError(null), []);
  const toast = useCallback((text: string) => {
    setToast(text);
    clearTimeout(timer.current);
    timer.current = window.setTimeout(() => setToast(null), 3000);
  }, []);
  const open = useCallback((a: Ask) => new Promise<string | null>((resolve) => setAsk({ ...a, resolve })), []);
  const ui: UI = {
    showError, clearError, toast,
    askText: (title, value, ok = "Save", more = {}) => open({ title, value, ok, field: true, ...more }),
    confirm: async (title, text, ok) => (await open({ title, text, ok, field: false, danger: true })) !== null,
    guard: async (fn) => { setError(null); try { await fn(); } catch (e) { showError(e); } },
  };
  return (
    <Ctx.Provider value={ui}>
      {children}
      <div id="error" role="alert" hidden={error === null}>
        <span id="error-text">{error}</span>{" "}
        <button id="error-close" className="quiet" type="button" aria-label="Dismiss the error" onClick={clearError}>Dismiss</button>
      </div>
      <div id="toast" role="status" hidden={toastText === null}>{toastText}</div>
      <AskDialog ask={ask} done={(v) => { ask?.resolve(v); setAsk(null); }} />
    </Ctx.Provider>
  );
}

function AskDialog({ ask, done }: { ask: Ask | null; done: (v: string | null) => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const input = useRef<HTMLTextAreaElement>(null);
  const [value, setValue] = useState("");
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const d = ref.current!;
    if (!ask) { if (d.open) d.close(); return; }
    setValue(ask.value ?? "");
    setError(null);
    if (!d.open) d.showModal();
    if (ask.field) requestAnimationFrame(() => input.current?.select());
  }, [ask]);
  const ok = async () => {
    if (!ask) return;
    if (!ask.submit) return done(ask.field ? value : "ok");
    try {
      await ask.submit(value);
      done(value);
    } catch (e) {
      setError(messageOf(e));
      input.current?.focus();
    }
  };
  return (
    <dialog id="dialog" ref={ref} aria-labelledby="dialog-title" onCancel={(e) => { e.preventDefault(); done(null); }}>
      <form method="dialog" onSubmit={(e) => { e.preventDefault(); void ok(); }}>
        <h2 id="dialog-title">{ask?.title}</h2>
        {ask?.text && <p id="dialog-text">{ask.text}</p>}
        <textarea id="dialog-input" rows={3} aria-labelledby="dialog-title" ref={input} hidden={!ask?.field}
          maxLength={ask?.max} value={value} onChange={(e) => setValue(e.target.value)} />
        {ask?.max ? <p id="dialog-count" className="count" aria-live="polite">{value.length} / {ask.max}</p> : null}
        <p id="dialog-error" role="alert" hidden={error === null}>{error}</p>
        <div className="row">
          <button id="dialog-ok" type="submit" className={ask?.danger ? "danger" : ""}>{ask?.ok ?? "OK"}</button>
          <button className="quiet" type="button" onClick={() => done(null)}>Cancel</button>
        </div>
      </form>
    </dialog>
  );
}

// A thumb (Material Design's thumb_up, Apache-2.0); down is it turned over.
const THUMB = "M1 21h4V9H1v12zm22-11c0-1.1-.9-2-2-2h-6.31l.95-4.57.03-.32c0-.41-.17-.79-.44-1.06L14.17 1 7.59 7.59C7.22 7.95 7 8.45 7 9v10c0 1.1.9 2 2 2h9c.83 0 1.54-.5 1.84-1.22l3.02-7.05c.09-.23.14-.47.14-.73v-2z";
export const Thumb = ({ down = false }) => (
  <svg viewBox="0 0 24 24" width="14" height="14" aria-hidden="true" transform={down ? "rotate(180)" : undefined}><path d={THUMB} fill="currentColor" /></svg>
);
