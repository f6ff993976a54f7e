// The example page: signs in on the Auth emulator (an account named by
// ?email=, made the first time), loads the chat ?chat= and shows it.
// ?api=, ?auth= and ?project= say where the backend and the Auth emulator are.
import { initializeApp } from "firebase/app";
import { connectAuthEmulator, createUserWithEmailAndPassword, getAuth, signInWithEmailAndPassword } from "firebase/auth";
import { createRoot } from "react-dom/client";
import { Chat, loadChat, type Backend } from "./Chat";

const q = new URLSearchParams(location.search);
const auth = getAuth(initializeApp({ apiKey: "demo-key", projectId: q.get("project") ?? "demo-chatmemory" }));
connectAuthEmulator(auth, `http://${q.get("auth") ?? "127.0.0.1:9099"}`, { disableWarnings: true });

async function main() {
  const email = q.get("email") ?? "usechat@example.com", password = "usechat-password";
  await auth.authStateReady();
  if (auth.currentUser?.email !== email) {
    await signInWithEmailAndPassword(auth, email, password).catch(() => createUserWithEmailAndPassword(auth, email, password));
  }
  const backend: Backend = { api: q.get("api") ?? "http://127.0.0.1:8090", token: () => auth.currentUser!.getIdToken() };
  const id = q.get("chat") ?? "example";
  createRoot(document.getElementById("root")!).render(<Chat backend={backend} id={id} initial={await loadChat(backend, id)} />);
}

main().catch((e) => { document.getElementById("root")!.textContent = String(e); });
