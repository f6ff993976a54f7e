// What the end-to-end tests share: ports, the server built and started,
// accounts on the Auth emulator, and the test models' embeddings.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import http from "node:http";
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

// buildServer builds cmd/server once for a test file and returns its path;
// the binary (tens of megabytes) is removed when the file's process exits.
export function buildServer() {
  const dir = mkdtempSync(join(tmpdir(), "chat-e2e-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const bin = join(dir, "server");
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

// signInToken signs an account in on the Auth emulator: its ID token.
export async function signInToken(address, password = "password123") {
  const r = await fetch(`http://${authHost}/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword?key=any`, {
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

// modelServer starts an OpenAI-compatible model on a free port: script(r)
// decides each chat completion's answer ({ text, call, delay } or
// { status }); /embeddings answers as embeddings does.
export function modelServer(script) {
  return new Promise((resolve) => {
    const srv = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", async () => {
        const r = JSON.parse(body);
        if (req.url.endsWith("/embeddings")) return embeddings(r, res);
        await answer(res, r, script(r));
      });
    });
    srv.listen(0, "127.0.0.1", () => resolve(srv));
  });
}

// answer writes a chat completion: an error status; a tool call; or text,
// streamed a word at a time every delay ms when asked to stream.
async function answer(res, r, { status, text = "", call = null, delay = 5 }) {
  if (status) {
    res.writeHead(status, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ error: { message: "scripted", type: "server_error" } }));
    return;
  }
  const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
  if (!r.stream) {
    const message = call ? { role: "assistant", content: null, tool_calls: [call] } : { role: "assistant", content: text };
    res.setHeader("Content-Type", "application/json");
    res.end(JSON.stringify({ id: "x", object: "chat.completion", model: r.model,
      choices: [{ index: 0, message, finish_reason: call ? "tool_calls" : "stop" }], usage }));
    return;
  }
  const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", model: r.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  res.setHeader("Content-Type", "text/event-stream");
  if (call) {
    res.write(chunk({ tool_calls: [call] }));
    res.write(chunk({}, "tool_calls"));
    res.end("data: [DONE]\n\n");
    return;
  }
  for (const w of text.split(/(?<= )/)) {
    if (res.destroyed) return;
    res.write(chunk({ content: w }));
    await new Promise((ok) => setTimeout(ok, delay));
  }
  res.write(chunk({}, "stop"));
  res.end("data: [DONE]\n\n");
}

// toolCall is the call a test model makes of the first tool r offers, when
// the conversation ends with a "tool:" message from the user.
export function toolCall(r, args) {
  const last = r.messages[r.messages.length - 1];
  if (!r.tools?.length || last?.role !== "user" || !last.content.startsWith("tool:")) return null;
  return { index: 0, id: `call_${r.messages.length}`, type: "function", function: { name: r.tools[0].function.name, arguments: args } };
}
