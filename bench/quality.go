package bench

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// recallFixture is a synthetic user's 20 sessions of 10 exchanges, 40 of
// them targets that a paraphrasing query looks for among exchanges sharing
// the user's everyday words (written before any embedder was measured on
// it).
//
//go:embed recall_fixture.json
var recallFixture []byte

// Quality is how well an embedder finds what was said, on the fixture:
// recall@5 and MRR of search (the target's question or reply among the
// first 5 results) and of recall for a turn (the target among the 5
// exchanges recalled from all sessions).
type Quality struct {
	Embedder        string  `json:"embedder"`
	Queries         int     `json:"queries"`
	Exchanges       int     `json:"exchanges"`
	SearchRecallAt5 float64 `json:"searchRecallAt5"`
	SearchMRR       float64 `json:"searchMrr"`
	RecallRecallAt5 float64 `json:"recallRecallAt5"`
	RecallMRR       float64 `json:"recallMrr"`
}

// MeasureQuality indexes the fixture with e in an in-process store and
// runs its queries through search and recall.
func MeasureQuality(ctx context.Context, e recall.Embedder, tok history.Counter) (*Quality, error) {
	var fx struct {
		Sessions []struct {
			Title   string `json:"title"`
			Targets []struct {
				Q, A, Query string
			} `json:"targets"`
		} `json:"sessions"`
		Fillers []string `json:"fillers"`
	}
	if err := json.Unmarshal(recallFixture, &fx); err != nil {
		return nil, err
	}
	db := inprocdb.New()
	ss, hs := sessions.NewService(db, "gpt-4o-mini"), history.NewService(db, tok)
	svc := &recall.Service{Embedder: e, Store: db}
	type target struct{ query, question, reply string }
	var targets []target
	exchanges := 0
	for si, sf := range fx.Sessions {
		s, err := ss.Create(ctx, "alice", sessions.CreateInput{Title: sf.Title, ID: fmt.Sprintf("fixture%03d", si)})
		if err != nil {
			return nil, err
		}
		say := func(q, a string) (question, reply string, err error) {
			msgs, err := storeExchange(ctx, hs, s, q, a)
			if err != nil {
				return "", "", err
			}
			if s, err = ss.Get(ctx, "alice", s.ID); err != nil {
				return "", "", err
			}
			exchanges++
			_, err = svc.Index(ctx, s, msgs)
			return msgs[0].ID, msgs[1].ID, err
		}
		topic := strings.ToLower(sf.Title)
		for i, f := range fx.Fillers {
			q, a, _ := strings.Cut(strings.ReplaceAll(f, "{t}", topic), "|")
			if _, _, err := say(q, a); err != nil {
				return nil, err
			}
			if i == 2 || i == 5 {
				tg := sf.Targets[i/5]
				qid, rid, err := say(tg.Q, tg.A)
				if err != nil {
					return nil, err
				}
				targets = append(targets, target{tg.Query, qid, rid})
			}
		}
	}
	asker, err := ss.Create(ctx, "alice", sessions.CreateInput{Title: "asking", ID: "asking"})
	if err != nil {
		return nil, err
	}
	q := &Quality{Embedder: e.Model(), Queries: len(targets), Exchanges: exchanges}
	rr := func(i int) float64 { return 1 / float64(i+1) }
	for _, tg := range targets {
		results, err := svc.Search(ctx, "alice", tg.query, "", 5)
		if err != nil {
			return nil, err
		}
		for i, r := range results {
			if r.MessageID == tg.question || r.MessageID == tg.reply {
				q.SearchRecallAt5++
				q.SearchMRR += rr(i)
				break
			}
		}
		v, err := svc.EmbedQuery(ctx, tg.query)
		if err != nil {
			return nil, err
		}
		got, err := svc.Recall(ctx, asker, tg.query, v, recall.Scope{All: true}, 5)
		if err != nil {
			return nil, err
		}
		for i, x := range got {
			if x.Reply.ID == tg.reply {
				q.RecallRecallAt5++
				q.RecallMRR += rr(i)
				break
			}
		}
	}
	if n := float64(len(targets)); n > 0 {
		q.SearchRecallAt5, q.SearchMRR, q.RecallRecallAt5, q.RecallMRR = q.SearchRecallAt5/n, q.SearchMRR/n, q.RecallRecallAt5/n, q.RecallMRR/n
	}
	return q, nil
}

func (q *Quality) String() string {
	return fmt.Sprintf("%s on %d queries over %d exchanges: search recall@5 %.2f, MRR %.2f; recall for a turn recall@5 %.2f, MRR %.2f",
		q.Embedder, q.Queries, q.Exchanges, q.SearchRecallAt5, q.SearchMRR, q.RecallRecallAt5, q.RecallMRR)
}

// QualityEmbedders are the embedders the bench measures on the fixture:
// the offline stand-in (first), without its word vectors too when it has
// them, and the embedding model the environment configures as the server
// reads it (OPENAI_API_KEY or OPENAI_BASE_URL, EMBEDDING_MODEL,
// EMBEDDING_DIMENSIONS), if any.
func QualityEmbedders(getenv func(string) string) ([]recall.Embedder, error) {
	out := []recall.Embedder{StandIn()}
	if out[0].Model() != (llm.Lexical{}).Model() {
		out = append(out, llm.Lexical{})
	}
	cfg, err := app.ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	if e := cfg.Embedder(); e != nil && !cfg.OfflineModel() {
		out = append(out, e)
	}
	return out, nil
}

// StandIn is the offline stand-in as the server builds it here: with the
// word vectors npm installed, when it finds them (see llm.WordVectors).
func StandIn() recall.Embedder { return app.Config{Embeddings: true}.Embedder() }
