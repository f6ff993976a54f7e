package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/functions"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/recall"
)

// SearchScale is what a search costs on the emulator with many users'
// units, seeded through the API: its latency (the emulator's: what make
// dev and the web app's search box wait for, not production's) and the
// documents it reads (which transfer to production); beside it, in the
// same run, what the search asks of the store timed alone (without the
// embedding and the API). Then, once every unit is also copied into the
// earlier layout (a collection group of units kept under their sessions,
// filtered by userId), the store's part in both layouts, the same units
// in both. The emulator answers every query by going through the whole
// database, so the copy (as many documents more as there are units) is
// made after the searches are timed, not before.
type SearchScale struct {
	Users        int          `json:"users"`
	UnitsPerUser int          `json:"unitsPerUser"`
	Searches     int          `json:"searches"`
	SeedSeconds  float64      `json:"seedSeconds"`
	P50Ms        float64      `json:"p50Ms"`
	P95Ms        float64      `json:"p95Ms"`
	ReadsMean    float64      `json:"readsMean"`
	Store        Latency      `json:"store"`        // the store's part, today's layout, before the copy
	TodayStore   Latency      `json:"todayStore"`   // the same, after the copy
	EarlierStore Latency      `json:"earlierStore"` // the same, of the earlier layout
	Floor        *SearchFloor `json:"floor"`        // each RPC alone, before the copy
}

// Latency is a median and a 95th percentile, in milliseconds.
type Latency struct {
	P50Ms float64 `json:"p50Ms"`
	P95Ms float64 `json:"p95Ms"`
}

