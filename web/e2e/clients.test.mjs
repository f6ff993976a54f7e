// End-to-end: first impressions on a desktop and a phone, a chat's
// settings, and the clients beside the web app (the Firebase JS SDK's
// callables, the typed client), against the real server (see webapp.mjs).
// Run by `make test`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { authHost, email, project, root, signUpToken } from "./helpers.mjs";
import { contrast, inView, missing, send, shots, signUp, useWebApp } from "./webapp.mjs";

const web = useWebApp();

test("first impressions: friendly sign-in errors, a favicon, no missing file, on a desktop and a phone", { skip: missing ? `needs ${missing}` : false }, async () => {
  for (const viewport of [{ width: 1280, height: 800 }, { width: 390, height: 844 }]) {
    const context = await web.browser.newContext({ viewport });
    const page = await context.newPage();
    const missingFiles = [];
    page.on("response", (r) => { if (r.status() === 404) missingFiles.push(r.url()); });
    await page.goto(web.base);
    await page.waitForSelector("#auth:not([hidden])");
    assert.equal(await page.getAttribute("link[rel=icon]", "href"), "/favicon.svg");
    assert.equal((await page.request.get(web.base + "/favicon.svg")).status(), 200);
    await page.fill("#email", email("weak"));
    await page.fill("#password", "123");
    await page.click("#signup");
    await page.waitForSelector("#error:not([hidden])");
    assert.equal(await page.textContent("#error-text"), "Choose a password of at least 6 characters.");
    await inView(page, "#auth");
    await page.fill("#password", "password123");
    await page.click("#signup");
    await page.waitForSelector("#app:not([hidden])");
    await send(page, "Hi from a " + viewport.width + "px screen");
    await inView(page, "#composer");
    await contrast(page);
    await page.click("#memory-open");
    await page.waitForSelector("#memory:not([hidden])");
    await contrast(page);
    await page.press("#memory-close", "Escape");
    assert.deepEqual(missingFiles, [], "every file the page asked for exists");
    await context.close();
  }
});

test("a chat's settings: its own instructions and its model, kept across a reload", { skip: missing ? `needs ${missing}` : false }, async () => {
  const context = await web.browser.newContext();
  const page = await context.newPage();
  await signUp(page, email("settings"));
  assert.ok(await page.isHidden("#settings-open"), "no settings before a chat exists");
  await send(page, "Hello there");
  await page.waitForSelector("#sessions li.current");
  await page.click("#settings-open");
  await page.waitForSelector("#settings:not([hidden])");
  assert.equal(await page.getAttribute("#settings-open", "aria-expanded"), "true");
  assert.ok((await page.locator("#model option").count()) >= 1, "the offered models are listed");
  await page.fill("#instructions", "Answer briefly, like a pirate.");
  await page.screenshot({ path: join(shots, "settings.png") });
  await page.click("#settings-save");
  await page.waitForSelector("#settings", { state: "hidden" });

  await page.reload();
  await page.waitForSelector("#sessions li .name");
  await page.click("#sessions li .name");
  await page.click("#settings-open");
  await page.waitForSelector("#settings:not([hidden])");
  await page.waitForFunction(() => document.querySelector("#instructions").value === "Answer briefly, like a pirate.");
  await page.press("#instructions", "Escape");
  await page.waitForSelector("#settings", { state: "hidden" });
  await context.close();
});

test("a Firebase app calls the backend with the JS SDK's callable functions, streaming included", { skip: missing ? `needs ${missing}` : false }, async () => {
  // The real Firebase JS SDK, in Node, as a web app uses it.
  const { initializeApp, deleteApp } = await import("firebase/app");
  const { getAuth, connectAuthEmulator, createUserWithEmailAndPassword, signOut } = await import("firebase/auth");
  const { getFunctions, httpsCallableFromURL } = await import("firebase/functions");
  const sdk = (name) => {
    const app = initializeApp({ apiKey: "demo-key", projectId: project, authDomain: `${project}.firebaseapp.com` }, name);
    const auth = getAuth(app);
    connectAuthEmulator(auth, `http://${authHost}`, { disableWarnings: true });
    const functions = getFunctions(app);
    return { app, auth, call: (fn) => httpsCallableFromURL(functions, `${web.base}/callable/${fn}`) };
  };
  const alice = sdk("alice"), bob = sdk("bob");
  await createUserWithEmailAndPassword(alice.auth, email("callable-a"), "password123");
  await createUserWithEmailAndPassword(bob.auth, email("callable-b"), "password123");

  // A streamed turn: the session, the reply's pieces as they come, then the result.
  const { stream, data } = await alice.call("chat").stream({ message: "Hello over callables" });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  const result = await data;
  assert.equal(chunks[0].type, "session");
  const deltas = chunks.filter((c) => c.type === "delta").map((c) => c.text);
  assert.ok(deltas.length > 1, `streamed in ${deltas.length} pieces`);
  assert.equal(deltas.join(""), "echo: Hello over callables");
  assert.equal(result.reply.content, "echo: Hello over callables");
  const sessionId = result.sessionId;

  // Plain calls: list sessions, a typed error for another user's session.
  const list = await alice.call("listSessions")({ limit: 10 });
  assert.deepEqual(list.data.sessions.map((s) => s.id), [sessionId]);
  await assert.rejects(bob.call("getSession")({ sessionId }), (e) => e.code === "functions/not-found" && /not found/i.test(e.message));
  await assert.rejects(alice.call("getSession")({}), (e) => e.code === "functions/invalid-argument");

  // Signed out: unauthenticated, plain and streamed.
  await signOut(alice.auth);
  await assert.rejects(alice.call("listSessions")({}), (e) => e.code === "functions/unauthenticated");
  const signedOut = await alice.call("chat").stream({ message: "anyone?" });
  await assert.rejects(signedOut.data, (e) => e.code === "functions/unauthenticated");
  await Promise.all([deleteApp(alice.app), deleteApp(bob.app)]);
});

