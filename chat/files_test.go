package chat_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/attachments/attachmentstest"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/kernel/errs"
)

// withFiles gives w's service the users' uploads, kept in process.
func (w *world) withFiles(detail string) *attachments.Service {
	files := &attachments.Service{Store: w.db, Blobs: inprocdb.NewBlobs(), Now: w.clock.Now}
	w.svc.Files, w.svc.ImageDetail = files, detail
	return files
}

func upload(t *testing.T, files *attachments.Service, user, name string, data []byte) *attachments.Attachment {
	t.Helper()
	a, err := files.Upload(context.Background(), user, attachments.Upload{Name: name, Body: strings.NewReader(string(data))})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestTurnAttachments: what a turn's attachments become, by case: parts of
// the stored message with their tokens (an image's by OpenAI's formula at
// the detail set, a document's text) and counted in the message's tokens;
// the model's request carries an image's bytes and a document's text; an
// id that is not the user's upload is refused naming the field, before
// anything is stored.
func TestTurnAttachments(t *testing.T) {
	png := pngOf(t, 1024, 1024)
	for _, c := range []struct {
		name    string
		detail  string
		files   func(files *attachments.Service) []string
		tokens  []int  // of each part
		content string // what the model is sent of the last part
		err     string // the refusal, if refused
	}{
		{name: "image at auto", detail: "auto", tokens: []int{765}, content: "data:image/png;base64,",
			files: func(f *attachments.Service) []string { return []string{upload(t, f, "alice", "cat.png", png).ID} }},
		{name: "image at low", detail: "low", tokens: []int{85}, content: "data:image/png;base64,",
			files: func(f *attachments.Service) []string { return []string{upload(t, f, "alice", "cat.png", png).ID} }},
		{name: "a PDF and a text", detail: "auto", content: "[document: notes.md]\nship Friday",
			files: func(f *attachments.Service) []string {
				return []string{upload(t, f, "alice", "r.pdf", attachmentstest.PDF("revenue grew")).ID, upload(t, f, "alice", "notes.md", []byte("ship Friday")).ID}
			}},
		{name: "another user's", detail: "auto", err: "attachments[0]: no such attachment",
			files: func(f *attachments.Service) []string { return []string{upload(t, f, "bob", "cat.png", png).ID} }},
		{name: "none such", detail: "auto", err: "attachments[1]: no such attachment",
			files: func(f *attachments.Service) []string {
				return []string{upload(t, f, "alice", "a.txt", []byte("a")).ID, "nope"}
			}},
		{name: "twice", detail: "auto", err: "attachments[1]: an attachment's id, once per message",
			files: func(f *attachments.Service) []string {
				id := upload(t, f, "alice", "a.txt", []byte("a")).ID
				return []string{id, id}
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, chat.Limits{})
			ids := c.files(w.withFiles(c.detail))
			res, err := w.svc.Turn(context.Background(), chat.TurnRequest{UserID: "alice", Message: "look", Attachments: ids})
			if c.err != "" {
				if errs.CodeOf(err) != errs.EINVALID || !strings.Contains(errs.Message(err), c.err) || len(w.model.requests) != 0 {
					t.Fatalf("got %v (model called %d times), want invalid_argument %q", err, len(w.model.requests), c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			parts := res.User.Attachments
			sum := 0
			for i, p := range parts {
				if p.ID != ids[i] || c.tokens != nil && p.Tokens != c.tokens[i] || p.Tokens <= 0 {
					t.Fatalf("part %d: %+v, want id %s and tokens %v", i, p, ids[i], c.tokens)
				}
				sum += p.Tokens
			}
			if len(parts) != len(ids) || res.User.Tokens < sum+1 {
				t.Fatalf("stored %d parts, %d tokens (parts %d)", len(parts), res.User.Tokens, sum)
			}
			req := w.model.last()
			got := req.Parts[ids[len(ids)-1]]
			if !strings.HasPrefix(got.URL+got.Text, c.content) || req.ImageDetail != c.detail {
				t.Fatalf("the model got %.60q at %q, want %q at %q", got.URL+got.Text, req.ImageDetail, c.content, c.detail)
			}
		})
	}
}

// TestOlderImagesByName: an image older than the last history.ImageTurns
// user messages is sent by its name and counted so; the newer ones whole.
func TestOlderImagesByName(t *testing.T) {
	w := newWorld(t, chat.Limits{})
	files := w.withFiles("high")
	png := pngOf(t, 512, 512)
	var sid string
	var first string
	for i := range history.ImageTurns + 1 {
		a := upload(t, files, "alice", fmt.Sprintf("p%d.png", i), png)
		if i == 0 {
			first = a.ID
		}
		res := w.turn(t, chat.TurnRequest{SessionID: sid, Message: fmt.Sprint("turn ", i), Attachments: []string{a.ID}})
		sid = res.Session.ID
		if i == history.ImageTurns {
			if _, sent := w.model.last().Parts[first]; sent {
				t.Fatal("the oldest image was sent whole")
			}
			omitted := res.Context.Messages[0].Attachments[0]
			if !omitted.Omitted || res.Context.Messages[0].Tokens >= 255 {
				t.Fatalf("the oldest message in the context: %+v", res.Context.Messages[0])
			}
			if len(w.model.last().Parts) != history.ImageTurns {
				t.Fatalf("%d images sent whole, want %d", len(w.model.last().Parts), history.ImageTurns)
			}
		}
	}
}

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
