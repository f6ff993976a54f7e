// A phone's chat beyond a turn, for chatapp.test.mjs's phone flow: thumbs,
// edit, versions and regenerate, by taps at 390×844, checked on screen, in
// what the app's useChat sent, and through the API.
import assert from "node:assert/strict";
import { signInToken } from "./helpers.mjs";
import { flip } from "./webapp.mjs";

// phoneVersions drives by taps, on a phone, what a chat does beyond a
// turn: thumbs up, down and withdrawn; the question edited and sent; its
// versions switched back and forth with its arrows, across reloads; its
// new answer regenerated and switched back. Each step is checked on
// screen, in what useChat sent, and in the chat as the API stores it.
// page is signed in as address on the server at base, its chat ending with
// "second question" and its reply of two versions; posts are the page's
// POSTs ({path, body}), as chatapp.test.mjs records them.
export async function phoneVersions(page, base, address, posts) {
  const [Q, A] = ["#messages > li.user:nth-last-child(2)", "#messages > li.assistant:last-child"];
  const token = await signInToken(address);
  const chatId = JSON.parse(posts.find((p) => p.path === "/ai-sdk/chat").body).id;
  const get = async (path) => {
    const r = await fetch(base + path, { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(r.status, 200, `GET ${path}`);
    return r.json();
  };
  const branch = async () => (await get(`/ai-sdk/chat/${chatId}/messages?limit=100`)).messages;
  const sessionId = (await branch())[0].metadata.sessionId;
  const lastTurn = () => JSON.parse(posts.filter((p) => p.path === "/ai-sdk/chat").at(-1).body);
  // The last question and answer, each with the version shown ("text [2/2]"): on screen, and as stored.
  const onScreen = () => page.$$eval("#messages > li:not(.streaming)", (lis) => lis.slice(-2).map((li) => {
    const v = li.querySelector(".version")?.textContent.replace(/ /g, "");
    return li.querySelector(".body").textContent + (v ? ` [${v}]` : "");
  }));
  const stored = async () => (await branch()).slice(-2).map((m) => {
    const text = m.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
    return m.metadata.versions ? `${text} [${m.metadata.activeVersion + 1}/${m.metadata.versions.length}]` : text;
  });
  const shows = async (want) => {
    assert.deepEqual(await onScreen(), want, "on screen");
    assert.deepEqual(await stored(), want, "as stored");
  };
  const tap = async (sel) => {
    await page.click(`${sel} .body`);
    await page.waitForSelector(`${sel}.tapped .tools button`);
  };
  const settled = () => page.waitForFunction(() => !document.querySelector("#messages li.streaming"));
  const reload = async (want) => {
    await page.reload();
    await page.waitForSelector(`${Q} .version`, { state: "attached" });
    await shows(want);
  };

  // Thumbs: up, down, and down again withdraws it; the session counts them.
  const counts = async () => Object.values({ up: 0, down: 0, ...(await get(`/sessions/${sessionId}`)).feedback });
  const asked = ["second question", "echo: second question [2/2]"];
  await shows(asked);
  await tap(A);
  for (const [thumb, pressed, want] of [["up", "true", [1, 0]], ["down", "true", [0, 1]], ["down", "false", [0, 0]]]) {
    await page.click(`${A} .rate-${thumb}`);
    await page.waitForSelector(`${A} .rate-${thumb}[aria-pressed='${pressed}']`);
    assert.deepEqual(await counts(), want, `after ${thumb} (${pressed})`);
  }

  // Edit the question and send it: useChat's sendMessage({text, messageId}),
  // stored as the question's second version, with its own answer.
  await tap(Q);
  await page.click(`${Q} .edit`);
  await page.waitForSelector("#dialog[open]");
  assert.equal(await page.inputValue("#dialog-input"), "second question");
  await page.fill("#dialog-input", "count: edited");
  await page.click("#dialog-ok");
  await page.waitForSelector(`${A}:not(.streaming) .body:has-text('echo: count: edited #')`);
  await settled();
  const edit = lastTurn();
  assert.deepEqual([edit.trigger, edit.messageId, edit.messages.at(-1).parts[0].text], ["submit-message", edit.messages.at(-1).id, "count: edited"]);
  // Stored: the question edited is the first version, the branch shown the new one.
  const { id, metadata: { versions, activeVersion } } = (await branch()).at(-2);
  assert.deepEqual([versions.map((v) => v.id), activeVersion], [[edit.messageId, id], 1], "the stored branch is not the edited one");
  const [, answer] = await onScreen();
  assert.match(answer, /^echo: count: edited #\d+$/);
  const edited = ["count: edited [2/2]", answer];
  await shows(edited);

  // Its arrows, shown still (the message tapped is the one edited): back
  // to the question as first asked, with its answer, and forth and back
  // again, without a tap between (the arrows stay under the version
  // switched to); each branch shown survives a reload.
  assert.ok(await page.isVisible(`${Q} .prev`), "the edited question's arrows are hidden");
  const first = ["second question [1/2]", asked[1]];
  for (const [arrow, at, want] of [["prev", 1, first], ["next", 2, edited], ["prev", 1, first]]) {
    await flip(page, `${Q} .${arrow}`);
    await page.waitForSelector(`${Q} .version:has-text('${at} / 2')`, { state: "attached" });
    await shows(want);
  }
  await reload(first);
  await tap(Q);
  await flip(page, `${Q} .next`);
  await page.waitForSelector(`${Q} .version:has-text('2 / 2')`, { state: "attached" });
  await reload(edited);

  // Regenerate the new answer: a second version of it, then back to the first.
  await tap(A);
  await page.click(`${A} .regenerate`);
  await page.waitForSelector(`${A}:not(.streaming) .version:has-text('2 / 2')`, { state: "attached" });
  await settled();
  assert.deepEqual([lastTurn().trigger, typeof lastTurn().messageId], ["regenerate-message", "string"]);
  const [, again] = await onScreen();
  assert.ok(again !== `${answer} [2/2]` && again.startsWith("echo: count: edited #"), `regenerated: ${again}`);
  await shows(["count: edited [2/2]", again]);
  await flip(page, `${A} .prev`); // no tap: the regenerated reply's arrows show
  await page.waitForSelector(`${A} .version:has-text('1 / 2')`, { state: "attached" });
  await shows(["count: edited [2/2]", `${answer} [1/2]`]);
}
