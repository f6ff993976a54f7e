package systemtest_test

import (
	"testing"
)

// uiText is a user UIMessage of the given id and text.
func uiText(id, text string) map[string]any {
	return map[string]any{"id": id, "role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}}
}

// TestAISDKSessionIDs: a chat's id may be the id of one of the caller's
// sessions, which it then names (a chat listed from Firestore opens by
// its session's id, one started over POST /chat too): its messages load,
// a message continues it, its reply in progress is stopped there. Another
// user's session id names a chat of that user's own, empty. Both stores.
func TestAISDKSessionIDs(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h, alice, send, load := aiChatHarness(t, backend)
		send(map[string]any{"id": "c1", "trigger": "submit-message", "messages": []any{helloUI}}).want(t, 200)
		sid := load().Messages[1].Metadata.SessionID
		byID := func(token, id string) uiPage {
			var p uiPage
			h.do("GET", "/ai-sdk/chat/"+id+"/messages", token, nil).want(t, 200).decode(t, &p)
			return p
		}
		if p := byID(alice.token, sid); len(p.Messages) != 2 || p.Messages[0].ID != "u1" {
			t.Fatalf("the chat by its session's id: %+v", p)
		}
		send(map[string]any{"id": sid, "trigger": "submit-message", "messages": []any{uiText("u2", "and more")}}).want(t, 200)
		if p := load(); len(p.Messages) != 4 || p.text(2) != "and more" {
			t.Fatalf("a message sent by the session's id did not continue the chat: %+v", p)
		}
		if r := h.do("POST", "/ai-sdk/chat/"+sid+"/stop", alice.token, nil); r.status != 404 {
			t.Errorf("stop with no reply in progress: %d %s", r.status, r.body)
		}

		// A session started over POST /chat opens by its id.
		var started chatResp
		h.do("POST", "/chat", alice.token, map[string]any{"message": "over the plain API"}).want(t, 200).decode(t, &started)
		h.idle()
		if p := byID(alice.token, started.SessionID); len(p.Messages) != 2 || p.text(0) != "over the plain API" {
			t.Errorf("a POST /chat session by its id: %+v", p)
		}

		// Bob naming alice's session gets a chat of his own.
		bob := h.signUp()
		if p := byID(bob.token, sid); len(p.Messages) != 0 {
			t.Errorf("bob sees alice's chat: %+v", p)
		}
		h.do("POST", "/ai-sdk/chat", bob.token, map[string]any{"id": sid, "trigger": "submit-message", "messages": []any{uiText("b1", "bob here")}}).want(t, 200)
		h.idle()
		if p := byID(bob.token, sid); len(p.Messages) != 2 || p.Messages[1].Metadata.SessionID == sid {
			t.Errorf("bob's chat of that id: %+v", p)
		}
		if p := load(); len(p.Messages) != 4 {
			t.Errorf("bob's message reached alice's chat: %+v", p)
		}
	})
}

// TestAISDKEdit: useChat's sendMessage({text, messageId}) sends the
// edited user message under its own id with trigger submit-message and
// messageId: the server writes it beside the original (a version of it)
// and answers it; a retry replays; the original is a version still. A
// message sent over POST /chat (no client id) is edited by its stored id.
// Both stores.
func TestAISDKEdit(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h, alice, send, load := aiChatHarness(t, backend)
		send(map[string]any{"id": "c1", "trigger": "submit-message", "messages": []any{helloUI}}).want(t, 200)
		send(map[string]any{"id": "c1", "trigger": "submit-message", "messages": []any{uiText("u2", "second")}}).want(t, 200)
		before := load()
		edit := map[string]any{"id": "c1", "trigger": "submit-message", "messageId": "u1", "messages": []any{uiText("u1", "hello, edited")}}
		send(edit).want(t, 200)
		p := load()
		if len(p.Messages) != 2 || p.text(0) != "hello, edited" || p.text(1) == before.text(1) {
			t.Fatalf("after the edit: %+v", p)
		}
		v := p.Messages[0].Metadata.Versions
		if len(v) != 2 || v[0].ID != "u1" || v[1].ID != p.Messages[0].ID || p.Messages[0].Metadata.ActiveVersion != 1 {
			t.Fatalf("the edited message's versions: %+v", p.Messages[0].Metadata)
		}
		send(edit).want(t, 200) // a retry replays
		if again := load(); len(again.Messages[0].Metadata.Versions) != 2 || again.text(1) != p.text(1) {
			t.Errorf("a retried edit: %+v", again)
		}
		// Back on the original: the whole first branch.
		h.do("POST", "/sessions/"+p.Messages[0].Metadata.SessionID+"/branch", alice.token, map[string]any{"seq": v[0].Seq}).want(t, 200)
		if back := load(); len(back.Messages) != 4 || back.text(0) != "hello" || back.text(2) != "second" {
			t.Errorf("the original question's branch: %+v", back)
		}
		if r := send(map[string]any{"id": "c1", "trigger": "submit-message", "messageId": "nope", "messages": []any{uiText("nope", "x")}}); r.status != 404 {
			t.Errorf("editing a message that does not exist: %d %s", r.status, r.body)
		}

		// Sent over POST /chat: edited by its stored id.
		var started chatResp
		h.do("POST", "/chat", alice.token, map[string]any{"message": "plain"}).want(t, 200).decode(t, &started)
		h.idle()
		var page uiPage
		h.do("GET", "/ai-sdk/chat/"+started.SessionID+"/messages", alice.token, nil).want(t, 200).decode(t, &page)
		id := page.Messages[0].ID
		send(map[string]any{"id": started.SessionID, "trigger": "submit-message", "messageId": id, "messages": []any{uiText(id, "plain, edited")}}).want(t, 200)
		h.do("GET", "/ai-sdk/chat/"+started.SessionID+"/messages", alice.token, nil).want(t, 200).decode(t, &page)
		if len(page.Messages) != 2 || page.text(0) != "plain, edited" || len(page.Messages[0].Metadata.Versions) != 2 {
			t.Errorf("an unkeyed message edited: %+v", page)
		}
	})
}
