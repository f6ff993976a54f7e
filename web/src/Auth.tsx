// Sign in or create an account with email and password (Firebase Auth;
// the Auth emulator locally); errors in plain words.
import { createUserWithEmailAndPassword, signInWithEmailAndPassword, type Auth as FirebaseAuth } from "firebase/auth";
import { useState } from "react";
import { useUI } from "./ui";

export function Auth({ auth }: { auth: FirebaseAuth }) {
  const ui = useUI();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  return (
    <form id="auth" autoComplete="on" onSubmit={(e) => { e.preventDefault(); void ui.guard(() => signInWithEmailAndPassword(auth, email, password)); }}>
      <h2>Sign in</h2>
      <label>Email <input id="email" type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} /></label>
      <label>Password <input id="password" type="password" autoComplete="current-password" minLength={6} required value={password} onChange={(e) => setPassword(e.target.value)} /></label>
      <div className="row">
        <button id="signin" type="submit">Sign in</button>
        <button id="signup" type="button" onClick={() => void ui.guard(() => createUserWithEmailAndPassword(auth, email, password))}>Create account</button>
      </div>
    </form>
  );
}
