// A typed client for the chat memory backend. Every endpoint's paths,
// parameters, bodies and answers come from docs/openapi.yaml (schema.d.ts
// is generated from it, and `npm run check:client` fails when the two
// drift); requests go through openapi-fetch, streamed turns are parsed
// with eventsource-parser. The Firebase ID token (and the App Check token,
// when App Check is set up) are taken from the Firebase SDK on every call.
import createClient, { type Client, type Middleware } from "openapi-fetch";
import { EventSourceParserStream } from "eventsource-parser/stream";
import type { components, paths } from "./schema";

type Schemas = components["schemas"];
export type Session = Schemas["Session"];
export type Message = Schemas["Message"];
export type ChatRequest = Schemas["ChatRequest"];
export type ChatResponse = Schemas["ChatResponse"];
export type CreateSession = Schemas["CreateSession"];
export type Tool = Schemas["Tool"];
export type ToolCall = Schemas["ToolCall"];
export type ToolResult = Schemas["ToolResult"];
export type MemoryView = Schemas["MemoryView"];
export type ErrorCode = NonNullable<NonNullable<Schemas["Error"]["error"]>["code"]>;
export type SessionChanges = NonNullable<paths["/sessions/{id}"]["patch"]["requestBody"]>["content"]["application/json"];

/** An error the API answered with, or "network" when it could not be reached. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode | "network" | "aborted",
    message: string,
    readonly retryAfter?: number, // seconds, on 429 and 503 (and 409 for a turn in progress)
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/**
 * The events of a streamed turn, in order: session, deltas, the tool calls
 * the reply asks for (if any), done. With tool calls, done's status is
 * "requires_action": run them and send their results with chat({ sessionId,
 * toolResults }).
 */
export type ChatEvent =
  | { type: "session"; sessionId: string; userMessage: Message; replyId: string }
  | { type: "delta"; text: string }
  | { type: "tool_calls"; replyId: string; toolCalls: ToolCall[] }
  | { type: "done"; response: ChatResponse };

export type ClientOptions = {
  baseUrl: string;
  /** The signed-in user's Firebase ID token (auth.currentUser.getIdToken()). */
  idToken: () => Promise<string | null | undefined>;
  /** An App Check token, when the backend runs with APP_CHECK on. */
  appCheckToken?: () => Promise<string>;
  fetch?: typeof fetch;
};

