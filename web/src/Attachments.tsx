// Attachments: files added to the next message with the Attach button, a
// paste or a drop, each uploaded at once (POST /attachments, with its
// progress), shown as a preview with a way to take it off, and its
// refusal in the server's plain words. Sent with the message as the AI
// SDK's file parts (FileUIPart, url /attachments/{id}); shown in a message
// from the server (an <img> cannot send the token: fetched, then shown).
import type { FileUIPart } from "ai";
import { useEffect, useRef, useState } from "react";
import { errorText, type Backend } from "./backend";

export type Pending = { key: string; name: string; mediaType: string; preview?: string; progress: number; id?: string; error?: string };

// upload sends file to POST /attachments, reporting its progress (0 to 1).
async function upload(b: Backend, file: File, progress: (f: number) => void): Promise<{ id: string; type: string; name: string }> {
  const headers = await b.headers();
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `${b.base}/attachments`);
    for (const [k, v] of Object.entries(headers)) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) progress(e.loaded / e.total); };
    xhr.onload = () => xhr.status < 300 ? resolve(JSON.parse(xhr.responseText))
      : reject(new Error(errorText(xhr.responseText) || `The upload failed (${xhr.status}).`));
    xhr.onerror = () => reject(new Error("The upload failed: check your connection."));
    const form = new FormData();
    form.append("file", file, file.name);
    xhr.send(form);
  });
}

// useAttachments holds the files of the message being written.
export function useAttachments(b: Backend) {
  const [items, setItems] = useState<Pending[]>([]);
  const update = (key: string, change: Partial<Pending>) => setItems((all) => all.map((p) => (p.key === key ? { ...p, ...change } : p)));
  const add = (files: Iterable<File>) => {
    for (const file of files) {
      const key = `${Date.now()}-${Math.random()}`;
      const preview = /^image\/(png|jpeg|gif|webp)$/.test(file.type) ? URL.createObjectURL(file) : undefined;
      setItems((all) => [...all, { key, name: file.name || "pasted file", mediaType: file.type, preview, progress: 0 }]);
      upload(b, file, (progress) => update(key, { progress })).then(
        (a) => update(key, { id: a.id, mediaType: a.type, progress: 1 }),
        (e) => update(key, { error: e instanceof Error ? e.message : String(e) }),
      );
    }
  };
  const remove = (key: string) => setItems((all) => all.filter((p) => {
    if (p.key === key && p.preview) URL.revokeObjectURL(p.preview);
    return p.key !== key;
  }));
  const parts: FileUIPart[] = items.filter((p) => p.id).map((p) => ({ type: "file", mediaType: p.mediaType, filename: p.name, url: `/attachments/${p.id}` }));
  return { items, add, remove, clear: () => setItems([]), parts, uploading: items.some((p) => !p.id && !p.error) };
}

// AttachList shows the files of the message being written.
export function AttachList({ items, remove }: { items: Pending[]; remove: (key: string) => void }) {
  if (!items.length) return null;
  return (
    <ul id="attachments" aria-label="Attached files">
      {items.map((p) => (
        <li key={p.key} className={"attachment" + (p.error ? " failed" : "")}>
          {p.preview ? <img src={p.preview} alt="" /> : <FileIcon />}
          <span className="file-name">{p.name}</span>
          {!p.id && !p.error && <progress max={1} value={p.progress} aria-label={`Uploading ${p.name}`} />}
          {p.error && <span className="attach-error" role="alert">{p.error}</span>}
          <button type="button" className="quiet remove" aria-label={`Remove ${p.name}`} title="Remove" onClick={() => remove(p.key)}>✕</button>
        </li>
      ))}
    </ul>
  );
}

// FilePart shows a file a message carries: an image in place, another
// file as its name, downloaded on a click.
export function FilePart({ part, fetchFile }: { part: FileUIPart; fetchFile: (url: string) => Promise<Blob> }) {
  const [src, setSrc] = useState<string | null>(null);
  const image = part.mediaType.startsWith("image/");
  const made = useRef<string | null>(null);
  useEffect(() => {
    if (!image) return;
    fetchFile(part.url).then((blob) => setSrc((made.current = URL.createObjectURL(blob))), () => setSrc(null));
    return () => { if (made.current) URL.revokeObjectURL(made.current); };
  }, [part.url]);
  const download = async () => {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(await fetchFile(part.url));
    a.download = part.filename ?? "file";
    a.click();
    URL.revokeObjectURL(a.href);
  };
  if (image) return src ? <img className="file-image" src={src} alt={part.filename ?? "an attached image"} /> : <span className="file-chip">{part.filename}</span>;
  return <button type="button" className="quiet file-chip" onClick={() => void download()}><FileIcon /> {part.filename ?? "file"}</button>;
}

// Icons (Material Design's description and attach_file, Apache-2.0), hidden
// from assistive technology: their buttons carry the words.
export const FileIcon = () => (
  <svg className="file-icon" viewBox="0 0 24 24" width="18" height="18" aria-hidden="true"><path fill="currentColor" d="M14 2H6c-1.1 0-2 .9-2 2v16c0 1.1.9 2 2 2h12c1.1 0 2-.9 2-2V8l-6-6zm2 16H8v-2h8v2zm0-4H8v-2h8v2zm-3-5V3.5L18.5 9H13z" /></svg>
);
export const ClipIcon = () => (
  <svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true"><path fill="currentColor" d="M16.5 6v11.5c0 2.21-1.79 4-4 4s-4-1.79-4-4V5a2.5 2.5 0 0 1 5 0v10.5c0 .55-.45 1-1 1s-1-.45-1-1V6H10v9.5a2.5 2.5 0 0 0 5 0V5c0-2.21-1.79-4-4-4S7 2.79 7 5v12.5c0 3.04 2.46 5.5 5.5 5.5s5.5-2.46 5.5-5.5V6h-1.5z" /></svg>
);