// MeasureSearchScale seeds users users with about units exchanges each
// (the conversation fixture's dev templates, in sessions of 25 exchanges,
// each appended in one POST) in a fresh emulator project through the
// HTTP API with embeddings on, then runs searches of the fixture's
// questions through GET /search, round the users, and times what each
// asks of the store in both layouts (see SearchScale).
func MeasureSearchScale(ctx context.Context, users, units, searches int, log func(string, ...any)) (*SearchScale, error) {
	counter := &firestoretest.Counter{}
	client, err := firestoretest.Dial(ctx, fmt.Sprintf("demo-bench-searchscale-%d", time.Now().UnixNano()), counter)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	api, tokens, stop, err := searchAPI(ctx, client, users)
	if err != nil {
		return nil, err
	}
	defer stop()
	per := max(1, units/(convSessions*convExchanges)) // conversations a user
	convs, qs := buildConversations(devConv, users*per, devSeed)
	out := &SearchScale{Users: users, UnitsPerUser: per * convSessions * convExchanges, Searches: searches}
	log("search at scale: seeding %d users with %d exchanges each through the API", users, out.UnitsPerUser)
	start := time.Now()
	err = parallel(ctx, users, users, func(u int) error {
		for c := u * per; c < (u+1)*per; c++ {
			for _, s := range convs[c].sessions {
				if err := api[u].seedExchanges(ctx, tokens[u], s); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out.SeedSeconds = time.Since(start).Seconds()
	log("search at scale: %d searches", searches)
	s := scaleRun{api: api, tokens: tokens, client: client, counter: counter, per: per, users: users}
	if err := s.search(ctx, out, qs); err != nil {
		return nil, err
	}
	if out.Floor, err = s.floor(ctx, min(searches, 30), qs); err != nil {
		return nil, err
	}
	copied, err := copyToEarlierLayout(ctx, client)
	if err != nil {
		return nil, err
	}
	log("search at scale: %d units copied to the earlier layout; the store's part of %d searches in both", copied, searches)
	return out, s.layouts(ctx, out, qs)
}

// scaleRun is a seeded search at scale.
type scaleRun struct {
	api        []*apiClient
	tokens     []string
	client     *firestore.Client
	counter    *firestoretest.Counter
	per, users int
}

// search runs out.Searches searches of qs through the API, each beside
// what it asks of the store, into out.
func (s scaleRun) search(ctx context.Context, out *SearchScale, qs []convQuestion) error {
	var took, today []float64
	for i := range out.Searches {
		q, u := s.question(qs, i)
		before, at := s.counter.Snapshot(), time.Now()
		path := "/search?q=" + url.QueryEscape(q.query)
		if err := s.api[u].call(ctx, s.tokens[u], "GET", path, nil, nil, http.StatusOK); err != nil {
			return err
		}
		took = append(took, ms(time.Since(at)))
		out.ReadsMean += float64(s.counter.Snapshot().Sub(before).Reads)
		d, err := s.storePart(ctx, q.query, u, false)
		if err != nil {
			return err
		}
		today = append(today, ms(d))
	}
	out.ReadsMean /= float64(out.Searches)
	out.P50Ms, out.P95Ms = percentile(took, 50), percentile(took, 95)
	out.Store = Latency{percentile(today, 50), percentile(today, 95)}
	return nil
}

// layouts times, for out.Searches searches of qs, what each asks of the
// store in both layouts (in turn first), into out.
func (s scaleRun) layouts(ctx context.Context, out *SearchScale, qs []convQuestion) error {
	var today, earlier []float64
	for i := range out.Searches {
		q, u := s.question(qs, i)
		for k := range 2 {
			old := (i+k)%2 == 0
			d, err := s.storePart(ctx, q.query, u, old)
			if err != nil {
				return err
			}
			if old {
				earlier = append(earlier, ms(d))
			} else {
				today = append(today, ms(d))
			}
		}
	}
	out.TodayStore = Latency{percentile(today, 50), percentile(today, 95)}
	out.EarlierStore = Latency{percentile(earlier, 50), percentile(earlier, 95)}
	return nil
}

// question is the i-th search's question (spread over them) and its user.
func (s scaleRun) question(qs []convQuestion, i int) (convQuestion, int) {
	q := qs[(i*7919)%len(qs)]
	return q, (q.conv / s.per) % s.users
}

// storePart times what a search of query by user u asks of the store, in
// today's layout or the earlier one.
func (s scaleRun) storePart(ctx context.Context, query string, u int, earlier bool) (time.Duration, error) {
	v, err := searchEmbedder().Embed(ctx, []string{query})
	if err != nil {
		return 0, err
	}
	return storeRPCs(ctx, s.client, uidOf(s.tokens[u]), v[0], query, earlier)
}

// searchEmbedder is the embedder the searches at scale run with: the
// server's default model, the offline stand-in here.
func searchEmbedder() recall.Embedder {
	return app.Config{Embeddings: true, EmbeddingModel: llm.DefaultEmbeddingModel, EmbeddingDimensions: llm.DefaultEmbeddingDimensions}.Embedder()
}

// seedExchanges creates a session and appends s's exchanges in one POST.
func (c *apiClient) seedExchanges(ctx context.Context, token string, s fixtureSession) error {
	var created struct{ ID string }
	if err := c.call(ctx, token, "POST", "/sessions", map[string]any{"title": s.title}, &created, http.StatusCreated); err != nil {
		return err
	}
	var msgs []map[string]any
	for _, x := range s.exchanges {
		msgs = append(msgs, map[string]any{"role": "user", "content": x[0]}, map[string]any{"role": "assistant", "content": x[1]})
	}
	return c.call(ctx, token, "POST", "/sessions/"+created.ID+"/messages", map[string]any{"messages": msgs}, nil, http.StatusCreated)
}

// searchAPI serves the backend on client with embeddings on (the offline
// stand-in) and signs up users: a client and a token for each.
func searchAPI(ctx context.Context, client *firestore.Client, users int) ([]*apiClient, []string, func(), error) {
	tok, err := history.NewTikToken()
	if err != nil {
		return nil, nil, nil, err
	}
	fb, err := newFirebaseApp(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	authClient, err := fb.Auth(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	fcfg := app.Config{ProjectID: authProject(), ChatModel: "gpt-4o-mini", MaxSessionMessages: 1 << 20, ContextStrategy: "summary_buffer",
		WindowExchanges: 10, ModelTimeout: time.Minute, MaxBodyBytes: app.DefaultMaxBodyBytes, SearchesPerMinute: 1 << 20,
		Embeddings: true, EmbeddingModel: llm.DefaultEmbeddingModel, EmbeddingDimensions: llm.DefaultEmbeddingDimensions}
	backend := app.New(fcfg, app.Deps{Store: app.Firestore(client), Auth: &functions.FirebaseVerifier{Client: authClient},
		Model: llm.Offline{}, Embedder: fcfg.Embedder(), Tokens: tok, Log: slog.New(slog.DiscardHandler)})
	backend.Chat.Runner = chat.Now{} // a seeded turn is indexed when its request returns
	api, stop, err := serve(backend.Handler(), users)
	if err != nil {
		return nil, nil, nil, err
	}
	tokens, err := signUpUsers(ctx, users)
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	return api, tokens, stop, nil
}

// WriteSearchScale prints it.
func WriteSearchScale(w io.Writer, s *SearchScale) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "A search on the emulator with %d users' %d exchanges each (seeded through the API in %.0f s): %.0f ms at the median, %.0f ms at p95, %.1f documents read on average (%d searches through GET /search; the emulator's times, not production's).\n\n",
		s.Users, s.UnitsPerUser, s.SeedSeconds, s.P50Ms, s.P95Ms, s.ReadsMean, s.Searches)
	fmt.Fprintf(w, "What a search asks of the store, timed alone in the same run (a query a term, the vector query and the list at once, without the embedding and the API), p50 / p95:\n\n| layout | p50 | p95 |\n|---|---|---|\n")
	fmt.Fprintf(w, "| units in their user's collection (today), beside each search | %.0f ms | %.0f ms |\n", s.Store.P50Ms, s.Store.P95Ms)
	fmt.Fprintf(w, "| the same, once the units were also copied into the earlier layout | %.0f ms | %.0f ms |\n", s.TodayStore.P50Ms, s.TodayStore.P95Ms)
	fmt.Fprintf(w, "| units under their sessions, a collection group filtered by userId (before), same database | %.0f ms | %.0f ms |\n\n", s.EarlierStore.P50Ms, s.EarlierStore.P95Ms)
	writeFloor(w, s.Floor)
}
