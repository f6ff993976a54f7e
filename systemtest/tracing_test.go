package systemtest_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// spans records the spans of the whole test binary, once.
var spans = sync.OnceValue(func() *tracetest.SpanRecorder {
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	return rec
})

// TestTraces: a turn sent with a trace context is one trace: the request's
// span, the turn's under it, and under the turn each Firestore call and the
// model call; spans carry ids, strategy and token counts but no content,
// and the turn's log lines carry the trace id where Cloud Logging looks.
func TestTraces(t *testing.T) {
	rec := spans()
	h := newHarness(t)
	alice := h.signUp()
	traceID := fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
	secret := "a message whose words must not be in any span"
	r := doRequest(t, h.srv.URL, "POST", "/chat", alice.token, map[string]any{"message": secret},
		map[string]string{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}).want(t, 200)
	var res chatResp
	r.decode(t, &res)
	h.idle()

	// The request's span ends just after its log line is written.
	var mine []sdktrace.ReadOnlySpan
	waitFor(t, "the request's span to end", func() bool {
		mine = mine[:0]
		done := false
		for _, s := range rec.Ended() {
			if s.SpanContext().TraceID().String() == traceID {
				mine = append(mine, s)
				done = done || s.Name() == "POST /chat"
			}
		}
		return done
	})
	byID := map[string]sdktrace.ReadOnlySpan{}
	var turn, request sdktrace.ReadOnlySpan
	for _, s := range mine {
		byID[s.SpanContext().SpanID().String()] = s
		switch s.Name() {
		case "chat.turn":
			turn = s
		case "POST /chat":
			request = s
		}
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.Emit(), "must not be") {
				t.Errorf("span %s carries content: %s=%s", s.Name(), kv.Key, kv.Value.Emit())
			}
		}
	}
	if request == nil || turn == nil {
		t.Fatalf("no request or turn span among %d spans of the trace", len(mine))
	}
	if request.Parent().SpanID().String() != "00f067aa0ba902b7" || turn.Parent().SpanID() != request.SpanContext().SpanID() {
		t.Errorf("the turn's span is not under the request's, under the caller's")
	}
	attrs := map[string]string{}
	for _, kv := range turn.Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	if attrs["session.id"] != res.SessionID || attrs["context.strategy"] != "summary_buffer" || attrs["context.tokens"] == "" || attrs["reply.tokens"] == "" {
		t.Errorf("the turn's attributes: %v", attrs)
	}
	under := func(s sdktrace.ReadOnlySpan) bool { // s descends from the turn
		for p := s.Parent(); p.IsValid(); {
			if p.SpanID() == turn.SpanContext().SpanID() {
				return true
			}
			parent, ok := byID[p.SpanID().String()]
			if !ok {
				return false
			}
			p = parent.Parent()
		}
		return false
	}
	firestoreCalls, model := 0, 0
	for _, s := range mine {
		switch {
		case strings.HasPrefix(s.Name(), "cloud.google.com/go/firestore.") && under(s):
			firestoreCalls++
		case s.Name() == "llm.generate" && under(s):
			model++
		}
	}
	if firestoreCalls < 2 || model != 1 {
		t.Errorf("under the turn: %d Firestore spans and %d model spans; want at least 2 and 1", firestoreCalls, model)
	}
	if !strings.Contains(h.logs.String(), `"logging.googleapis.com/trace":"projects/`+authProject()+`/traces/`+traceID+`"`) {
		t.Errorf("the request's log line does not carry its trace id")
	}
}
