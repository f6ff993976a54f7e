package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// Methods measured on the conversation fixture.
const (
	methodFused   = "search (words + meaning)"
	methodWords   = "words only"
	methodMeaning = "meaning only"
	methodRecall  = "recall in context"
	methodBM25    = "BM25 baseline"
)

// MeasureConversations indexes each part of the conversation fixture with
// e in an in-process store and runs its questions through search (both
// legs fused, and each leg alone), a turn's recall from all sessions, and
// plain Okapi BM25 over the same exchanges; n conversations a part, or,
// with 0, the whole fixture.
func MeasureConversations(ctx context.Context, e recall.Embedder, tok history.Counter, n int) ([]*SearchQuality, error) {
	var out []*SearchQuality
	for _, p := range []struct {
		name string
		t    convTemplates
		n    int
		seed uint64
	}{{"dev", devConv, devConversations, devSeed}, {"held-out", heldOutConv, convConversations, heldOutSeed},
		{partFresh, freshConv, convConversations, freshSeed}} {
		convs, qs := buildConversations(p.t, cmp.Or(n, p.n), p.seed)
		got, err := measureConvPart(ctx, e, tok, p.name, convs, qs)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// convMethod runs a question of conversation c and returns the ids of the
// messages found, best first.
type convMethod func(c int, q string) ([]string, error)

// measureConvPart stores the conversations and measures every method on
// the questions.
func measureConvPart(ctx context.Context, e recall.Embedder, tok history.Counter, name string, convs []conversation, qs []convQuestion) ([]*SearchQuality, error) {
	p, err := storeConvPart(ctx, e, tok, name, convs, qs)
	if err != nil {
		return nil, err
	}
	svc := &recall.Service{Embedder: e, Store: p.db}
	methods := []struct {
		name string
		run  convMethod
	}{
		{methodFused, p.search(ctx, recall.BothLegs, recall.Fusion{})},
		{methodWords, p.search(ctx, recall.WordsOnly, recall.Fusion{})},
		{methodMeaning, p.search(ctx, recall.MeaningOnly, recall.Fusion{})},
		{methodRecall, func(c int, q string) ([]string, error) { return recallIDs(ctx, svc, p.askers[c], q) }},
		{methodBM25, func(c int, q string) ([]string, error) { return p.bases[c].search(q, 10), nil }},
	}
	var out []*SearchQuality
	for _, m := range methods {
		sq, err := p.score(m.name, m.run)
		if err != nil {
			return nil, err
		}
		out = append(out, sq)
	}
	return out, nil
}

// convPart is a part of the conversation fixture stored in an in-process
// store, each conversation as its own user, with its BM25 baseline.
type convPart struct {
	name   string
	e      recall.Embedder
	db     *inprocdb.DB
	convs  []conversation
	qs     []convQuestion
	ids    [][][][2]string // conversation → session → exchange → question and reply ids
	bases  []*bm25
	askers []*sessions.Session // a session of each user to recall in
	units  int
}

// storeConvPart stores the conversations, each as its own user, through
// the backend's services, indexing each exchange as a turn does.
func storeConvPart(ctx context.Context, e recall.Embedder, tok history.Counter, name string, convs []conversation, qs []convQuestion) (*convPart, error) {
	p := &convPart{name: name, e: e, db: inprocdb.New(), convs: convs, qs: qs}
	svc := &recall.Service{Embedder: e, Store: p.db}
	for c, conv := range convs {
		ids, err := storeSessions(ctx, p.db, tok, svc, conv.user, fmt.Sprintf("c%d-", c+1), conv.sessions)
		if err != nil {
			return nil, err
		}
		asker, err := sessions.NewService(p.db, "gpt-4o-mini").Create(ctx, conv.user, sessions.CreateInput{Title: "asking", ID: fmt.Sprintf("asking%d", c+1)})
		if err != nil {
			return nil, err
		}
		var bu []baselineUnit
		for s, fs := range conv.sessions {
			for x, ex := range fs.exchanges {
				bu = append(bu, baselineUnit{id: ids[s][x][1], text: ex[0] + "\n" + ex[1]})
			}
		}
		p.ids, p.askers, p.bases = append(p.ids, ids), append(p.askers, asker), append(p.bases, newBM25(bu))
		p.units += len(bu)
	}
	return p, nil
}

// search is a search of p with the legs and fusion given.
func (p *convPart) search(ctx context.Context, legs recall.Legs, f recall.Fusion) convMethod {
	s := &recall.Service{Embedder: p.e, Store: p.db, Legs: legs, Fusion: f}
	return func(c int, q string) ([]string, error) {
		rs, err := s.Search(ctx, p.convs[c].user, q, "", 10)
		return resultIDs(rs), err
	}
}

func resultIDs(rs []recall.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.MessageID
	}
	return out
}

// recallIDs are the replies of the units a turn of session s recalls for
// q from all sessions (10 of them).
func recallIDs(ctx context.Context, svc *recall.Service, s *sessions.Session, q string) ([]string, error) {
	v, err := svc.EmbedQuery(ctx, q)
	if err != nil {
		return nil, err
	}
	xs, err := svc.Recall(ctx, s, q, v, recall.Scope{All: true}, 10)
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.ID()
	}
	return out, err
}

