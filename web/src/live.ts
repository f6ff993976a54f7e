// What the app reads live from Firestore, under the security rules (each
// query constrained to the user's own id): the chat list, the open chat's
// session document, and the ratings of its replies. Every write goes
// through the API.
import { collection, doc, limit, limitToLast, onSnapshot, orderBy, query, where, type Firestore, type Timestamp } from "firebase/firestore";
import { useEffect, useState } from "react";

export type Filter = "active" | "archived" | "deleted";
export type SessionItem = { id: string; title: string; status: string; updatedAt: number };
export type Usage = { promptTokens: number; completionTokens: number; turns: number; lastModel?: string };
export type SessionDoc = { title: string; status: string; instructions: string; model: string; usage?: Usage; historyFrom: number; gone: boolean };

const millis = (t: unknown) => (t as Timestamp | undefined)?.toMillis?.() ?? Date.now();

// useSessions is the user's chats of one status, newest first (null until
// the first snapshot).
export function useSessions(db: Firestore, uid: string, filter: Filter, onError: (e: unknown) => void): SessionItem[] | null {
  const [sessions, setSessions] = useState<SessionItem[] | null>(null);
  useEffect(() => {
    setSessions(null);
    const q = query(collection(db, "chat_sessions"), where("userId", "==", uid), // the rules require this constraint
      where("status", "==", filter), orderBy("updatedAt", "desc"), limit(50));
    return onSnapshot(q, (snap) => setSessions(snap.docs.map((d) => ({
      id: d.id, title: d.get("title") ?? "", status: d.get("status"), updatedAt: millis(d.get("updatedAt")),
    }))), onError);
  }, [db, uid, filter, onError]);
  return sessions;
}

// useSessionDoc is the open chat's session document: its title (which may
// be outside the list's filter), status, settings and totals.
export function useSessionDoc(db: Firestore, id: string | null, onError: (e: unknown) => void): SessionDoc | null {
  const [session, setSession] = useState<SessionDoc | null>(null);
  useEffect(() => {
    setSession(null);
    if (!id) return;
    return onSnapshot(doc(db, "chat_sessions", id), (snap) => setSession(snap.exists() ? {
      title: snap.get("title") ?? "", status: snap.get("status") ?? "active", instructions: snap.get("instructions") ?? "",
      model: snap.get("model") ?? "", usage: snap.get("usage"), historyFrom: snap.get("historyFrom") ?? 0, gone: false,
    } : { title: "", status: "active", instructions: "", model: "", historyFrom: 0, gone: true }), onError);
  }, [db, id, onError]);
  return session;
}

// useRatings maps the open chat's replies (by stored id) to the rating
// each holds, from the message documents.
export function useRatings(db: Firestore, id: string | null, onError: (e: unknown) => void): Map<string, string> {
  const [ratings, setRatings] = useState(new Map<string, string>());
  useEffect(() => {
    setRatings(new Map());
    if (!id) return;
    const q = query(collection(db, "chat_sessions", id, "messages"), orderBy("seq"), limitToLast(200));
    return onSnapshot(q, (snap) => setRatings(new Map(snap.docs
      .filter((d) => d.get("feedback.rating"))
      .map((d) => [d.id, d.get("feedback.rating") as string]))), onError);
  }, [db, id, onError]);
  return ratings;
}

// dateGroup names the group of the list a chat last changed at (ms) falls in.
export function dateGroup(at: number): string {
  const today = new Date().setHours(0, 0, 0, 0);
  const day = 86_400_000;
  if (at >= today) return "Today";
  if (at >= today - day) return "Yesterday";
  if (at >= today - 7 * day) return "Previous 7 days";
  if (at >= today - 30 * day) return "Previous 30 days";
  return "Older";
}
