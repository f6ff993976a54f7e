// The Vercel AI SDK's own client (the `ai` package, as useChat uses it)
// against the real server's /ai-sdk/chat, on both stores, with both
// emulators and an OpenAI-compatible model that streams and calls tools.
// Run by `make test` (npm run test:web under the emulators) against the
// SDK's two majors: `ai` 6.x on this Node, and, through aisdk7.test.mjs,
// `ai` 7.x (the package alias ai7) on Node 22 with AI_SDK=ai7.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { buildServer, email, missingEmulators, modelServer, project, root, signUpToken, startServer as start, toolCall } from "./helpers.mjs";

const sdk = process.env.AI_SDK || "ai";
const { DefaultChatTransport, readUIMessageStream, uiMessageChunkSchema, validateUIMessages } = await import(sdk);
const sdkVersion = JSON.parse(readFileSync(join(root, "node_modules", sdk, "package.json"), "utf8")).version;

const missing = missingEmulators("the AI SDK test");

const slowText = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ");

// The model: "slow:" streams a long answer slowly; "tool:" calls the first
// tool offered; a tool's result is echoed; "fail:" is a 500; anything else
// is echoed.
function startModel() {
  return modelServer((r) => {
    const last = r.messages[r.messages.length - 1];
    if (last.content?.startsWith("fail:")) return { status: 500 };
    if (r.messages[0]?.content?.startsWith("Write a title")) return { text: "AI SDK chat" };
    if (last.role === "tool") return { text: "echo tool: " + last.content };
    if (last.content?.startsWith("slow:")) return { text: slowText, delay: 100 };
    return { text: "echo: " + last.content, call: toolCall(r, '{"city":"Oslo"}') };
  });
}

const signUp = (who) => signUpToken(email(who));

let model, bin;
const servers = [];
before(async () => {
  if (missing) return;
  model = await startModel();
  bin = buildServer();
});
after(() => {
  for (const s of servers) s.kill("SIGTERM");
  model?.close();
});

async function startServer(backend) {
  const { server, base } = await start(bin, [], { STORAGE_BACKEND: backend, GOOGLE_CLOUD_PROJECT: project,
    OPENAI_API_KEY: "test", OPENAI_BASE_URL: `http://127.0.0.1:${model.address().port}/v1`, DRAFT_INTERVAL_MS: "200" });
  servers.push(server);
  return base;
}

// assertChunks: each chunk is one this SDK's UI message stream accepts (an
// unknown type or value breaks a client's whole stream).
async function assertChunks(chunks) {
  const schema = uiMessageChunkSchema();
  for (const c of chunks) {
    const v = await schema.validate(c);
    assert.ok(v.success, `ai ${sdkVersion} refuses the chunk ${JSON.stringify(c)}: ${v.error}`);
  }
}

// rawChunks posts body to /ai-sdk/chat and returns the stream's chunks.
async function rawChunks(base, token, body) {
  const r = await fetch(`${base}/ai-sdk/chat`, { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: JSON.stringify(body) });
  assert.equal(r.status, 200);
  const lines = (await r.text()).split("\n").filter((l) => l.startsWith("data: "));
  assert.equal(lines.at(-1), "data: [DONE]");
  return lines.slice(0, -1).map((l) => JSON.parse(l.slice(6)));
}

// last reads a stream of UI message chunks to the UIMessage it builds.
async function last(stream, message) {
  let out;
  for await (const m of readUIMessageStream({ stream, message, terminateOnError: true })) out = m;
  return out;
}

const userMessage = (text) => ({ id: `u-${Math.random().toString(36).slice(2, 10)}`, role: "user", parts: [{ type: "text", text }] });
const textOf = (m) => m.parts.filter((p) => p.type === "text").map((p) => p.text).join("");