export class ChatMemoryClient {
  /** Every endpoint, typed from the OpenAPI description (openapi-fetch). */
  readonly api: Client<paths>;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly opts: ClientOptions) {
    this.fetchImpl = opts.fetch ?? ((...args) => globalThis.fetch(...args));
    this.api = createClient<paths>({ baseUrl: opts.baseUrl, fetch: this.fetchImpl });
    const auth: Middleware = {
      onRequest: async ({ request }) => {
        await this.authorize(request.headers);
        return request;
      },
    };
    this.api.use(auth);
  }

  private async authorize(headers: Headers) {
    const token = await this.opts.idToken();
    if (token) headers.set("Authorization", "Bearer " + token);
    if (this.opts.appCheckToken) headers.set("X-Firebase-AppCheck", await this.opts.appCheckToken());
  }

  /** The data of an openapi-fetch answer, or the ApiError it carries. */
  private async ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    let res;
    try {
      res = await call;
    } catch (e) {
      throw toNetworkError(e);
    }
    if (res.error !== undefined || !res.response.ok) throw errorOf(res.response.status, res.error, res.response.headers);
    return res.data as T;
  }

  listSessions(query: NonNullable<paths["/sessions"]["get"]["parameters"]["query"]> = {}, signal?: AbortSignal) {
    return this.ok(this.api.GET("/sessions", { params: { query }, signal }));
  }
  createSession(body: CreateSession = {}) {
    return this.ok(this.api.POST("/sessions", { body }));
  }
  getSession(id: string, signal?: AbortSignal) {
    return this.ok(this.api.GET("/sessions/{id}", { params: { path: { id } }, signal }));
  }
  updateSession(id: string, changes: SessionChanges) {
    return this.ok(this.api.PATCH("/sessions/{id}", { params: { path: { id } }, body: changes }));
  }
  archiveSession(id: string) {
    return this.ok(this.api.POST("/sessions/{id}/archive", { params: { path: { id } } }));
  }
  restoreSession(id: string) {
    return this.ok(this.api.POST("/sessions/{id}/restore", { params: { path: { id } } }));
  }
  deleteSession(id: string) {
    return this.ok(this.api.DELETE("/sessions/{id}", { params: { path: { id } } }));
  }
  listMessages(id: string, query: NonNullable<paths["/sessions/{id}/messages"]["get"]["parameters"]["query"]> = {}, signal?: AbortSignal) {
    return this.ok(this.api.GET("/sessions/{id}/messages", { params: { path: { id }, query }, signal }));
  }
  context(id: string, signal?: AbortSignal) {
    return this.ok(this.api.GET("/sessions/{id}/context", { params: { path: { id } }, signal }));
  }
  /** The caller's best matches by meaning and exact phrase, across sessions or in one. */
  search(query: paths["/search"]["get"]["parameters"]["query"], signal?: AbortSignal) {
    return this.ok(this.api.GET("/search", { params: { query }, signal }));
  }
  /** The chat models a session may choose, each with its context window, the default first. */
  listModels(signal?: AbortSignal) {
    return this.ok(this.api.GET("/models", { signal }));
  }
  /** Where the caller stands against the limits now: today's tokens, this minute's turns and appended messages. */
  usage(signal?: AbortSignal) {
    return this.ok(this.api.GET("/usage", { signal }));
  }
  /** Rate a reply "up" or "down" (with an optional comment); the same rating again changes nothing. */
  setFeedback(id: string, messageId: string, body: { rating: "up" | "down"; comment?: string }) {
    return this.ok(this.api.PUT("/sessions/{id}/messages/{messageId}/feedback", { params: { path: { id, messageId } }, body }));
  }
  /** Withdraw a rating. */
  deleteFeedback(id: string, messageId: string) {
    return this.ok(this.api.DELETE("/sessions/{id}/messages/{messageId}/feedback", { params: { path: { id, messageId } } }));
  }
  /** Store a summary your own model made of messages fromSeq..toSeq (the context's compactionDue). */
  recordCompaction(id: string, body: { fromSeq: number; toSeq: number; summary: string }) {
    return this.ok(this.api.POST("/sessions/{id}/compactions", { params: { path: { id } }, body }));
  }
  switchBranch(id: string, seq: number) {
    return this.ok(this.api.POST("/sessions/{id}/branch", { params: { path: { id } }, body: { seq } }));
  }
  stopReply(id: string, replyId: string) {
    return this.ok(this.api.POST("/sessions/{id}/replies/{replyId}/stop", { params: { path: { id, replyId } } }));
  }
  getMemory(signal?: AbortSignal) {
    return this.ok(this.api.GET("/memory", { signal }));
  }
  setMemory(enabled: boolean) {
    return this.ok(this.api.PATCH("/memory", { body: { enabled } }));
  }
  forgetAll() {
    return this.ok(this.api.DELETE("/memory"));
  }
  forgetFact(id: string) {
    return this.ok(this.api.DELETE("/memory/facts/{id}", { params: { path: { id } } }));
  }
  /** Writes parts of the profile ("" clears a part). */
  updateProfile(patch: { work?: string; personal?: string; focus?: string }) {
    return this.ok(this.api.PATCH("/memory/profile", { body: patch }));
  }
  /** Writes tiers of the episodic history in the user's own words, or forgets them with "". */
  updateHistory(patch: { recent?: string; months?: string; earlier?: string }) {
    return this.ok(this.api.PATCH("/memory/history", { body: patch }));
  }
  /** Everything the user owns, as one JSON document. */
  exportAccount(signal?: AbortSignal) {
    return this.ok(this.api.GET("/account/export", { parseAs: "blob", signal }));
  }

  /**
   * One turn, streamed: yields the session (once the message is stored),
   * each piece of the reply, then the stored turn, and returns it. Aborting
   * the signal stops reading; the turn itself completes on the server (use
   * stopReply to stop the reply).
   */
  async *chat(req: ChatRequest, opts: { signal?: AbortSignal } = {}): AsyncGenerator<ChatEvent, ChatResponse> {
    const headers = new Headers({ "Content-Type": "application/json", Accept: "text/event-stream" });
    await this.authorize(headers);
    let res: Response;
    try {
      res = await this.fetchImpl(this.opts.baseUrl + "/chat", {
        method: "POST", headers, signal: opts.signal,
        body: JSON.stringify({ clientMessageId: crypto.randomUUID(), ...req, stream: true }),
      });
    } catch (e) {
      throw toNetworkError(e);
    }
    if (!res.ok || !res.body) {
      let body: unknown;
      try { body = await res.json(); } catch { /* not JSON */ }
      throw errorOf(res.status, body, res.headers);
    }
    const events = res.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
    const reader = events.getReader();
    try {
      for (;;) {
        let next;
        try {
          next = await reader.read();
        } catch (e) {
          throw toNetworkError(e);
        }
        if (next.done) throw new ApiError(0, "network", "The reply stream ended early; the reply is stored and will show in the session.");
        const data = JSON.parse(next.value.data);
        switch (next.value.event) {
          case "session":
            yield { type: "session", sessionId: data.sessionId, userMessage: data.userMessage, replyId: data.replyId };
            break;
          case "delta":
            yield { type: "delta", text: data.text };
            break;
          case "tool_calls":
            yield { type: "tool_calls", replyId: data.replyId, toolCalls: data.toolCalls };
            break;
          case "done":
            yield { type: "done", response: data as ChatResponse };
            return data as ChatResponse;
          case "error":
            throw errorOf(502, data, res.headers);
        }
      }
    } finally {
      reader.releaseLock();
    }
  }
}

function errorOf(status: number, body: unknown, headers: Headers): ApiError {
  const e = (body as { error?: { code?: ErrorCode; message?: string } } | undefined)?.error;
  const retry = Number(headers.get("Retry-After"));
  return new ApiError(status, e?.code ?? "internal", e?.message ?? `${status} error`, retry > 0 ? retry : undefined);
}

function toNetworkError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof DOMException && e.name === "AbortError") return new ApiError(0, "aborted", "The request was cancelled.");
  return new ApiError(0, "network", "The server cannot be reached. Check your connection and try again.");
}
