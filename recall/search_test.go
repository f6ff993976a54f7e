package recall_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// topics embeds a text by the topics its words name, so that a word and
// its paraphrase ("train", "railway") are near and texts of different
// topics are not: the meaning leg, in miniature. A text naming no topic
// lies on a dimension of its own.
type topics struct{ fail bool }

var topicOf = map[string]int{
	"train": 0, "trains": 0, "railway": 0, "rail": 0,
	"pdf": 1, "pypdf": 1, "document": 1,
	"bergen": 2,
	"hotel":  3, "hotels": 3,
	"ferry": 4, "ferries": 4, "cruise": 4, "cruises": 4, "fjord": 4,
}

const topicDims = 6

func (topics) Model() string { return "topics/6" }

func (e topics) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if e.fail {
		return nil, errs.Errorf(errs.EUNAVAILABLE, "the embedding service is down")
	}
	out := make([][]float32, len(texts))
	for i, text := range texts {
		v := make([]float32, topicDims)
		for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !('a' <= r && r <= 'z') }) {
			if d, ok := topicOf[w]; ok {
				v[d]++
			}
		}
		if !slices.ContainsFunc(v, func(x float32) bool { return x > 0 }) {
			v[topicDims-1] = 1
		}
		var n float64
		for _, x := range v {
			n += float64(x * x)
		}
		for d := range v {
			v[d] /= float32(math.Sqrt(n))
		}
		out[i] = v
	}
	return out, nil
}

// searchWorld is alice's sessions, indexed: a trip (active), a PDF
// question (archived), hotels (deleted), and ferries, whose first
// follow-up was edited into a question about cruises (so the Sunday
// ferries are off its active branch); and bob's train to Bergen.
type searchWorld struct {
	env                         *storetest.Env
	svc                         *recall.Service
	trip, pdfs, hotels, ferries *sessions.Session
	bobs                        *sessions.Session
}