for (const backend of ["firestore", "inprocess"]) {
  describe(`the AI SDK's chat transport (ai ${sdkVersion}, Node ${process.version}, ${backend})`, { skip: missing ? `needs ${missing}` : false }, () => {
    let base, token, transport, load;
    before(async () => {
      base = await startServer(backend);
      token = await signUp("aisdk");
      transport = new DefaultChatTransport({ api: `${base}/ai-sdk/chat`, headers: async () => ({ Authorization: `Bearer ${token}` }) });
      load = async (chatId, who = token) => {
        const r = await fetch(`${base}/ai-sdk/chat/${chatId}/messages`, { headers: { Authorization: `Bearer ${who}` } });
        assert.equal(r.status, 200);
        const { messages } = await r.json();
        if (messages.length > 0) await validateUIMessages({ messages }); // as this SDK's own server code checks them
        return messages;
      };
    });

    test("a new chat and a second turn; a retry replays; a regeneration", async () => {
      const chatId = `chat-${Date.now()}`;
      const u1 = userMessage("hello there");
      const a1 = await last(await transport.sendMessages({ chatId, messages: [u1], trigger: "submit-message" }));
      assert.equal(textOf(a1), "echo: hello there");
      assert.equal(a1.metadata.sessionId.length > 0, true);
      const u2 = userMessage("and again");
      const a2 = await last(await transport.sendMessages({ chatId, messages: [u1, a1, u2], trigger: "submit-message" }));
      assert.equal(textOf(a2), "echo: and again");
      const stored = await load(chatId);
      assert.deepEqual(stored.map((m) => [m.id, m.role, textOf(m)]), [[u1.id, "user", "hello there"], [a1.id, "assistant", textOf(a1)], [u2.id, "user", "and again"], [a2.id, "assistant", textOf(a2)]]);

      const again = await last(await transport.sendMessages({ chatId, messages: [u1, a1, u2], trigger: "submit-message" }));
      assert.equal(again.id, a2.id, "a retry of the same message replays its reply");
      assert.equal((await load(chatId)).length, 4);

      const regen = await last(await transport.sendMessages({ chatId, messages: [u1, a1, u2], trigger: "regenerate-message", messageId: a2.id }));
      assert.notEqual(regen.id, a2.id);
      assert.equal(textOf(regen), "echo: and again");
      const now = await load(chatId);
      assert.equal(now.length, 4);
      assert.equal(now[3].id, regen.id, "the regenerated reply is on the active branch");
    });

    test("a response is the UI message stream, with its header", async () => {
      const r = await fetch(`${base}/ai-sdk/chat`, { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
        body: JSON.stringify({ id: `hdr-${Date.now()}`, messages: [userMessage("headers")], trigger: "submit-message" }) });
      assert.equal(r.headers.get("content-type"), "text/event-stream");
      assert.equal(r.headers.get("x-vercel-ai-ui-message-stream"), "v1");
      const lines = (await r.text()).split("\n").filter((l) => l.startsWith("data: "));
      assert.equal(lines.at(-1), "data: [DONE]");
      const chunks = lines.slice(0, -1).map((l) => JSON.parse(l.slice(6)));
      await assertChunks(chunks);
      const types = chunks.map((c) => c.type);
      assert.deepEqual([types[0], types[1], types[2], types.at(-2), types.at(-1)], ["start", "start-step", "text-start", "finish-step", "finish"]);
    });

    test(`every chunk served is one ai ${sdkVersion} accepts: text, a tool call, an error`, async () => {
      const tools = [{ name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } }];
      const asks = [
        { id: `chunks-${Date.now()}`, messages: [userMessage("plain text")], trigger: "submit-message" },
        { id: `chunks-tool-${Date.now()}`, messages: [userMessage("tool: weather")], trigger: "submit-message", tools },
        { id: `chunks-err-${Date.now()}`, messages: [userMessage("fail: now")], trigger: "submit-message" },
      ];
      const seen = new Set();
      for (const body of asks) {
        const chunks = await rawChunks(base, token, body);
        await assertChunks(chunks);
        for (const c of chunks) seen.add(c.type);
      }
      for (const t of ["start", "start-step", "text-start", "text-delta", "text-end", "tool-input-available", "finish-step", "finish", "error"]) assert.ok(seen.has(t), `no ${t} chunk was served`);
    });

    test("an abort stops the reply; a resumable chat's abort is resumed to its end", async () => {
      const chatId = `abort-${Date.now()}`;
      const stopAt = async (stream) => {
        const reader = stream.getReader();
        for (;;) { const { value } = await reader.read(); if (value?.type === "text-delta") break; }
      };
      const abort = new AbortController();
      await stopAt(await transport.sendMessages({ chatId, messages: [userMessage("slow: talk")], trigger: "submit-message", abortSignal: abort.signal }));
      abort.abort();
      let stored;
      for (let i = 0; i < 50; i++) {
        stored = await load(chatId);
        if (stored.length === 2) break;
        await new Promise((ok) => setTimeout(ok, 200));
      }
      assert.equal(stored[1].metadata.finishReason, "stopped");
      assert.ok(textOf(stored[1]).length < slowText.length && slowText.startsWith(textOf(stored[1]).trim()));

      const resumable = new DefaultChatTransport({ api: `${base}/ai-sdk/chat`, headers: async () => ({ Authorization: `Bearer ${token}` }), body: { resumable: true } });
      const second = new AbortController();
      await stopAt(await resumable.sendMessages({ chatId, messages: [userMessage("slow: more")], trigger: "submit-message", abortSignal: second.signal }));
      second.abort();
      const resumed = await resumable.reconnectToStream({ chatId });
      assert.ok(resumed, "a reply in progress is resumed");
      const done = await last(resumed);
      assert.equal(textOf(done), slowText);
      const after = await load(chatId);
      assert.equal(after.at(-1).id, done.id);
      assert.equal(await resumable.reconnectToStream({ chatId }), null, "nothing in progress: 204");
    });

    test("a client-side tool: its call arrives as tool input, its output continues the same message", async () => {
      const chatId = `tools-${Date.now()}`;
      const tools = [{ name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } }];
      const u = userMessage("tool: weather please");
      const asked = await last(await transport.sendMessages({ chatId, messages: [u], trigger: "submit-message", body: { tools } }));
      const part = asked.parts.find((p) => p.type === "tool-get_weather");
      assert.equal(part.state, "input-available");
      assert.deepEqual(part.input, { city: "Oslo" });
      const answered = { ...asked, parts: asked.parts.map((p) => p === part ? { ...p, state: "output-available", output: { temp: 3 } } : p) };
      const done = await last(await transport.sendMessages({ chatId, messages: [u, answered], trigger: "submit-message", messageId: asked.id, body: { tools } }), answered);
      assert.equal(done.id, asked.id, "the same assistant message continues");
      assert.equal(textOf(done), 'echo tool: {"temp":3}');
      const stored = await load(chatId);
      assert.equal(stored.length, 2);
      assert.equal(stored[1].id, asked.id);
      assert.deepEqual(stored[1].parts.find((p) => p.type === "tool-get_weather").output, { temp: 3 });
      assert.equal(textOf(stored[1]), 'echo tool: {"temp":3}');
    });

    test("a model failure is an error chunk; bad requests and another user's chat fail before any stream", async () => {
      const chatId = `err-${Date.now()}`;
      await assert.rejects(last(await transport.sendMessages({ chatId, messages: [userMessage("fail: now")], trigger: "submit-message" })), /model did not answer/);
      const bad = await fetch(`${base}/ai-sdk/chat`, { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
        body: JSON.stringify({ id: chatId, messages: [], trigger: "submit-message" }) });
      assert.equal(bad.status, 400);
      assert.match((await bad.json()).error.message, /messages/);

      const mine = `mine-${Date.now()}`;
      const a = await last(await transport.sendMessages({ chatId: mine, messages: [userMessage("private")], trigger: "submit-message" }));
      const bob = await signUp("aisdk-bob");
      const bobs = new DefaultChatTransport({ api: `${base}/ai-sdk/chat`, headers: async () => ({ Authorization: `Bearer ${bob}` }) });
      await assert.rejects(bobs.sendMessages({ chatId: mine, messages: [userMessage("x")], trigger: "regenerate-message", messageId: a.id }), /not found/);
      assert.deepEqual(await load(mine, bob), [], "another user sees none of the chat under its id");
      assert.equal(await bobs.reconnectToStream({ chatId: mine }), null);
    });
  });
}
