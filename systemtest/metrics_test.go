package systemtest_test

import (
	"context"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/chatmemory/backend/llm/llmtest"
	"github.com/chatmemory/backend/prompts"
)

// collect reads what the server recorded, by instrument name.
func (h *harness) collect() map[string]metricdata.Metrics {
	h.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.metrics.Collect(context.Background(), &rm); err != nil {
		h.t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// sumWhere is the sum of a counter's points whose attributes include want.
func sumWhere(t *testing.T, m metricdata.Metrics, want ...attribute.KeyValue) int64 {
	t.Helper()
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is not an int64 sum: %T", m.Name, m.Data)
	}
	var n int64
	for _, p := range s.DataPoints {
		match := true
		for _, kv := range want {
			if v, ok := p.Attributes.Value(kv.Key); !ok || v != kv.Value {
				match = false
			}
		}
		if match {
			n += p.Value
		}
	}
	return n
}

// TestMetrics: turns are counted by outcome, with their time to first
// token, backend path and Firestore round trips (the turn's own 2 before
// the model and 1 after); model tokens by kind and task; error answers by
// code and route; ratings. Read from an in-memory reader.
func TestMetrics(t *testing.T) {
	h := newHarness(t)
	h.echoWithUsage("Measured")
	alice := h.signUp()
	c := h.turn(alice.token, map[string]any{"message": "one"})
	h.idle() // the title written after the first reply would make the next claim commit again
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": c.SessionID, "message": "two", "stream": true}).want(t, 200)
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": "no-such-session", "message": "three"}).want(t, 404)
	h.do("PUT", "/sessions/"+c.SessionID+"/messages/"+c.Reply.ID+"/feedback", alice.token, map[string]any{"rating": "up"}).want(t, 200)
	h.idle()

	m := h.collect()
	ok := attribute.String("outcome", "ok")
	if n := sumWhere(t, m["chat.turns"], ok); n != 2 {
		t.Errorf("%d turns ok, want 2", n)
	}
	if n := sumWhere(t, m["chat.turns"], attribute.String("outcome", "not_found")); n != 1 {
		t.Errorf("%d turns not_found, want 1", n)
	}
	if n := sumWhere(t, m["chat.tokens"], attribute.String("kind", "prompt"), attribute.String("task", "reply")); n != 200 {
		t.Errorf("%d reply prompt tokens, want 200", n)
	}
	if n := sumWhere(t, m["chat.tokens"], attribute.String("kind", "completion"), attribute.String("task", "title")); n != 7 {
		t.Errorf("%d title completion tokens, want 7", n)
	}
	if n := sumWhere(t, m["api.errors"], attribute.String("code", "not_found"), attribute.String("route", "POST /chat")); n != 1 {
		t.Errorf("%d not_found errors on POST /chat, want 1", n)
	}
	if n := sumWhere(t, m["chat.feedback"], attribute.String("rating", "up")); n != 1 {
		t.Errorf("%d ratings up, want 1", n)
	}
	for _, name := range []string{"chat.turn.time_to_first_token", "chat.turn.backend_path"} {
		hist, isHist := m[name].Data.(metricdata.Histogram[float64])
		var count uint64
		for _, p := range hist.DataPoints {
			count += p.Count
			if least, _ := p.Min.Value(); least <= 0 {
				t.Errorf("%s: a value of %v", name, least)
			}
		}
		if !isHist || count != 2 {
			t.Errorf("%s: %d turns recorded, want 2 (%T)", name, count, m[name].Data)
		}
	}
	rt, _ := m["chat.turn.firestore_round_trips"].Data.(metricdata.Histogram[int64])
	var count uint64
	var sum int64
	for _, p := range rt.DataPoints {
		count, sum = count+p.Count, sum+p.Sum
	}
	// A turn: its batched read and its claim's commit before the model, its
	// finish's commit after (a streamed one also ends its draft there).
	if count != 2 || sum != 6 {
		t.Errorf("Firestore round trips: %d turns, %d in all; want 2 turns of 3", count, sum)
	}
}

// echoWithUsage makes the model echo, title every session title and report
// 100 prompt and 7 completion tokens for every call.
func (h *harness) echoWithUsage(title string) {
	h.model.SetReply(func(r openai.ChatCompletionRequest) llmtest.Response {
		resp := llmtest.Echo(r)
		if r.Messages[0].Content == prompts.Title {
			resp.Content = title
		}
		resp.PromptTokens, resp.CompletionTokens = 100, 7
		return resp
	})
}