test("the typed client: a streamed turn as events, a tool round, typed errors, cancellation; the web app shows the tool exchange", { skip: missing ? `needs ${missing}` : false }, async () => {
  // The client as the web app bundles it, for Node.
  const out = join(mkdtempSync(join(tmpdir(), "chat-client-")), "client.mjs");
  execFileSync(join(root, "node_modules", ".bin", "esbuild"), ["web/client/index.ts", "--bundle", "--format=esm", "--platform=node", `--outfile=${out}`], { cwd: root });
  const { ChatMemoryClient, ApiError } = await import(out);
  const aliceEmail = email("client-a");
  const [aliceToken, bobToken] = await Promise.all([signUpToken(aliceEmail), signUpToken(email("client-b"))]);
  const alice = new ChatMemoryClient({ baseUrl: web.base, idToken: async () => aliceToken });
  const bob = new ChatMemoryClient({ baseUrl: web.base, idToken: async () => bobToken });

  const events = [];
  let response;
  const turn = alice.chat({ message: "typed hello" });
  for (;;) {
    const { value, done } = await turn.next();
    if (done) { response = value; break; }
    events.push(value.type);
  }
  assert.equal(events[0], "session");
  assert.equal(events.at(-1), "done");
  assert.ok(events.filter((t) => t === "delta").length > 1);
  assert.equal(response.reply.content, "echo: typed hello");
  const page = await alice.listMessages(response.sessionId);
  assert.deepEqual(page.messages.map((m) => m.content), ["typed hello", "echo: typed hello"]);

  // Errors are typed values.
  await assert.rejects(bob.getSession(response.sessionId), (e) => e instanceof ApiError && e.status === 404 && e.code === "not_found");
  await assert.rejects(alice.chat({ sessionId: response.sessionId, message: "" }).next(), (e) => e instanceof ApiError && e.code === "invalid_argument");

  // A tool round: the calls arrive as an event, done says requires_action,
  // the results continue the turn.
  const tools = [{ name: "search_docs", parameters: { type: "object", properties: { q: { type: "string" } } } }];
  const round = [];
  let asked;
  for (const it = alice.chat({ sessionId: response.sessionId, message: "tool: find the docs", tools }); ;) {
    const { value, done } = await it.next();
    if (done) { asked = value; break; }
    round.push(value.type);
  }
  assert.deepEqual(round, ["session", "tool_calls", "done"]);
  assert.equal(asked.status, "requires_action");
  assert.equal(asked.toolCalls[0].function.name, "search_docs");
  let answered;
  for (const it = alice.chat({ sessionId: response.sessionId, toolResults: [{ toolCallId: asked.toolCalls[0].id, content: "docs at /guide" }], tools }); ;) {
    const { value, done } = await it.next();
    if (done) { answered = value; break; }
  }
  assert.equal(answered.status, "completed");
  assert.equal(answered.reply.content, "echo tool: docs at /guide");

  // The web app shows the call and its result, collapsed.
  const context = await web.browser.newContext();
  const view = await context.newPage();
  await view.goto(web.base);
  await view.fill("#email", aliceEmail);
  await view.fill("#password", "password123");
  await view.click("#signin");
  await view.waitForSelector("#sessions li .name");
  await view.click("#sessions li .name");
  await view.waitForSelector("#messages li.tool details");
  assert.equal(await view.locator("#messages li.tool details").count(), 2);
  assert.equal(await view.locator("#messages li.tool details[open]").count(), 0);
  assert.match(await view.textContent("#messages li.tool summary >> nth=0"), /Called search_docs/);
  await view.click("#messages li.tool summary >> nth=1");
  assert.match(await view.textContent("#messages li.tool pre >> nth=1"), /docs at \/guide/);
  await context.close();

  // Cancellation: aborting stops reading a long reply.
  const abort = new AbortController();
  const long = alice.chat({ sessionId: response.sessionId, message: "long: and on" }, { signal: abort.signal });
  assert.equal((await long.next()).value.type, "session");
  abort.abort();
  await assert.rejects(long.next(), (e) => e instanceof ApiError && e.code === "aborted");
});
