// What the end-to-end tests share: ports, the server built and started,
// accounts on the Auth emulator, and the test models' embeddings.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import net from "node:net";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const project = process.env.GOOGLE_CLOUD_PROJECT || "demo-chatmemory";
export const authHost = process.env.FIREBASE_AUTH_EMULATOR_HOST;

// What a test needs that is not here ("" when nothing); under CI=true it
// fails the run instead of being skipped.
export function missingEmulators(what) {
  const missing = !process.env.FIRESTORE_EMULATOR_HOST || !authHost ? "the emulators (run `make test`)" : "";
  if (missing && process.env.CI === "true") throw new Error(`${what} needs ${missing}`);
  return missing;
}

export const freePort = () => new Promise((resolve) => {
  const s = net.createServer().listen(0, "127.0.0.1", () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

export async function waitHealthy(url) {
  for (let i = 0; i < 300; i++) {
    try { if ((await fetch(url + "/healthz")).ok) return; } catch {}
    await new Promise((ok) => setTimeout(ok, 100));
  }
  throw new Error("the server did not come up");
}

// buildServer builds cmd/server once for a test file and returns its path.
export function buildServer() {
  const bin = join(mkdtempSync(join(tmpdir(), "chat-e2e-")), "server");
  execFileSync("go", ["build", "-o", bin, "./cmd/server"], { cwd: root, stdio: "inherit" });
  return bin;
}

// startServer starts bin on a free port with env added to this process's,
// and returns it with its base URL once it answers.
export async function startServer(bin, args, env) {
  const port = await freePort();
  const server = spawn(bin, args, { cwd: root, stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, PORT: String(port), ...env } });
  const base = `http://127.0.0.1:${port}`;
  await waitHealthy(base);
  return { server, base };
}

export const email = (who) => `${who}-${Date.now()}-${Math.floor(Math.random() * 1e6)}@example.com`;

// signUpToken signs an account up on the Auth emulator: its ID token.
export async function signUpToken(address, password = "password123") {
  const r = await fetch(`http://${authHost}/identitytoolkit.googleapis.com/v1/accounts:signUp?key=any`, {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ email: address, password, returnSecureToken: true }) });
  return (await r.json()).idToken;
}

// embeddings answers an /embeddings request r: words hashed into the
// asked dimensions, normalized, so that texts that share words are near.
export function embeddings(r, res) {
  const dims = r.dimensions || 8;
  const data = r.input.map((text, index) => {
    const v = new Array(dims).fill(0);
    for (const w of text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean)) {
      let h = 2166136261;
      for (const ch of w) h = Math.imul(h ^ ch.codePointAt(0), 16777619) >>> 0;
      v[h % dims] += 1;
    }
    const n = Math.hypot(...v) || 1;
    return { object: "embedding", index, embedding: v.map((x) => x / n) };
  });
  res.setHeader("Content-Type", "application/json");
  res.end(JSON.stringify({ object: "list", model: r.model, data, usage: { prompt_tokens: 5, total_tokens: 5 } }));
}
