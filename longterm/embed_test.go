package longterm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chatmemory/backend/prompts"
)

// topics embeds a text as the topic words it holds (one dimension each,
// normalized; a last one for none) and counts its calls.
type topics struct {
	model string
	calls int
	fail  bool
}

var topicWords = []string{"python", "oslo", "coffee", "rust", "cats", "jazz", "tennis", "paris", "sushi", "chess", "guitar", "yoga"}

func (e *topics) Model() string { return e.model }

func (e *topics) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.calls++
	if e.fail {
		return nil, fmt.Errorf("embeddings unavailable")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, len(topicWords)+1)
		n := 0
		for j, w := range topicWords {
			if strings.Contains(strings.ToLower(t), w) {
				v[j], n = 1, n+1
			}
		}
		if n == 0 {
			v[len(topicWords)], n = 1, 1
		}
		for j := range v {
			v[j] /= float32(n)
		}
		out[i] = v
	}
	return out, nil
}

// TestNearFactsMerge: with an embedder, a new fact within cosine 0.9 of a
// known one is merged into it (the higher confidence, both sessions as
// sources, the known wording) without asking the model, and so is a
// second candidate near a first; a distant one is new; facts stored
// before embeddings were on are embedded with the next extraction; a
// failed embedding leaves learning to words; export says what is held.
func TestNearFactsMerge(t *testing.T) {
	forBoth(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		one, two := e.NewSession(t, "alice"), e.NewSession(t, "alice")
		e.model.extract = func(string) string {
			return extraction(nil, fact{"The user prefers Python for scripting tasks.", "preference", 0.8})
		}
		e.converse(t, one, 6, "first") // no embedder yet: stored without a vector
		emb := &topics{model: "topics/13"}
		e.lt.Embedder = emb
		e.model.extract = func(string) string {
			return extraction(nil, fact{"Python is what the user scripts in.", "preference", 0.95},
				fact{"The user lives in Oslo.", "personal", 0.9}, fact{"The user's home is Oslo.", "personal", 0.85})
		}
		e.converse(t, two, 6, "second")
		live := e.live(t, "alice")
		if len(live) != 2 || e.model.resolutions != 0 || emb.calls != 1 {
			t.Fatalf("live facts %s; %d resolutions, %d embedding calls", contents(live), e.model.resolutions, emb.calls)
		}
		for _, f := range live {
			switch {
			case strings.Contains(f.Content, "Python"):
				if f.Content != "The user prefers Python for scripting tasks." || f.Confidence != 0.95 || len(f.Sources) != 2 {
					t.Errorf("merged fact: %+v", f.Fact)
				}
			case f.Content == "The user lives in Oslo.":
				if f.Confidence != 0.9 || len(f.Sources) != 1 {
					t.Errorf("the new fact with its near twin merged in: %+v", f.Fact)
				}
			default:
				t.Errorf("unexpected fact %+v", f.Fact)
			}
		}
		ex, err := e.lt.ExportUser(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(ex)
		if !strings.Contains(string(b), `"embeddings":{"about"`) || !strings.Contains(string(b), `"facts":2`) || !strings.Contains(string(b), "topics/13") {
			t.Errorf("export: %s", b)
		}
		// A failed embedding: learned by words (no merge, no failure).
		emb.fail = true
		e.model.extract = func(string) string { return extraction(nil, fact{"The user likes jazz.", "preference", 0.9}) }
		e.converse(t, two, 6, "third")
		if live := e.live(t, "alice"); len(live) != 3 {
			t.Fatalf("after a failed embedding: %s", contents(live))
		}
	})
}

// TestRelevantFacts: when the block leaves facts out, a turn adds to it
// (after the history; the block stays as stored) the facts it leaves out
// nearest the message (confidence breaking ties), within half the cap;
// when everything fits, or the facts were embedded by another model, it
// adds nothing.
func TestRelevantFacts(t *testing.T) {
	forBoth(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		emb := &topics{model: "topics/13"}
		e.lt.Embedder = emb
		s := e.NewSession(t, "alice")
		var facts []fact
		for i, w := range topicWords {
			facts = append(facts, fact{fmt.Sprintf("The user has a long and detailed interest in %s.", w), "preference", 0.99 - float64(i)*0.01})
		}
		e.model.extract = func(string) string { return extraction(map[string]any{"work": "Engineer."}, facts...) }
		e.lt.Settings.BlockTokens = 80
		e.converse(t, s, 6, "first")
		u, err := e.DB.(store).GetUser(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if !u.BlockCut || u.VectorModel != "topics/13" || strings.Contains(u.Block, "yoga") {
			t.Fatalf("stored block (cut %v, model %q): %s", u.BlockCut, u.VectorModel, u.Block)
		}
		v, _ := emb.Embed(ctx, []string{"any yoga classes near me?"})
		block, n := e.lt.Relevant(u, v[0])
		lines := strings.Split(block, "\n")
		if len(lines) < 2 || lines[0] != prompts.MemoryRelevant || !strings.Contains(lines[1], "yoga") {
			t.Fatalf("relevant facts: %s", block)
		}
		for _, l := range lines[1:] {
			if strings.Contains(u.Block, l) {
				t.Errorf("%q is in the block already", l)
			}
		}
		if c := max(e.Tokens.Text("gpt-4o", block), e.Tokens.Text("gpt-4", block)); c > 40 || c != n {
			t.Fatalf("relevant facts of %d tokens (said %d), half the cap 40", c, n)
		}
		other := *u
		other.VectorModel = "another/13"
		if block, _ := e.lt.Relevant(&other, v[0]); block != "" {
			t.Errorf("facts of another model: %s", block)
		}
		e.lt.Settings.BlockTokens = 2000
		e.lt.Embedder = &topics{model: "topics/13"}
		if err := e.lt.Forget(ctx, "alice", e.live(t, "alice")[0].ID); err != nil { // rebuilds the block
			t.Fatal(err)
		}
		u, _ = e.DB.(store).GetUser(ctx, "alice")
		if block, _ := e.lt.Relevant(u, v[0]); u.BlockCut || block != "" {
			t.Errorf("all facts fit: cut %v, block %s", u.BlockCut, block)
		}
	})
}
