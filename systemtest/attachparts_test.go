package systemtest_test

import (
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/attachments/attachmentstest"
)

type partResp struct {
	ID, Type, Name, Alt string
	Size                int64
	Width, Height       int
	Tokens              int
}

// TestMessagesWithAttachments: a user's message carries a PNG and a PDF
// through POST /chat, an append, the callable and the AI SDK; the model
// receives the image as an image_url part and the PDF's text; reading the
// messages back gives the parts; an id that is not the caller's upload
// (missing, or another user's: the same answer) is a 400 naming the
// field, and so is a file part with a data: URL. Both stores.
func TestMessagesWithAttachments(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		alice, bob := h.signUp(), h.signUp()
		var img, doc, bobs attachments.Attachment
		h.upload(alice.token, "cat.png", "image/png", testPNG(1024, 1024), "a grey cat").want(t, 201).decode(t, &img)
		h.upload(alice.token, "report.pdf", "", attachmentstest.PDF("Quarterly revenue grew"), "").want(t, 201).decode(t, &doc)
		h.upload(bob.token, "dog.png", "image/png", testPNG(2, 2), "").want(t, 201).decode(t, &bobs)

		var turn chatResp
		h.do("POST", "/chat", alice.token, map[string]any{"message": "What is in these?", "attachments": []string{img.ID, doc.ID}}).want(t, 200).decode(t, &turn)
		sent := lastUser(t, h.model.Requests())
		if len(sent.MultiContent) != 3 || sent.MultiContent[0].Text != "What is in these?" ||
			sent.MultiContent[1].ImageURL == nil || !strings.HasPrefix(sent.MultiContent[1].ImageURL.URL, "data:image/png;base64,") ||
			sent.MultiContent[1].ImageURL.Detail != "auto" || !strings.Contains(sent.MultiContent[2].Text, "Quarterly revenue grew") {
			t.Fatalf("the model was sent %+v", sent.MultiContent)
		}
		var msgs struct {
			Messages []struct {
				Role        string
				Content     string
				Tokens      int
				Attachments []partResp
			} `json:"messages"`
		}
		h.do("GET", "/sessions/"+turn.SessionID+"/messages", alice.token, nil).want(t, 200).decode(t, &msgs)
		u := msgs.Messages[0]
		if len(u.Attachments) != 2 || u.Attachments[0].ID != img.ID || u.Attachments[0].Alt != "a grey cat" || u.Attachments[0].Tokens != 765 ||
			u.Attachments[1].Name != "report.pdf" || u.Attachments[1].Tokens < 5 || u.Tokens < 765+u.Attachments[1].Tokens {
			t.Fatalf("the user message read back: %+v", u)
		}

		// An append, and the callable, carry them too; nothing but the
		// caller's uploads is taken.
		h.do("POST", "/sessions/"+turn.SessionID+"/messages", alice.token, map[string]any{"messages": []any{
			map[string]any{"role": "user", "content": "", "attachments": []string{doc.ID}}}}).want(t, 201)
		h.do("POST", "/callable/chat", alice.token, map[string]any{"data": map[string]any{"sessionId": turn.SessionID, "message": "again", "attachments": []string{img.ID}}}).want(t, 200)
		if got := lastUser(t, h.model.Requests()); len(got.MultiContent) != 2 || got.MultiContent[1].ImageURL == nil {
			t.Fatalf("the callable's turn sent %+v", got.MultiContent)
		}
		missing := "AAAAAAAAAAAAAAAAAAAA"
		for _, c := range []struct {
			path, field string
			body        func(id string) map[string]any
		}{
			{"/chat", "attachments[1]", func(id string) map[string]any {
				return map[string]any{"sessionId": turn.SessionID, "message": "x", "attachments": []string{img.ID, id}}
			}},
			{"/sessions/" + turn.SessionID + "/messages", "messages[0].attachments[0]", func(id string) map[string]any {
				return map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x", "attachments": []string{id}}}}
			}},
		} {
			foreign := h.do("POST", c.path, alice.token, c.body(bobs.ID)).want(t, 400)
			absent := h.do("POST", c.path, alice.token, c.body(missing)).want(t, 400)
			if !strings.Contains(string(foreign.body), c.field+": no such attachment") ||
				strings.ReplaceAll(string(foreign.body), bobs.ID, "ID") != strings.ReplaceAll(string(absent.body), missing, "ID") {
				t.Errorf("%s: another user's id answered %s, a missing one %s", c.path, foreign.body, absent.body)
			}
		}
		h.do("POST", "/chat", alice.token, map[string]any{"sessionId": turn.SessionID, "message": "x", "attachments": []string{img.ID, img.ID}}).want(t, 400)
		// A file belongs to the conversation whose message first named it.
		r := h.do("POST", "/chat", alice.token, map[string]any{"message": "elsewhere", "attachments": []string{img.ID}}).want(t, 400)
		if !strings.Contains(string(r.body), "attachments[0]: attachment") || !strings.Contains(string(r.body), "another conversation") {
			t.Errorf("an attachment of another session: %s", r.body)
		}
		testAISDKFiles(t, h, alice)
	})
}

