package functions

import (
	"encoding/json"
	"net/http"

	"github.com/chatmemory/backend/history"
)

// uiStream writes the AI SDK's UI message stream: each chunk a "data:"
// line of JSON, the response marked with x-vercel-ai-ui-message-stream v1.
// Only chunk types the SDK's clients accept are sent (an unknown one
// breaks the client's whole stream), and only those both majors read,
// ai 6.x and 7.x: start, start-step, text-start, text-delta, text-end,
// tool-input-available, finish-step, finish (with a finish reason both
// know: not 7.x's "interrupted") and error. web/e2e/aisdk.test.mjs checks
// each chunk served against each version's own schema.
type uiStream struct {
	*sseWriter
	r *http.Request
}

func newUIStream(w http.ResponseWriter, r *http.Request) *uiStream {
	header := []string{"X-Vercel-AI-UI-Message-Stream", "v1"}
	if closes(r) {
		// end closes the connection: the client must not send its next request on it
		header = append(header, "Connection", "close")
	}
	return &uiStream{sseWriter: newSSE(w, header...), r: r}
}

// begin starts the assistant message messageID (and its first step).
func (s *uiStream) begin(messageID string, metadata map[string]any) {
	s.send(map[string]any{"type": "start", "messageId": messageID, "messageMetadata": metadata})
	s.send(map[string]any{"type": "start-step"})
}

// finish ends the text part textID (if one is open), sends the calls the
// reply asks for, and ends the step, the message (with the stored reply's
// metadata) and the stream.
func (s *uiStream) finish(textID, sessionID string, reply history.Message) {
	if textID != "" {
		s.send(map[string]any{"type": "text-end", "id": textID})
	}
	for _, c := range reply.ToolCalls {
		s.send(map[string]any{"type": "tool-input-available", "toolCallId": c.ID, "toolName": c.Function.Name, "input": toolInput(c.Function.Arguments)})
	}
	s.send(map[string]any{"type": "finish-step"})
	s.send(map[string]any{"type": "finish", "finishReason": uiFinishReason(reply), "messageMetadata": replyMetadata(sessionID, reply)})
	s.write("data: [DONE]\n\n")
	s.end()
}

// fail ends the stream with an error chunk: its text, its code, and
// whether (and after how long) a retry may succeed, where the JSON API
// would send Retry-After.
func (s *uiStream) fail(err error) {
	body := bodyOf(err)
	chunk := map[string]any{"type": "error", "errorText": body.Error.Message, "code": body.Error.Code}
	if body.Error.RetryAfter > 0 {
		chunk["retryable"], chunk["retryAfter"] = true, body.Error.RetryAfter
	}
	s.send(chunk)
	s.write("data: [DONE]\n\n")
	s.end()
}

// send writes one chunk, starting the response with the first.
func (s *uiStream) send(chunk any) { s.event("", chunk) }

// end ends the response now, so that the client's stream (which ends with
// the body, not with [DONE]) ends with the reply even when the work after
// it runs on the turn's goroutine (a Runner of Now). Over HTTP/1.1 it
// takes the connection over, writes the chunked body's end and closes
// it (the headers said Connection: close); where that cannot be done (HTTP/2), the response ends when the
// handler returns.
func (s *uiStream) end() {
	if !s.started || s.gone || !closes(s.r) {
		return
	}
	rc := http.NewResponseController(s.w)
	if rc.Flush() != nil {
		return
	}
	conn, buf, err := rc.Hijack()
	if err != nil {
		return
	}
	s.gone = true
	buf.WriteString("0\r\n\r\n")
	buf.Flush()
	conn.Close()
}

// closes tells whether end closes the connection: over HTTP/1.1.
func closes(r *http.Request) bool {
	return r.ProtoMajor == 1 && r.ProtoAtLeast(1, 1)
}

// toolInput is a call's arguments as the SDK's tool parts hold them: the
// JSON value they are, or the text when they are not JSON.
func toolInput(args string) any {
	var input any = map[string]any{}
	if args != "" && json.Unmarshal([]byte(args), &input) != nil {
		return args
	}
	return input
}

// replyMetadata is what the finish chunk says of the stored reply.
func replyMetadata(sessionID string, m history.Message) map[string]any {
	return map[string]any{"sessionId": sessionID, "replyId": m.ID, "seq": m.Seq, "tokens": m.Tokens,
		"model": m.Metadata.Model, "finishReason": m.Metadata.FinishReason}
}

// uiFinishReason is a reply's finish reason in the SDK's words.
func uiFinishReason(m history.Message) string {
	switch m.Metadata.FinishReason {
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "tool_calls":
		return "tool-calls"
	case "content_filter":
		return "content-filter"
	}
	if len(m.ToolCalls) > 0 {
		return "tool-calls"
	}
	return "other"
}
