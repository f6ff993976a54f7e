// A small client for the backend's HTTP API: JSON errors become ApiError,
// and a chat turn streams its reply as server-sent events.

export class ApiError extends Error {
  constructor(public status: number, public code: string, message: string) {
    super(message);
  }
}

export type Message = { id: string; seq: number; parentSeq?: number; role: string; content: string };

// A turn that branches: answer a message anew, or send an edited one.
export type Fork = { regenerate?: string; edit?: string };

export class Api {
  // appCheck, when App Check is set up, gives the token for the
  // X-Firebase-AppCheck header the backend checks (APP_CHECK).
  constructor(private base: string, private token: () => Promise<string>, private appCheck?: () => Promise<string>) {}

  async request(method: string, path: string, body?: unknown): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(this.base + path, {
        method,
        headers: {
          Authorization: "Bearer " + (await this.token()),
          ...(this.appCheck ? { "X-Firebase-AppCheck": await this.appCheck() } : {}),
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      throw new ApiError(0, "network", "The server cannot be reached. Check your connection and try again.");
    }
    if (!res.ok) {
      let code = "error", message = `${res.status} ${res.statusText}`;
      try {
        const j = await res.json();
        code = j.error?.code ?? code;
        message = j.error?.message ?? message;
      } catch { /* not JSON */ }
      if (res.status === 429) message += ` (retry in ${res.headers.get("Retry-After") ?? "a moment"} s)`;
      throw new ApiError(res.status, code, message);
    }
    return res;
  }

  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.request(method, path, body);
    return res.status === 204 ? (undefined as T) : ((await res.json()) as T);
  }

  // stop asks a streaming reply to stop, wherever it runs; it is stored
  // with what it said so far.
  stop(sessionId: string, replyId: string): Promise<unknown> {
    return this.json("POST", `/sessions/${sessionId}/replies/${replyId}/stop`);
  }

  // switchBranch shows the branch through message seq (its latest version
  // of every later message); the next turn continues it.
  switchBranch(sessionId: string, seq: number): Promise<unknown> {
    return this.json("POST", `/sessions/${sessionId}/branch`, { seq });
  }

  // chat sends one message (or, with fork, regenerates a reply or sends an
  // edited message) and calls back as the turn streams: the session once
  // the message is stored, each piece of the reply, then the reply.
  async chat(
    sessionId: string | null,
    message: string,
    on: { session(id: string, replyId: string): void; delta(text: string): void; done(reply: Message): void },
    fork: Fork = {},
  ): Promise<void> {
    const res = await this.request("POST", "/chat", {
      sessionId: sessionId ?? undefined,
      message: fork.regenerate ? undefined : message,
      clientMessageId: crypto.randomUUID(),
      stream: true,
      ...fork,
    });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let end: number;
      while ((end = buf.indexOf("\n\n")) >= 0) {
        const chunk = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const event = /^event: (.*)$/m.exec(chunk)?.[1];
        const data = JSON.parse(/^data: (.*)$/m.exec(chunk)?.[1] ?? "null");
        if (event === "session") on.session(data.sessionId, data.replyId);
        else if (event === "delta") on.delta(data.text);
        else if (event === "done") on.done(data.reply);
        else if (event === "error") throw new ApiError(502, data.error.code, data.error.message);
      }
    }
  }
}
