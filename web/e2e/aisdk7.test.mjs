// The AI SDK test (aisdk.test.mjs) again with the SDK's 7.x major, which
// needs Node 22: the package aliases ai7 (ai 7.x) and node22 (Node 22's
// binary from npm) in package.json, so that `npm ci` installs both.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { missingEmulators, root } from "./helpers.mjs";

const missing = missingEmulators("the AI SDK 7 test");
const node22 = join(root, "node_modules", "node22", "bin", "node");
const major = (pkg) => Number(JSON.parse(readFileSync(join(root, "node_modules", pkg, "package.json"), "utf8")).version.split(".")[0]);

test("the AI SDK test passes with ai 7.x on Node 22", { skip: missing ? `needs ${missing}` : false, timeout: 10 * 60_000 }, async () => {
  assert.equal(major("ai"), 6, "ai is the 6.x major");
  assert.equal(major("ai7"), 7, "ai7 is the 7.x major");
  const env = { ...process.env, AI_SDK: "ai7" };
  delete env.NODE_TEST_CONTEXT; // a run of its own, not a file of this one
  const child = spawn(node22, ["--test", "--test-reporter=spec", join(root, "web", "e2e", "aisdk.test.mjs")],
    { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => process.stderr.write(d));
  const code = await new Promise((ok) => child.on("close", ok));
  process.stderr.write(out);
  assert.match(out, /ai 7\.\d+\.\d+, Node v22\./, "the run used ai 7 on Node 22");
  const count = (what) => Number(out.match(new RegExp(`^ℹ ${what} (\\d+)$`, "m"))?.[1]);
  assert.equal(code, 0, "the AI SDK test failed with ai 7");
  assert.equal(count("fail"), 0);
  assert.ok(count("pass") >= 10, `only ${count("pass")} tests passed`);
});