// testAISDKFiles: the AI SDK's file parts name uploads by their url, and
// the chat's messages load with them as file parts.
func testAISDKFiles(t *testing.T, h *harness, alice user) {
	var img, doc attachments.Attachment
	h.upload(alice.token, "cat.png", "image/png", testPNG(8, 8), "").want(t, 201).decode(t, &img)
	h.upload(alice.token, "report.pdf", "", attachmentstest.PDF("Costs fell"), "").want(t, 201).decode(t, &doc)
	file := func(url string) map[string]any {
		return map[string]any{"type": "file", "mediaType": "image/png", "url": url, "filename": "cat.png"}
	}
	msg := func(id string, parts ...any) map[string]any {
		return map[string]any{"id": id, "role": "user", "parts": append([]any{map[string]any{"type": "text", "text": "look"}}, parts...)}
	}
	h.do("POST", "/ai-sdk/chat", alice.token, map[string]any{"id": "files", "trigger": "submit-message",
		"messages": []any{msg("u1", file(h.srv.URL+"/attachments/"+img.ID), file("/attachments/"+doc.ID))}}).want(t, 200)
	if got := lastUser(t, h.model.Requests()); len(got.MultiContent) != 3 || got.MultiContent[1].ImageURL == nil {
		t.Fatalf("the AI SDK's turn sent %+v", got.MultiContent)
	}
	r := h.do("POST", "/ai-sdk/chat", alice.token, map[string]any{"id": "files", "trigger": "submit-message",
		"messages": []any{msg("u2", file("data:image/png;base64,AAAA"))}}).want(t, 400)
	if !strings.Contains(string(r.body), "messages[0].parts[1].url") {
		t.Fatalf("a data: URL answered %s", r.body)
	}
	var page struct {
		Messages []struct {
			Role  string
			Parts []map[string]any
		} `json:"messages"`
	}
	h.do("GET", "/ai-sdk/chat/files/messages", alice.token, nil).want(t, 200).decode(t, &page)
	parts := page.Messages[0].Parts
	if len(parts) != 3 || parts[1]["type"] != "file" || parts[1]["url"] != "/attachments/"+img.ID || parts[2]["mediaType"] != "application/pdf" || parts[2]["filename"] != "report.pdf" {
		t.Fatalf("the loaded user message's parts: %+v", parts)
	}
}

// lastUser is the last user message of the last turn's request the model
// got (not a title's or a summary's: a turn's starts with the operator's
// prompt).
func lastUser(t *testing.T, reqs []openai.ChatCompletionRequest) openai.ChatCompletionMessage {
	t.Helper()
	for i := len(reqs) - 1; i >= 0; i-- {
		msgs := reqs[i].Messages
		if len(msgs) > 1 && msgs[0].Content == testConfig().SystemPrompt && msgs[len(msgs)-1].Role == "user" {
			return msgs[len(msgs)-1]
		}
	}
	t.Fatal("the model got no chat request")
	return openai.ChatCompletionMessage{}
}
