// README's quickstart (docs/quickstart.sh) against the local server as
// `make dev` runs it (the web app beside the API, the offline stand-in
// model, Firestore and Auth emulators): every call answers as the script
// expects, twice in a row (the second run signs in instead of up).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { authHost, buildServer, missingEmulators, root, startServer } from "./helpers.mjs";

const missing = missingEmulators("the quickstart test");

let server, base;
before(async () => {
  if (missing) return;
  // As make dev runs it: no model service, so the offline stand-in.
  ({ server, base } = await startServer(buildServer(), ["-web", join(root, "web")], { OPENAI_API_KEY: "", OPENAI_BASE_URL: "" }));
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
