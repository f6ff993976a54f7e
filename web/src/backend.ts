// Where the app's backend and Firebase project are: read at start from
// /config.json (never from the code), so a fork changes a file, not the
// app. The Go server writes it for `make dev`; a hosted app serves its own
// (web/public/config.json, copied from web/config.example.json).
import { initializeApp } from "firebase/app";
import { getToken, initializeAppCheck, ReCaptchaEnterpriseProvider } from "firebase/app-check";
import { connectAuthEmulator, getAuth, type Auth } from "firebase/auth";
import { connectFirestoreEmulator, getFirestore, type Firestore } from "firebase/firestore";
import { ApiError, ChatMemoryClient } from "../client";

export type Config = {
  // apiBase: the backend's base URL ("" for the page's own origin).
  apiBase: string;
  firebase: { apiKey: string; projectId: string; authDomain: string };
  authEmulator?: string;
  firestoreEmulator?: string;
  // App Check, for a backend that runs with APP_CHECK on: the reCAPTCHA
  // Enterprise site key, and a debug token for development.
  appCheck?: { siteKey: string; debugToken?: string };
};

export type Backend = {
  auth: Auth;
  db: Firestore;
  api: ChatMemoryClient; // the typed client, for everything but the turn
  base: string; // the API's base URL
  // headers are what every request to the API carries: the user's ID
  // token (and an App Check token).
  headers: () => Promise<Record<string, string>>;
};

export async function startBackend(): Promise<Backend> {
  const config: Config = await (await fetch("/config.json")).json();
  const app = initializeApp(config.firebase);
  const auth = getAuth(app);
  const db = getFirestore(app);
  if (config.authEmulator) connectAuthEmulator(auth, config.authEmulator, { disableWarnings: true });
  if (config.firestoreEmulator) {
    const [host, port] = config.firestoreEmulator.split(":");
    connectFirestoreEmulator(db, host, Number(port));
  }
  let appCheckToken: (() => Promise<string>) | undefined;
  if (config.appCheck?.siteKey) {
    if (config.appCheck.debugToken) {
      (self as unknown as { FIREBASE_APPCHECK_DEBUG_TOKEN: string }).FIREBASE_APPCHECK_DEBUG_TOKEN = config.appCheck.debugToken;
    }
    const appCheck = initializeAppCheck(app, { provider: new ReCaptchaEnterpriseProvider(config.appCheck.siteKey), isTokenAutoRefreshEnabled: true });
    appCheckToken = async () => (await getToken(appCheck, false)).token;
  }
  const base = config.apiBase || location.origin;
  const idToken = async () => auth.currentUser?.getIdToken();
  const headers = async () => {
    const h: Record<string, string> = {};
    const token = await idToken();
    if (token) h.Authorization = `Bearer ${token}`;
    if (appCheckToken) h["X-Firebase-AppCheck"] = await appCheckToken();
    return h;
  };
  return { auth, db, api: new ChatMemoryClient({ baseUrl: base, idToken, appCheckToken }), base, headers };
}

// call sends a request the typed client does not cover (the AI SDK
// chat's own endpoints), failing with the API's error in its words.
export async function call(b: Backend, method: string, path: string): Promise<Response> {
  const res = await fetch(b.base + path, { method, headers: await b.headers() });
  if (!res.ok) throw new ApiError(res.status, "unavailable", errorText(await res.text()) || `The server answered ${res.status}.`);
  return res;
}

// errorText is the message of an API error body (JSON), or the text as it came.
export function errorText(body: string): string {
  try {
    const e = JSON.parse(body)?.error;
    if (typeof e?.message === "string") return e.message;
  } catch { /* not JSON */ }
  return body;
}
