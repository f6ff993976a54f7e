package systemtest_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/llm/llmtest"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/prompts"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// historyModel answers chat turns with an echo, titles with the user's
// message, month notes with the titles they list, and backgrounds with
// the notes; notes and backgrounds are counted. block, if set, is called
// on each month note before it is answered.
type historyModel struct {
	notes, backgrounds atomic.Int64
	block              func()
}

func (m *historyModel) install(h *harness) {
	h.model.SetReply(func(r openai.ChatCompletionRequest) llmtest.Response {
		in := ""
		if len(r.Messages) > 1 {
			in = r.Messages[1].Content
		}
		switch r.Messages[0].Content {
		case prompts.MonthNote:
			m.notes.Add(1)
			if m.block != nil {
				m.block()
			}
			var titles []string
			for _, l := range strings.Split(in, "\n") {
				if rest, ok := strings.CutPrefix(l, "- "); ok {
					titles = append(titles, rest[11:]) // after the date
				}
			}
			return llmtest.Response{Content: "Worked on " + strings.Join(titles, " and ") + "."}
		case prompts.Background:
			m.backgrounds.Add(1)
			return llmtest.Response{Content: "Background: " + strings.Join(strings.Fields(in), " ")}
		case prompts.Title:
			user, _, _ := strings.Cut(strings.TrimPrefix(in, "user: "), "\n")
			return llmtest.Response{Content: user}
		case prompts.Extract:
			return llmtest.Response{Content: `{"profile":null,"facts":[]}`}
		case prompts.Resolve:
			return llmtest.Response{Content: `{"decisions":[]}`}
		}
		return llmtest.Echo(r)
	})
}

func (h *harness) memory(token string) longterm.View {
	h.t.Helper()
	var v longterm.View
	h.do("GET", "/memory", token, nil).want(h.t, 200).decode(h.t, &v)
	return v
}

