package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// SearchQuality is how well one method finds the answering exchange on
// one part of the search fixture: recall@k (the answer's question or
// reply among the first k) and mean reciprocal rank (over the first 10),
// overall and recall@5 by kind of question.
type SearchQuality struct {
	Part      string             `json:"part"` // dev or held-out
	Method    string             `json:"method"`
	Queries   int                `json:"queries"`
	Exchanges int                `json:"exchanges"`
	At1       float64            `json:"recallAt1"`
	At5       float64            `json:"recallAt5"`
	At10      float64            `json:"recallAt10"`
	MRR       float64            `json:"mrr"`
	ByKind    map[string]float64 `json:"recallAt5ByKind"`
	At1ByKind map[string]float64 `json:"recallAt1ByKind,omitempty"`
	MRRByKind map[string]float64 `json:"mrrByKind,omitempty"`
}

// Fixture sizes: dozens of sessions of ten exchanges each.
const (
	devSessions, heldOutSessions = 40, 25
	fixtureExchanges             = 10
)

// MeasureSearch indexes each part of the search fixture with e in an
// in-process store and runs its questions through search, a turn's
// recall, and plain Okapi BM25 over the same exchanges (k1 1.2, b 0.75,
// English stop words, no stemming), the baseline.
func MeasureSearch(ctx context.Context, e recall.Embedder, tok history.Counter) ([]*SearchQuality, error) {
	var out []*SearchQuality
	for _, p := range []struct {
		name     string
		part     part
		sessions int
		seed     uint64
	}{{"dev", devPart, devSessions, 1}, {"held-out", heldOutPart, heldOutSessions, 2}} {
		fx, qs := buildFixture(p.part, p.sessions, fixtureExchanges, p.seed)
		got, err := measurePart(ctx, e, tok, p.name, fx, qs)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// fixtureStore is what storeFixture stores into.
type fixtureStore interface {
	sessions.Store
	history.Store
}

// measurePart measures the three methods on one part.
func measurePart(ctx context.Context, e recall.Embedder, tok history.Counter, name string, fx []fixtureSession, qs []labeled) ([]*SearchQuality, error) {
	db := inprocdb.New()
	svc := &recall.Service{Embedder: e, Store: db}
	ids, err := storeFixture(ctx, db, tok, svc, fx)
	if err != nil {
		return nil, err
	}
	var units []baselineUnit
	for i, f := range fx {
		for j, x := range f.exchanges {
			units = append(units, baselineUnit{id: ids[i][j][1], text: x[0] + "\n" + x[1]})
		}
	}
	asker, err := sessions.NewService(db, "gpt-4o-mini").Create(ctx, "alice", sessions.CreateInput{Title: "asking", ID: "asking"})
	if err != nil {
		return nil, err
	}
	base := newBM25(units)
	methods := []struct {
		name string
		run  func(q string) ([]string, error) // ids found, best first (question or reply ids)
	}{
		{"search (words + meaning)", func(q string) ([]string, error) {
			rs, err := svc.Search(ctx, "alice", q, "", 10)
			out := make([]string, len(rs))
			for i, r := range rs {
				out[i] = r.MessageID
			}
			return out, err
		}},
		{"recall in context", func(q string) ([]string, error) {
			v, err := svc.EmbedQuery(ctx, q)
			if err != nil {
				return nil, err
			}
			rs, err := svc.Recall(ctx, asker, q, v, recall.Scope{All: true}, 10)
			out := make([]string, len(rs))
			for i, r := range rs {
				out[i] = r.Reply.ID
			}
			return out, err
		}},
		{"BM25 baseline", func(q string) ([]string, error) { return base.search(q, 10), nil }},
	}
	exchanges := len(units)
	var out []*SearchQuality
	for _, m := range methods {
		sq := &SearchQuality{Part: name, Method: m.name, Queries: len(qs), Exchanges: exchanges, ByKind: map[string]float64{}}
		perKind := map[string]int{}
		for _, q := range qs {
			found, err := m.run(q.query)
			if err != nil {
				return nil, err
			}
			want := ids[q.session][q.fact]
			rank := -1
			for i, id := range found {
				if id == want[0] || id == want[1] {
					rank = i
					break
				}
			}
			perKind[q.kind]++
			if rank >= 0 {
				sq.MRR += 1 / float64(rank+1)
				sq.At1 += b2f(rank < 1)
				sq.At5 += b2f(rank < 5)
				sq.At10 += b2f(rank < 10)
				sq.ByKind[q.kind] += b2f(rank < 5)
			}
		}
		n := float64(len(qs))
		sq.MRR, sq.At1, sq.At5, sq.At10 = sq.MRR/n, sq.At1/n, sq.At5/n, sq.At10/n
		for k, c := range perKind {
			sq.ByKind[k] /= float64(c)
		}
		out = append(out, sq)
	}
	return out, nil
}

// storeFixture stores fx as alice's sessions in db through the backend's
// services, indexing each exchange with svc as a turn's after-work does,
// and returns the question and reply ids of each exchange by session.
func storeFixture(ctx context.Context, db fixtureStore, tok history.Counter, svc *recall.Service, fx []fixtureSession) ([][][2]string, error) {
	return storeSessions(ctx, db, tok, svc, "alice", "fixture", fx)
}

// storeSessions stores fx as user's sessions (their ids prefix and a
// number) in db, as storeFixture does.
func storeSessions(ctx context.Context, db fixtureStore, tok history.Counter, svc *recall.Service, user, prefix string, fx []fixtureSession) ([][][2]string, error) {
	ss, hs := sessions.NewService(db, "gpt-4o-mini"), history.NewService(db, tok)
	ids := make([][][2]string, len(fx)) // session → exchange → question and reply ids
	for i, f := range fx {
		s, err := ss.Create(ctx, user, sessions.CreateInput{Title: f.title, ID: fmt.Sprintf("%s%03d", prefix, i)})
		if err != nil {
			return nil, err
		}
		for _, x := range f.exchanges {
			msgs, err := storeExchange(ctx, hs, s, x[0], x[1])
			if err != nil {
				return nil, err
			}
			if s, err = ss.Get(ctx, user, s.ID); err != nil {
				return nil, err
			}
			if _, err := svc.Index(ctx, s, msgs); err != nil {
				return nil, err
			}
			ids[i] = append(ids[i], [2]string{msgs[0].ID, msgs[1].ID})
		}
	}
	return ids, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// baselineUnit is an exchange as the baseline indexes it.
type baselineUnit struct{ id, text string }

// bm25 is plain Okapi BM25 over whole exchanges: words lower-cased,
// English stop words out, no stemming, exact document frequencies.
type bm25 struct {
	units []baselineUnit
	tf    []map[string]int
	lens  []int
	df    map[string]int
	avg   float64
}

func newBM25(units []baselineUnit) *bm25 {
	b := &bm25{units: units, df: map[string]int{}}
	for _, u := range units {
		tf := map[string]int{}
		words := plainWords(u.text)
		for _, w := range words {
			tf[w]++
		}
		for w := range tf {
			b.df[w]++
		}
		b.tf, b.lens = append(b.tf, tf), append(b.lens, len(words))
		b.avg += float64(len(words))
	}
	b.avg /= float64(len(units))
	return b
}

func (b *bm25) search(q string, k int) []string {
	terms := map[string]bool{}
	for _, w := range plainWords(q) {
		terms[w] = true
	}
	type scored struct {
		id string
		s  float64
	}
	var out []scored
	n := float64(len(b.units))
	for i, u := range b.units {
		var s float64
		for t := range terms {
			tf := float64(b.tf[i][t])
			if tf == 0 {
				continue
			}
			df := float64(b.df[t])
			s += math.Log(1+(n-df+0.5)/(df+0.5)) * tf * 2.2 / (tf + 1.2*(0.25+0.75*float64(b.lens[i])/b.avg))
		}
		if s > 0 {
			out = append(out, scored{u.id, s})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].s > out[j].s })
	ids := make([]string, 0, k)
	for _, x := range out[:min(k, len(out))] {
		ids = append(ids, x.id)
	}
	return ids
}

// plainWords are text's words, lower-cased, without English stop words
// (the same list search uses) and without stemming.
func plainWords(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
		if !recall.StopWord(w) {
			out = append(out, w)
		}
	}
	return out
}

// WriteSearchQuality prints the measurements side by side.
func WriteSearchQuality(w io.Writer, qs []*SearchQuality) {
	if len(qs) == 0 {
		return
	}
	fmt.Fprintln(w, "Search quality on the labeled fixture (dev: any change may be tried on it; held-out: only measured), the answering exchange among the first k, mean reciprocal rank, and recall@5 by kind of question:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| part | method | questions / exchanges | recall@1 | recall@5 | recall@10 | MRR | word | entity | paraphrase | temporal |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, q := range qs {
		fmt.Fprintf(w, "| %s | %s | %d / %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", q.Part, q.Method, q.Queries, q.Exchanges,
			q.At1, q.At5, q.At10, q.MRR, q.ByKind["word"], q.ByKind["entity"], q.ByKind["paraphrase"], q.ByKind["temporal"])
	}
	fmt.Fprintln(w)
}

// storeExchange stores question and reply as the next messages of fixture
// session s, as history plans them and the store commits them: below the
// API, as a quality fixture may be (it measures ranking, not cost). The
// fixtures' sessions have fixed ids, and the in-process store orders a
// session's units by their messages' seqs, not by their random ids: ties
// between units break the same way every run, and the quality measured
// is the same every run.
func storeExchange(ctx context.Context, hs *history.Service, s *sessions.Session, question, reply string) ([]history.Message, error) {
	plan, err := hs.Prepare(s, "", history.Draft{Role: history.RoleUser, Content: question}, history.Draft{Role: history.RoleAssistant, Content: reply})
	if err != nil {
		return nil, err
	}
	stored, err := hs.Store.Append(ctx, s.ID, "", plan)
	if err != nil {
		return nil, err
	}
	return stored.Messages, nil
}
