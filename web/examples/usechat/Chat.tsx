// The Vercel AI SDK's useChat against this backend: README shows this file,
// and CI type-checks it, bundles it and drives it in Chromium (send,
// stream, stop, regenerate, reload; web/e2e/usechat.test.mjs).
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, type UIMessage } from "ai";
import { useState } from "react";

// api: the backend's base URL (an app on another origin needs it in the
// server's CORS_ALLOWED_ORIGINS); token: the signed-in user's Firebase ID
// token, e.g. () => auth.currentUser!.getIdToken().
export type Backend = { api: string; token: () => Promise<string> };

// loadChat is what a page passes Chat as initial: the chat's stored
// messages (its active branch), [] for a new chat.
export async function loadChat({ api, token }: Backend, id: string): Promise<UIMessage[]> {
  const r = await fetch(`${api}/ai-sdk/chat/${encodeURIComponent(id)}/messages`, { headers: { Authorization: `Bearer ${await token()}` } });
  if (!r.ok) throw new Error(`loading the chat: ${r.status}`);
  return (await r.json()).messages;
}

export function Chat({ backend, id, initial }: { backend: Backend; id: string; initial: UIMessage[] }) {
  const { messages, sendMessage, status, stop, regenerate, error } = useChat({
    id, // the chat's id, in the signed-in user's own namespace
    messages: initial,
    transport: new DefaultChatTransport({
      api: `${backend.api}/ai-sdk/chat`,
      headers: async () => ({ Authorization: `Bearer ${await backend.token()}` }),
    }),
  });
  const [text, setText] = useState("");
  const busy = status === "submitted" || status === "streaming";
  return (
    <form onSubmit={(e) => { e.preventDefault(); if (text.trim() && !busy) { sendMessage({ text }); setText(""); } }}>
      {messages.map((m) => (
        <p key={m.id} className={m.role}><b>{m.role}:</b> {m.parts.map((p) => (p.type === "text" ? p.text : "")).join("")}</p>
      ))}
      <input name="q" value={text} onChange={(e) => setText(e.target.value)} />
      {/* Distinct keys: without them React turns the clicked Stop into Send mid-click, and the form submits. */}
      {busy ? <button key="stop" type="button" onClick={() => stop()}>Stop</button> : <button key="send" type="submit">Send</button>}
      <button type="button" disabled={busy || messages.at(-1)?.role !== "assistant"} onClick={() => regenerate()}>Regenerate</button>
      {error && <p role="alert">{error.message}</p>}
    </form>
  );
}
