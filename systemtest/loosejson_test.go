package systemtest_test

import (
	"strings"
	"testing"
)

// TestExactJSON: everywhere a request carries JSON (turns, sessions and
// their metadata, appended messages, tool results, memory, the AI SDK's
// messages, callables), a key naming a field in another case, and text
// holding NUL or another control character but tab, CR and LF, are 400
// naming the field; nothing is stored. Tab, CR and LF pass. Both stores.
func TestExactJSON(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		alice := h.signUp()
		var s struct{ ID string }
		h.do("POST", "/sessions", alice.token, map[string]any{"title": "tab\there\r\nand lines"}).want(t, 201).decode(t, &s)
		part := func(p map[string]any) map[string]any {
			return map[string]any{"id": "c1", "trigger": "submit-message",
				"messages": []any{map[string]any{"id": "u1", "role": "user", "parts": []any{p}}}}
		}
		for _, tc := range []struct {
			method, path, field string
			body                any
		}{
			{"POST", "/chat", "Message", map[string]any{"Message": "hi"}},
			{"POST", "/chat", "message", map[string]any{"message": "a\x00b"}},
			{"POST", "/chat", "toolResults[0].content", map[string]any{"sessionId": s.ID, "toolResults": []any{map[string]any{"toolCallId": "c", "content": "\x1b[31m"}}}},
			{"POST", "/sessions", "title", map[string]any{"title": "a\x00"}},
			{"POST", "/sessions", "metadata.topic", map[string]any{"metadata": map[string]any{"topic": "\x07"}}},
			{"POST", "/sessions", "Title", map[string]any{"Title": "x"}},
			{"PATCH", "/sessions/" + s.ID, "title", map[string]any{"title": "\x00"}},
			{"POST", "/sessions/" + s.ID + "/messages", "messages[0].content", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x\x00"}}}},
			{"POST", "/sessions/" + s.ID + "/messages", "messages[0].Content", map[string]any{"messages": []any{map[string]any{"role": "user", "Content": "x"}}}},
			{"PATCH", "/memory/history", "Recent", map[string]any{"Recent": "x"}},
			{"PATCH", "/memory/history", "recent", map[string]any{"recent": "\x00"}},
			{"PATCH", "/memory/profile", "work", map[string]any{"work": "\x0c"}},
			{"POST", "/ai-sdk/chat", "messages[0].parts[0].text", part(map[string]any{"type": "text", "text": "hi\x00"})},
			{"POST", "/ai-sdk/chat", "messages[0].parts[0].Text", part(map[string]any{"type": "text", "Text": "hi"})},
			{"POST", "/ai-sdk/chat", "messages[0].metadata.note", part(map[string]any{"type": "text", "text": "hi"})},
			{"POST", "/callable/createSession", "data.title", map[string]any{"data": map[string]any{"title": "\x00"}}},
			{"POST", "/callable/createSession", "Data", map[string]any{"Data": map[string]any{}}},
		} {
			body := tc.body
			if tc.field == "messages[0].metadata.note" { // a UI message's own metadata
				b := body.(map[string]any)
				b["messages"].([]any)[0].(map[string]any)["metadata"] = map[string]any{"note": "\x00"}
			}
			r := h.do(tc.method, tc.path, alice.token, body)
			if r.status != 400 || !strings.Contains(string(r.body), tc.field+": ") {
				t.Errorf("%s %s %s: %d %s", tc.method, tc.path, tc.field, r.status, r.body)
			}
		}
		var list struct{ Sessions []struct{ ID, Title string } }
		h.do("GET", "/sessions", alice.token, nil).want(t, 200).decode(t, &list)
		if len(list.Sessions) != 1 || list.Sessions[0].Title != "tab\there\r\nand lines" {
			t.Errorf("sessions: %+v", list.Sessions)
		}
		if msgs := h.messages(alice.token, s.ID); len(msgs) != 0 {
			t.Errorf("messages stored: %+v", msgs)
		}
		var mem struct {
			History struct{ Recent struct{ Text string } }
			Profile struct{ Work struct{ Text string } }
		}
		h.do("GET", "/memory", alice.token, nil).want(t, 200).decode(t, &mem)
		if mem.History.Recent.Text != "" || mem.Profile.Work.Text != "" {
			t.Errorf("memory: %+v", mem)
		}
	})
}
