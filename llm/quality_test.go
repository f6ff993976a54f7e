package llm_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// TestRecallQuality measures the offline stand-in on a labeled fixture
// (testdata/recall_fixture.json: a synthetic user's 20 sessions of 10
// exchanges, 40 of them targets that a paraphrasing query looks for among
// exchanges sharing the user's everyday words): recall@5 and MRR of
// search (the target's question or reply among the first 5 results) and
// of recall for a turn (the target among the 5 exchanges recalled from
// all sessions). The stand-in must reach recall@5 ≥ 0.8 on both.
func TestRecallQuality(t *testing.T) {
	var fx struct {
		Sessions []struct {
			Title   string `json:"title"`
			Targets []struct {
				Q, A, Query string
			} `json:"targets"`
		} `json:"sessions"`
		Fillers []string `json:"fillers"`
	}
	data, err := os.ReadFile("testdata/recall_fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e := storetest.NewEnv(t, inprocdb.New())
	svc := &recall.Service{Embedder: llm.Lexical{}, Store: e.DB}
	type target struct {
		query, question, reply string
	}
	var targets []target
	for _, sf := range fx.Sessions {
		s := storetest.Must[*sessions.Session](t)(e.Sessions.Create(ctx, "alice", sessions.CreateInput{Title: sf.Title}))
		say := func(q, a string) (history.Message, history.Message) {
			qm := e.Say(t, s, history.RoleUser, q)
			am := e.Say(t, s, history.RoleAssistant, a)
			if err := svc.Index(ctx, e.Reload(t, s), &qm, &am); err != nil {
				t.Fatal(err)
			}
			return qm, am
		}
		topic := strings.ToLower(sf.Title)
		for i, f := range fx.Fillers {
			q, a, _ := strings.Cut(strings.ReplaceAll(f, "{t}", topic), "|")
			say(q, a)
			if i == 2 || i == 5 {
				tg := sf.Targets[i/5]
				qm, am := say(tg.Q, tg.A)
				targets = append(targets, target{tg.Query, qm.ID, am.ID})
			}
		}
	}
	if len(targets) != 40 {
		t.Fatalf("%d targets", len(targets))
	}
	asker := storetest.Must[*sessions.Session](t)(e.Sessions.Create(ctx, "alice", sessions.CreateInput{Title: "asking"}))
	var searchHits, recallHits int
	var searchRR, recallRR float64
	for _, tg := range targets {
		results, err := svc.Search(ctx, "alice", tg.query, "", 5)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range results {
			if r.MessageID == tg.question || r.MessageID == tg.reply {
				searchHits++
				searchRR += 1 / float64(i+1)
				break
			}
		}
		got, err := svc.Recall(ctx, asker, tg.query, true, 5)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range got {
			if x.Reply.ID == tg.reply {
				recallHits++
				recallRR += 1 / float64(i+1)
				break
			}
		}
	}
	n := float64(len(targets))
	t.Logf("offline stand-in on %d queries over %d exchanges: search recall@5 %.2f, MRR %.2f; recall for a turn recall@5 %.2f, MRR %.2f",
		len(targets), len(fx.Sessions)*(len(fx.Fillers)+2), float64(searchHits)/n, searchRR/n, float64(recallHits)/n, recallRR/n)
	if float64(searchHits)/n < 0.8 || float64(recallHits)/n < 0.8 {
		t.Errorf("recall@5 under 0.8: search %d/%d, recall %d/%d", searchHits, len(targets), recallHits, len(targets))
	}
}
