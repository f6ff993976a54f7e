// README's quickstart (docs/quickstart.sh) against the local server as
// `make dev` runs it (the web app beside the API, the offline stand-in
// model, Firestore and Auth emulators): every call answers as the script
// expects, twice in a row (the second run signs in instead of up).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import net from "node:net";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const authHost = process.env.FIREBASE_AUTH_EMULATOR_HOST;
const missing = !process.env.FIRESTORE_EMULATOR_HOST || !authHost ? "the emulators (run `make test`)" : "";
if (missing && process.env.CI === "true") throw new Error(`the quickstart test needs ${missing}`);

let server, base;
before(async () => {
  if (missing) return;
  const bin = join(mkdtempSync(join(tmpdir(), "chat-quickstart-")), "server");
  execFileSync("go", ["build", "-o", bin, "./cmd/server"], { cwd: root, stdio: "inherit" });
  const port = await new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
  base = `http://127.0.0.1:${port}`;
  const env = { ...process.env, PORT: String(port) };
  delete env.OPENAI_API_KEY;
  delete env.OPENAI_BASE_URL;
  server = spawn(bin, ["-web", join(root, "web")], { cwd: root, stdio: ["ignore", "ignore", "ignore"], env });
  for (let i = 0; i < 300; i++) {
    try { if ((await fetch(base + "/healthz")).ok) return; } catch {}
    await new Promise((ok) => setTimeout(ok, 100));
  }
  throw new Error("the server did not come up");
});
after(() => server?.kill("SIGTERM"));

test("docs/quickstart.sh runs through, twice", { skip: missing ? `needs ${missing}` : false }, () => {
  const email = `quickstart-${Date.now()}@example.com`;
  for (const run of [1, 2]) {
    const out = execFileSync("bash", [join(root, "docs", "quickstart.sh")], {
      cwd: root, encoding: "utf8", env: { ...process.env, API: base, AUTH: authHost, EMAIL: email },
    });
    assert.match(out, /every endpoint answered as expected/, `run ${run}:\n${out}`);
  }
});