// TestEpisodicHistory: the daily roll-up turns alice's sessions into her
// history, by their titles: a session active in the last 30 days is a line
// of the recent tier, an older one part of its month's note (written by the
// model), which the next turn's memory block shows; a second roll-up at
// the same moment writes nothing; a month more than six months past
// becomes background (written by the model); alice edits and forgets tiers (bad input is 400); a
// purged session's contribution leaves; the export carries it all; bob
// never sees alice's.
func TestEpisodicHistory(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.LongTermMemory = true; c.HistoryShare = 30 })
		m := &historyModel{}
		m.install(h)
		alice, bob := h.signUp(), h.signUp()
		oslo := h.turn(alice.token, map[string]any{"message": "Oslo trip planning"}).SessionID
		h.clock.Advance(20 * sessions.Day)
		h.turn(alice.token, map[string]any{"message": "Invoice parser in Go"})
		h.clock.Advance(20 * sessions.Day)
		h.turn(alice.token, map[string]any{"message": "Violin lessons"})
		h.turn(bob.token, map[string]any{"message": "Bob's secret garden"})
		h.idle()

		r := h.app.RollUpHistories(context.Background(), 0)
		if r.Users != 2 || r.Failed != 0 || !r.Complete || m.notes.Load() != 1 {
			t.Fatalf("roll-up: %+v, %d notes", r, m.notes.Load())
		}
		v := h.memory(alice.token)
		if !strings.Contains(v.History.Recent.Text, "Violin lessons") || !strings.Contains(v.History.Recent.Text, "Invoice parser") ||
			strings.Contains(v.History.Recent.Text, "Oslo") || len(v.History.Recent.Sessions) != 2 {
			t.Errorf("recent: %+v", v.History.Recent)
		}
		if v.History.Months.Text != "Mar 2026: Worked on Oslo trip planning." || len(v.History.Months.Sessions) != 1 || v.History.Months.Sessions[0] != oslo {
			t.Errorf("months: %+v", v.History.Months)
		}
		if v.History.Earlier.Text != "" || v.History.RolledUpAt == nil {
			t.Errorf("earlier %+v, rolled up at %v", v.History.Earlier, v.History.RolledUpAt)
		}
		if b := h.memory(bob.token); strings.Contains(b.History.Recent.Text+b.History.Months.Text, "Violin") {
			t.Errorf("bob sees alice's history: %+v", b.History)
		}
		// The next turn's memory block carries it.
		h.turn(alice.token, map[string]any{"message": "What did I do lately?"})
		reqs := h.turnRequests()
		seen := false
		for _, msg := range reqs[len(reqs)-1].Messages {
			seen = seen || strings.Contains(msg.Content, "In the last 30 days: ") && strings.Contains(msg.Content, "1 to 6 months ago: Mar 2026: Worked on Oslo")
		}
		if !seen {
			t.Errorf("the turn's memory block has no history: %+v", reqs[len(reqs)-1].Messages)
		}
		h.idle()

		// Again at the same moment: nothing to do, nothing written.
		before := h.memory(alice.token)
		if r := h.app.RollUpHistories(context.Background(), 0); r.Failed != 0 || m.notes.Load() != 1 {
			t.Fatalf("second roll-up: %+v, %d notes", r, m.notes.Load())
		}
		if after := h.memory(alice.token); !after.History.RolledUpAt.Equal(*before.History.RolledUpAt) {
			t.Errorf("a second roll-up changed the history: %v → %v", before.History.RolledUpAt, after.History.RolledUpAt)
		}

		// Bad edits are 400s and change nothing; good ones stick.
		for _, bad := range []map[string]any{{}, {"recent": 5}, {"bogus": "x"}, {"earlier": strings.Repeat("x", 601)}} {
			h.do("PATCH", "/memory/history", alice.token, bad).want(t, 400)
		}
		// Seven months on, March is background.
		h.clock.Advance(7 * 31 * sessions.Day)
		h.turn(alice.token, map[string]any{"message": "Back after a long break"})
		h.idle()
		h.app.RollUpHistories(context.Background(), 0)
		v = h.memory(alice.token)
		if v.History.Earlier.Text != "Background: Monthly notes: - 2026-03: Worked on Oslo trip planning." || m.backgrounds.Load() != 1 ||
			!contains(v.History.Earlier.Sessions, oslo) || strings.Contains(v.History.Months.Text, "Oslo") ||
			!strings.Contains(v.History.Recent.Text, "Back after a long break") {
			t.Errorf("seven months on: %+v", v.History)
		}
		var edited longterm.View
		h.do("PATCH", "/memory/history", alice.token, map[string]any{"earlier": "Has played music since childhood."}).want(t, 200).decode(t, &edited)
		if e := edited.History.Earlier; e.Text != "Has played music since childhood." || !e.Edited || len(e.Sessions) != 0 {
			t.Errorf("edited: %+v", e)
		}

		h.do("PATCH", "/memory/history", alice.token, map[string]any{"earlier": ""}).want(t, 200).decode(t, &edited)
		if edited.History.Earlier.Text != "" || edited.History.Earlier.Edited {
			t.Errorf("forgotten: %+v", edited.History.Earlier)
		}

		// The export says what is held; a purge takes its session out.
		var ex struct {
			Memory struct {
				History longterm.History `json:"history"`
			} `json:"memory"`
		}
		h.do("GET", "/account/export", alice.token, nil).want(t, 200).decode(t, &ex)
		if len(ex.Memory.History.Notes)+len(ex.Memory.History.Episodes) == 0 {
			t.Errorf("export's history: %+v", ex.Memory.History)
		}
		recent := h.memory(alice.token).History.Recent.Sessions[0]
		h.do("DELETE", "/sessions/"+recent, alice.token, nil).want(t, 200)
		if _, err := storetest.PurgeAs(context.Background(), h.app.Sessions, alice.uid, recent); err != nil {
			t.Fatal(err)
		}
		v = h.memory(alice.token)
		if strings.Contains(v.History.Recent.Text, "Back after a long break") || contains(v.History.Recent.Sessions, recent) {
			t.Errorf("a purged session's episode stayed: %+v", v.History.Recent)
		}
		h.do("PATCH", "/memory/history", alice.token, map[string]any{"recent": "", "months": ""}).want(t, 200).decode(t, &edited)
		if edited.History.Recent.Text != "" || edited.History.Months.Text != "" {
			t.Errorf("forgot recent and months: %+v", edited.History)
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestErasureMidRollUp: a user erased while the model writes their month
// note has nothing left afterwards: the roll-up's save finds its sessions
// gone and writes nothing back.
func TestErasureMidRollUp(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.LongTermMemory = true; c.HistoryShare = 30 })
		started, release := make(chan struct{}), make(chan struct{})
		var once atomic.Bool
		m := &historyModel{block: func() {
			if once.CompareAndSwap(false, true) {
				close(started)
				<-release
			}
		}}
		m.install(h)
		carol := h.signUp()
		h.turn(carol.token, map[string]any{"message": "Quantum homework"})
		h.clock.Advance(10 * sessions.Day)
		h.turn(carol.token, map[string]any{"message": "Thermodynamics revision"})
		h.idle()
		h.clock.Advance(30 * sessions.Day)
		done := make(chan longterm.RollUpReport)
		go func() { done <- h.app.RollUpHistories(context.Background(), 0) }()
		<-started
		h.do("DELETE", "/account/data", carol.token, nil).want(t, 200)
		close(release)
		if r := <-done; r.Users != 1 {
			t.Errorf("roll-up: %+v", r)
		}
		v := h.memory(carol.token)
		if v.History.Recent.Text != "" || v.History.Months.Text != "" || v.History.RolledUpAt != nil {
			t.Errorf("history after erasure: %+v", v.History)
		}
		h.nothingLeftOf(t, carol) // the roll-up's charge included
	})
}
