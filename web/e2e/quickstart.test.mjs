// README's quickstart (docs/quickstart.sh) against the local server as
// `make dev` runs it (the web app beside the API, the offline stand-in
// model, Firestore and Auth emulators): every call answers as the script
// expects, twice in a row (the second run signs in instead of up).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import http from "node:http";
import { join } from "node:path";
import { authHost, buildServer, missingEmulators, root, startServer } from "./helpers.mjs";

const missing = missingEmulators("the quickstart test");

let server, base;
before(async () => {
  if (missing) return;
  // As make dev runs it: no model service, so the offline stand-in.
  ({ server, base } = await startServer(buildServer(), ["-web", join(root, "web", "dist")], { OPENAI_API_KEY: "", OPENAI_BASE_URL: "" }));
});
after(() => server?.kill("SIGTERM"));

// breaking starts a proxy to the server that drops, from the streamed
// answers of path, every line matching drop.
const breaking = (path, drop) => new Promise((ok) => {
  const proxy = http.createServer(async (req, res) => {
    let body = "";
    for await (const c of req) body += c;
    const r = await fetch(base + req.url, { method: req.method, body: ["GET", "HEAD"].includes(req.method) ? undefined : body,
      headers: { authorization: req.headers.authorization ?? "", "content-type": req.headers["content-type"] ?? "application/json" } });
    let text = await r.text();
    if (req.url === path && (r.headers.get("content-type") ?? "").startsWith("text/event-stream")) text = text.split("\n").filter((l) => !drop.test(l)).join("\n");
    res.writeHead(r.status, { "Content-Type": r.headers.get("content-type") ?? "text/plain" });
    res.end(text);
  });
  proxy.listen(0, "127.0.0.1", () => ok(proxy));
});

// A streamed check whose stream lacks what it expects stops the script.
for (const [path, drop, want] of [["/chat", /^event: done/, /POST \/chat \(stream\) answered 200 without \^event: done/],
  ["/ai-sdk/chat", /"type":"finish"/, /POST \/ai-sdk\/chat \(stream\) answered 200 without "type":"finish"/]]) {
  test(`docs/quickstart.sh stops when ${path}'s stream lacks its end`, { skip: missing ? `needs ${missing}` : false }, async () => {
    const proxy = await breaking(path, drop);
    try {
      const run = await new Promise((ok) => {
        const child = spawn("bash", [join(root, "docs", "quickstart.sh")], { cwd: root,
          env: { ...process.env, API: `http://127.0.0.1:${proxy.address().port}`, AUTH: authHost, EMAIL: `quickstart-broken-${Date.now()}@example.com` } });
        let out = "", err = "";
        child.stdout.on("data", (d) => (out += d));
        child.stderr.on("data", (d) => (err += d));
        child.on("close", (status) => ok({ status, out, err }));
      });
      assert.notEqual(run.status, 0, `the script went on:\n${run.out}`);
      assert.match(run.err, want);
      assert.doesNotMatch(run.out, /every endpoint answered as expected/);
    } finally {
      proxy.close();
    }
  });
}

test("docs/quickstart.sh runs through, twice", { skip: missing ? `needs ${missing}` : false }, () => {
  const email = `quickstart-${Date.now()}@example.com`;
  for (const run of [1, 2]) {
    const out = execFileSync("bash", [join(root, "docs", "quickstart.sh")], {
      cwd: root, encoding: "utf8", env: { ...process.env, API: base, AUTH: authHost, EMAIL: email },
    });
    assert.match(out, /every endpoint answered as expected/, `run ${run}:\n${out}`);
  }
});
