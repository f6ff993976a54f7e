package systemtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/llm/llmtest"
	"github.com/chatmemory/backend/prompts"
)

// holdFirst holds the first call that reaches it until released, and says
// when one has arrived.
type holdFirst struct {
	once              sync.Once
	arrived, released chan struct{}
}

func newHoldFirst() *holdFirst {
	return &holdFirst{arrived: make(chan struct{}), released: make(chan struct{})}
}

func (g *holdFirst) hasArrived() bool {
	select {
	case <-g.arrived:
		return true
	default:
		return false
	}
}

func (g *holdFirst) hold() {
	first := false
	g.once.Do(func() { first = true; close(g.arrived) })
	if first {
		<-g.released
	}
}

// doClosing is h.do on a connection of its own: the server serves a
// connection's next request only once the handler before it returned,
// after-turn work included, and the request that follows must not wait.
func (h *harness) doClosing(method, path, token string, body any) response {
	h.t.Helper()
	h.sent.Add(1)
	return doRequest(h.t, h.srv.URL, method, path, token, body, map[string]string{"Connection": "close"})
}

// nothingLeftOf fails t if anything of u is stored: their export (made
// by the store, so it works for an account deleted in Auth too) holds no
// session, no usage and empty memory, and on Firestore no document of any
// collection the server writes carries u's id.
func (h *harness) nothingLeftOf(t *testing.T, u user) {
	t.Helper()
	var buf bytes.Buffer
	if err := h.app.Privacy.Export(context.Background(), u.uid, &buf); err != nil {
		t.Fatal(err)
	}
	var export struct {
		Sessions    []any `json:"sessions"`
		Usage       any   `json:"usage"`
		Attachments []any `json:"attachments"`
		Memory      struct {
			Facts   []any `json:"facts"`
			Profile struct {
				Work, Personal, Focus struct{ Text string }
			} `json:"profile"`
		} `json:"memory"`
	}
	if err := json.Unmarshal(buf.Bytes(), &export); err != nil {
		t.Fatalf("export %s: %v", buf.String(), err)
	}
	if len(export.Sessions) != 0 || export.Usage != nil || len(export.Attachments) != 0 {
		t.Errorf("after erasure the export holds %d sessions, usage %v and %d attachments", len(export.Sessions), export.Usage, len(export.Attachments))
	}
	if m := export.Memory; len(m.Facts) != 0 || m.Profile.Work.Text != "" || m.Profile.Personal.Text != "" || m.Profile.Focus.Text != "" {
		t.Errorf("after erasure memory holds %+v", m)
	}
	if keys, err := h.blobs.List(context.Background(), attachments.Prefix(u.uid)); err != nil || len(keys) != 0 {
		t.Errorf("after erasure the bucket holds %v (%v)", keys, err)
	}
	if h.firestore == nil {
		return
	}
	for _, group := range []string{"chat_sessions", "messages", "context", "compactions", "recall", "chat_usage",
		"usageDays", "turnSlots", "sessionLists", "users", "memory", "facts", "chat_purges", "chat_accounts",
		"chat_attachments", "chat_attachment_quotas"} {
		snaps, err := h.firestore.CollectionGroup(group).Where("userId", "==", u.uid).Documents(context.Background()).GetAll()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range snaps {
			t.Errorf("after erasure %s holds %v", s.Ref.Path, s.Data())
		}
	}
}

// TestErasureFencesAfterTurnWork: DELETE /account/data while the work
// after a reply is in flight (held at its model or embedding call) leaves
// nothing of the user once that work ends: a title and its charge, a
// summary and its charge, learning and its charge, an appended exchange's
// embedding and its charge. Both stores.
func TestErasureFencesAfterTurnWork(t *testing.T) {
	long := strings.Repeat("words about the garden plan ", 30)
	for _, tc := range []struct {
		name   string
		prompt string // the model call held; "" holds the embedding
		act    func(h *harness, g *holdFirst, u user)
	}{
		{"title", prompts.Title, func(h *harness, g *holdFirst, u user) {
			h.doClosing("POST", "/chat", u.token, map[string]any{"message": "Plan my garden"})
		}},
		{"summary", prompts.Summary, func(h *harness, g *holdFirst, u user) {
			id := h.newSession(u.token, map[string]any{"title": "garden", "memory": map[string]any{"budgetTokens": 1000}})
			for i := 0; i < 12 && !g.hasArrived(); i++ {
				h.doClosing("POST", "/chat", u.token, map[string]any{"sessionId": id, "message": fmt.Sprint(i, long)})
			}
		}},
		{"learning", prompts.Extract, func(h *harness, g *holdFirst, u user) {
			id := h.newSession(u.token, map[string]any{"title": "bees"})
			for i := 0; i < 12 && !g.hasArrived(); i++ {
				h.doClosing("POST", "/chat", u.token, map[string]any{"sessionId": id, "message": fmt.Sprint("I keep bees, hive ", i)})
			}
		}},
		{"embedding after an append", "", func(h *harness, g *holdFirst, u user) {
			id := h.newSession(u.token, map[string]any{"title": "appended"})
			h.doClosing("POST", "/sessions/"+id+"/messages", u.token, map[string]any{"messages": []map[string]any{
				{"role": "user", "content": "Where do tomatoes grow best?"}, {"role": "assistant", "content": "In full sun."}}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			onBothStores(t, func(t *testing.T, backend string) {
				h := newHarnessOn(t, backend, func(c *app.Config) { c.LongTermMemory, c.Embeddings = true, true })
				g := newHoldFirst()
				h.model.SetReply(func(r openai.ChatCompletionRequest) llmtest.Response {
					if tc.prompt != "" && r.Messages[0].Content == tc.prompt {
						g.hold()
					}
					switch r.Messages[0].Content {
					case prompts.Extract:
						return llmtest.Response{Content: `{"profile":{"work":null,"personal":"Keeps bees.","focus":null},"facts":[{"content":"The user keeps bees.","category":"personal","confidence":0.9}]}`}
					case prompts.Summary:
						return llmtest.Response{Content: "They planned a garden."}
					}
					return llmtest.Echo(r)
				})
				if tc.prompt == "" {
					h.model.SetEmbeddingGate(func(in []string) {
						if strings.Contains(in[0], "tomatoes") {
							g.hold()
						}
					})
				}
				alice := h.signUp()
				done := make(chan struct{})
				go func() { defer close(done); tc.act(h, g, alice) }()
				<-g.arrived
				h.do("DELETE", "/account/data", alice.token, nil).want(t, 200)
				close(g.released)
				<-done
				h.idle()
				h.nothingLeftOf(t, alice)
			})
		})
	}
}
