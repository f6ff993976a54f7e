package chat_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// fakeRecaller recalls one earlier exchange of another session, and
// records what it was asked.
type fakeRecaller struct {
	texts []string
	all   []bool
	found []recall.Unit // nil: one exchange about a mooring
}

func (f *fakeRecaller) EmbedQuery(context.Context, string) ([]float32, error) {
	return []float32{1, 0}, nil
}

func (f *fakeRecaller) Recall(_ context.Context, s *sessions.Session, text string, _ []float32, scope recall.Scope, k int) ([]recall.Unit, error) {
	f.texts, f.all = append(f.texts, text), append(f.all, scope.All)
	if f.found != nil {
		return f.found, nil
	}
	return []recall.Unit{{SessionID: "elsewhere", SessionTitle: "Boats",
		Question: recall.Excerpt{ID: "q", Content: "What is the mooring number?"},
		Reply:    recall.Excerpt{ID: "r", Content: "It is 47-BRAVO.", CreatedAt: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}}}, nil
}

// TestRecallInTurn: a session that recalls sends the model the exchanges
// found for its message, marked as recalled, with their date and title,
// and asks with the message's text; one that does not recalls nothing.
func TestRecallInTurn(t *testing.T) {
	for _, tc := range []struct {
		mode sessions.Recall
		want bool
	}{{sessions.RecallAll, true}, {sessions.RecallSession, true}, {sessions.RecallOff, false}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			w := newWorld(t, chat.Limits{})
			f := &fakeRecaller{}
			w.svc.Recaller = f
			s := w.session(t, sessions.CreateInput{Context: sessions.ContextSettings{Recall: tc.mode}})
			w.turn(t, chat.TurnRequest{SessionID: s.ID, Message: "which mooring was it?"})
			req := w.model.last()
			got := strings.Contains(req.Context, "47-BRAVO") && strings.Contains(req.Context, `"Boats"`) && strings.Contains(req.Context, "2026-03-01") && !strings.Contains(req.Memory, "47-BRAVO")
			if got != tc.want {
				t.Fatalf("recalled %v, want %v: %q", got, tc.want, req.Context)
			}
			if tc.want && (len(f.texts) != 1 || f.texts[0] != "which mooring was it?" || f.all[0] != (tc.mode == sessions.RecallAll)) {
				t.Errorf("asked %q (all %v)", f.texts, f.all)
			}
		})
	}
}

// TestRecalledLoneMessages: a recalled message with no partner (a
// question never answered, a reply with no question) is shown alone, dated
// by its own time, with no empty turn beside it.
func TestRecalledLoneMessages(t *testing.T) {
	march := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		unit      recall.Unit
		want, not []string
	}{
		{"a question and its reply",
			recall.Unit{Question: recall.Excerpt{ID: "q", Content: "Which mooring?", CreatedAt: march},
				Reply: recall.Excerpt{ID: "r", Content: "47-BRAVO.", CreatedAt: march.AddDate(0, 0, 1)}},
			[]string{"[2026-03-02, \"Boats\"]\nuser: Which mooring?\nassistant: 47-BRAVO."}, nil},
		{"a question never answered",
			recall.Unit{Question: recall.Excerpt{ID: "q", Content: "Which mooring?", CreatedAt: march}},
			[]string{"[2026-03-01, \"Boats\"]\nuser: Which mooring?"}, []string{"assistant:", "0001-01-01"}},
		{"a reply with no question",
			recall.Unit{Reply: recall.Excerpt{ID: "r", Content: "Welcome aboard.", CreatedAt: march}},
			[]string{"[2026-03-01, \"Boats\"]\nassistant: Welcome aboard."}, []string{"user:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, chat.Limits{})
			unit := tc.unit
			unit.SessionID, unit.SessionTitle = "elsewhere", "Boats"
			w.svc.Recaller = &fakeRecaller{found: []recall.Unit{unit}}
			s := w.session(t, sessions.CreateInput{Context: sessions.ContextSettings{Recall: sessions.RecallAll}})
			w.turn(t, chat.TurnRequest{SessionID: s.ID, Message: "which mooring was it?"})
			sent := w.model.last().Context
			for _, want := range tc.want {
				if !strings.Contains(sent, want) {
					t.Errorf("sent %q, want it to hold %q", sent, want)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(sent, not) {
					t.Errorf("sent %q, want no %q", sent, not)
				}
			}
		})
	}
}