func newSearchWorld(t *testing.T) *searchWorld {
	t.Helper()
	ctx := context.Background()
	db := inprocdb.New()
	w := &searchWorld{env: storetest.NewEnv(t, db), svc: &recall.Service{Embedder: topics{}, Store: db}}
	w.trip = w.session(t, "alice", "Trip", "Which night train goes to Bergen?", "The night train leaves Oslo at 23:00.")
	w.pdfs = w.session(t, "alice", "PDFs", "Recommend a library for reading files", "Try pypdf for reading PDF files.")
	w.hotels = w.session(t, "alice", "Hotels", "Hotels near the station in Bergen?", "Several hotels are close to the station.")
	w.ferries = w.session(t, "alice", "Ferries", "Do ferries go to Bergen?", "Yes, ferries sail daily.",
		"And ferries on Sunday?", "On Sunday they sail twice.")
	w.bobs = w.session(t, "bob", "Bob's", "Is there a train to Bergen for bob?", "Yes, bob, a train leaves at nine.")
	w.fork(t, w.ferries, 1, "Fjord cruises instead?", "Cruises leave the harbour at ten.")
	if _, err := w.env.Sessions.Archive(ctx, "alice", w.pdfs.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := w.env.Sessions.Delete(ctx, "alice", w.hotels.ID); err != nil {
		t.Fatal(err)
	}
	return w
}

// session creates a session of user titled title with the exchanges
// given (question, reply, …), each indexed.
func (w *searchWorld) session(t *testing.T, user, title string, exchange ...string) *sessions.Session {
	t.Helper()
	s := storetest.Must[*sessions.Session](t)(w.env.Sessions.Create(context.Background(), user, sessions.CreateInput{Title: title}))
	w.say(t, s, exchange...)
	return s
}

// say appends the exchanges to s and indexes them.
func (w *searchWorld) say(t *testing.T, s *sessions.Session, exchange ...string) {
	t.Helper()
	var msgs []history.Message
	for i, text := range exchange {
		role := history.RoleUser
		if i%2 == 1 {
			role = history.RoleAssistant
		}
		msgs = append(msgs, w.env.Say(t, s, role, text))
	}
	if n, err := w.svc.Index(context.Background(), w.env.Reload(t, s), msgs); err != nil || n != len(exchange)/2 {
		t.Fatalf("indexed %d of %d exchanges: %v", n, len(exchange)/2, err)
	}
}

// fork makes the branch after message seq of s active and says the
// exchange there.
func (w *searchWorld) fork(t *testing.T, s *sessions.Session, seq int, exchange ...string) {
	t.Helper()
	ctx := context.Background()
	cur := w.env.Reload(t, s)
	base := storetest.Must[*history.Tail](t)(w.env.History.BranchTail(ctx, cur, seq))
	if err := w.env.History.Store.UpdateTail(ctx, s.ID, func(s *sessions.Session, tail *history.Tail) error {
		*tail = *w.env.History.ForkTail(s, base, seq)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	w.say(t, w.env.Reload(t, s), exchange...)
}

// found is each result as "session title/seq" with why it matched.
func found(rs []recall.Result) string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s/%d%v", r.SessionTitle, r.Seq, r.Matched))
	}
	return strings.Join(out, " ")
}

// TestSearch: a search by words and by meaning over the in-process store
// finds the user's exchanges in active and archived sessions, on each
// session's active branch; never another user's, a deleted session's or
// one off its branch; a paraphrase by meaning alone; a quoted query only
// its phrase; within one session when asked; nothing for a query that
// shares neither words nor meaning.
func TestSearch(t *testing.T) {
	w := newSearchWorld(t)
	for _, tc := range []struct {
		name, query, session string
		limit                int
		want                 string
	}{
		{"by words and meaning", "pypdf", "", 10, "PDFs/1[words meaning]"},
		{"a paraphrase, by meaning only: the reply shown", "railway", "", 10, "Trip/1[meaning]"},
		{"a word in several sessions, the shorter exchange first", "Bergen", "", 10, "Ferries/0[words meaning] Trip/0[words meaning]"},
		{"within one session", "Bergen", "trip", 10, "Trip/0[words meaning]"},
		{"another user's is never found", "bob", "", 10, ""},
		{"a deleted session's is never found", "hotels station", "", 10, ""},
		{"off the active branch is not found", "Sunday", "", 10, ""},
		{"the active branch is", "harbour", "", 10, "Ferries/5[words]"},
		{"a quoted phrase", `"night train"`, "", 10, "Trip/0[words meaning]"},
		{"a quoted phrase not written so", `"train night"`, "", 10, ""},
		{"nothing shared", "zebra", "", 10, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sessionID := map[string]string{"": "", "trip": w.trip.ID}[tc.session]
			got, err := w.svc.Search(context.Background(), "alice", tc.query, sessionID, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if found(got) != tc.want {
				t.Errorf("found %q, want %q", found(got), tc.want)
			}
		})
	}
	t.Run("the limit", func(t *testing.T) {
		all, err := w.svc.Search(context.Background(), "alice", "Bergen", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		one, err := w.svc.Search(context.Background(), "alice", "Bergen", "", 1)
		if err != nil || len(all) < 2 || len(one) != 1 || one[0].MessageID != all[0].MessageID {
			t.Errorf("limit 1: %q of %q (%v)", found(one), found(all), err)
		}
	})
	t.Run("what a result says", func(t *testing.T) {
		got, err := w.svc.Search(context.Background(), "alice", "pypdf", "", 10)
		if err != nil || len(got) != 1 {
			t.Fatalf("%+v %v", got, err)
		}
		r := got[0]
		if r.SessionID != w.pdfs.ID || r.Status != sessions.StatusArchived || r.Role != history.RoleAssistant || r.Exact != true ||
			!strings.Contains(r.Snippet, "pypdf") || r.CreatedAt == "" || r.MessageID == "" {
			t.Errorf("result %+v", r)
		}
	})
}

// TestSearchRefuses: a search that could find nothing as asked is refused
// naming its parameter, and a failing embedding service fails the search
// rather than answer from words alone.
func TestSearchRefuses(t *testing.T) {
	w := newSearchWorld(t)
	for _, tc := range []struct {
		name, query, session string
		limit                int
		field                string
	}{
		{"no text", "  ", "", 10, "q:"},
		{"too long", strings.Repeat("a", recall.MaxQueryChars+1), "", 10, "q:"},
		{"limit 0", "train", "", 0, "limit:"},
		{"limit too high", "train", "", recall.MaxResults + 1, "limit:"},
		{"a bad session id", "train", "a/b", 10, "sessionId:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := w.svc.Search(context.Background(), "alice", tc.query, tc.session, tc.limit)
			if errs.CodeOf(err) != errs.EINVALID || !strings.HasPrefix(errs.Message(err), tc.field) {
				t.Errorf("got %v, want invalid naming %s", err, tc.field)
			}
		})
	}
	t.Run("the embedding service down", func(t *testing.T) {
		down := &recall.Service{Embedder: topics{fail: true}, Store: w.svc.Store}
		got, err := down.Search(context.Background(), "alice", "train", "", 10)
		if errs.CodeOf(err) != errs.EUNAVAILABLE || got != nil {
			t.Errorf("got %v, %v", got, err)
		}
	})
}

// TestRecall: a turn's recall finds, in its own session, what is on the
// session's active branch as the turn read it; from every session, the
// user's active and archived ones too, each with its session's title,
// never another user's or a deleted one's; at most k; and given the
// visibility the turn read, it goes by that (here one that says the trip
// was deleted meanwhile).
func TestRecall(t *testing.T) {
	w := newSearchWorld(t)
	ctx := context.Background()
	ferries := w.env.Reload(t, w.ferries)
	for _, tc := range []struct {
		name  string
		text  string
		scope recall.Scope
		k     int
		want  string
	}{
		{"this session, its active branch", "ferries Sunday cruises", recall.Scope{}, 5, "Ferries/4 Ferries/0"},
		{"every session", "train to Bergen", recall.Scope{All: true}, 5, "Trip/0 Ferries/0"},
		{"every session, at most k", "train to Bergen", recall.Scope{All: true}, 1, "Trip/0"},
		{"every session, archived ones too", "pypdf", recall.Scope{All: true}, 5, "PDFs/0"},
		{"never a deleted one", "hotels", recall.Scope{All: true}, 5, ""},
		{"the visibility the turn read", "train to Bergen", recall.Scope{All: true, Known: &recall.Visibility{Deleted: []string{w.trip.ID, w.hotels.ID}}}, 5, "Ferries/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := w.svc.EmbedQuery(ctx, tc.text)
			if err != nil {
				t.Fatal(err)
			}
			got, err := w.svc.Recall(ctx, ferries, tc.text, v, tc.scope, tc.k)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, x := range got {
				if x.UserID != "alice" {
					t.Errorf("recalled %s's", x.UserID)
				}
				out = append(out, fmt.Sprintf("%s/%d", x.SessionTitle, x.Question.Seq))
			}
			if strings.Join(out, " ") != tc.want {
				t.Errorf("recalled %q, want %q", strings.Join(out, " "), tc.want)
			}
		})
	}
	t.Run("the embedding service down", func(t *testing.T) {
		down := &recall.Service{Embedder: topics{fail: true}, Store: w.svc.Store}
		if _, err := down.EmbedQuery(ctx, "train"); errs.CodeOf(err) != errs.EUNAVAILABLE {
			t.Errorf("embedding a query: %v", err)
		}
	})
}