// score runs every question through run: a question is answered at
// rank r when the first message found of any of its evidence exchanges is
// r-th.
func (p *convPart) score(method string, run convMethod) (*SearchQuality, error) {
	qs, ids := p.qs, p.ids
	sq := &SearchQuality{Part: p.name, Method: method, Queries: len(qs), Exchanges: p.units, ByKind: map[string]float64{},
		At1ByKind: map[string]float64{}, MRRByKind: map[string]float64{}}
	perKind := map[string]int{}
	for _, q := range qs {
		found, err := run(q.conv, q.query)
		if err != nil {
			return nil, err
		}
		want := map[string]bool{}
		for _, ev := range q.evidence {
			x := ids[q.conv][ev[0]][ev[1]]
			want[x[0]], want[x[1]] = true, true
		}
		perKind[q.kind]++
		for i, id := range found {
			if want[id] {
				rr := 1 / float64(i+1)
				sq.MRR, sq.MRRByKind[q.kind] = sq.MRR+rr, sq.MRRByKind[q.kind]+rr
				sq.At1, sq.At1ByKind[q.kind] = sq.At1+b2f(i < 1), sq.At1ByKind[q.kind]+b2f(i < 1)
				sq.At5, sq.ByKind[q.kind] = sq.At5+b2f(i < 5), sq.ByKind[q.kind]+b2f(i < 5)
				sq.At10 += b2f(i < 10)
				break
			}
		}
	}
	n := float64(len(qs))
	sq.MRR, sq.At1, sq.At5, sq.At10 = sq.MRR/n, sq.At1/n, sq.At5/n, sq.At10/n
	for k, c := range perKind {
		sq.ByKind[k] /= float64(c)
		sq.At1ByKind[k] /= float64(c)
		sq.MRRByKind[k] /= float64(c)
	}
	return sq, nil
}

// WriteConversations prints the measurements on the conversation
// fixture side by side: overall, then recall@5, recall@1 and MRR by kind.
func WriteConversations(w io.Writer, qs []*SearchQuality) {
	if len(qs) == 0 {
		return
	}
	fmt.Fprintln(w, "Search quality on the conversation fixture (long multi-session chats, one user each; dev: the fusion was chosen on it; held-out: only measured), the evidence among the first k, mean reciprocal rank over the first 10, and by kind of question (recall@5 / recall@1 / MRR):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| part | method | questions / exchanges | recall@1 | recall@5 | recall@10 | MRR | single | temporal | multi-hop | paraphrase |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, q := range qs {
		fmt.Fprintf(w, "| %s | %s | %d / %d | %.3f | %.3f | %.3f | %.3f |", q.Part, q.Method, q.Queries, q.Exchanges, q.At1, q.At5, q.At10, q.MRR)
		for _, k := range convKinds {
			fmt.Fprintf(w, " %.2f / %.2f / %.2f |", q.ByKind[k], q.At1ByKind[k], q.MRRByKind[k])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}
