package longterm

import (
	"context"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/chatmemory/backend/kernel/vector"
	"github.com/chatmemory/backend/prompts"
	"github.com/chatmemory/backend/sessions"
)

// mergeNear embeds the candidates, and the live facts not yet embedded
// with the current model, in one request; a candidate within
// Settings.Merge cosine similarity of a live fact (or of a candidate kept
// before it) is merged into it (the higher confidence, both sources, the
// known wording) instead of stored twice. It returns the candidates left,
// each with its vector. Without an embedder, or if embedding fails (logged),
// the candidates pass as they are and learning goes on by words.
func (svc *Service) mergeNear(ctx context.Context, s *sessions.Session, u *User, cands []candidate, src Source, now time.Time) []candidate {
	if svc.Embedder == nil || len(cands) == 0 {
		return cands
	}
	model := svc.Embedder.Model()
	var texts []string
	var stale []int
	for i := range u.Facts {
		if u.VectorModel != model || len(u.Facts[i].Vector) == 0 {
			stale = append(stale, i)
			texts = append(texts, u.Facts[i].Content)
		}
	}
	for _, c := range cands {
		texts = append(texts, c.fact.Content)
	}
	vs, err := svc.Embedder.Embed(ctx, texts)
	if err != nil || len(vs) != len(texts) {
		if svc.Log != nil {
			svc.Log.WarnContext(ctx, "long-term memory: embedding facts failed; near-duplicates are judged by words only", "sessionId", s.ID)
		}
		return cands
	}
	for j, i := range stale {
		u.Facts[i].Vector = vs[j]
	}
	u.VectorModel = model
	var kept []candidate
	for k, c := range cands {
		v := vs[len(stale)+k]
		var into *Fact
		best := svc.Settings.Merge
		for i := range u.Facts {
			if f := &u.Facts[i]; f.Live() {
				if sim := 1 - vector.Cosine(v, f.Vector); sim >= best {
					into, best = f, sim
				}
			}
		}
		for i := range kept {
			if sim := 1 - vector.Cosine(v, kept[i].fact.Vector); sim >= best {
				into, best = &kept[i].fact, sim
			}
		}
		if into != nil {
			into.Confidence = max(into.Confidence, c.fact.Confidence)
			into.LastConfirmedAt = now
			into.confirm(src)
			continue
		}
		c.fact.Vector = v
		kept = append(kept, c)
	}
	return kept
}

// WithFacts returns u with its live facts: u itself, or a copy with them
// read if u was read without them.
func (svc *Service) WithFacts(ctx context.Context, u *User) (*User, error) {
	if !u.Partial {
		return u, nil
	}
	facts, err := svc.Store.LiveFacts(ctx, u.UserID)
	if err != nil {
		return nil, err
	}
	c := *u
	c.Facts, c.Partial = facts, false
	return &c, nil
}

// Relevant is what a turn adds to u's block for a message embedded as v
// (with the embedder's model): the live facts the block leaves out that
// are most relevant to the message (by cosine similarity to the
// hundredth, effective confidence breaking ties), under
// prompts.MemoryRelevant, within half the block's cap, and their tokens.
// Nothing when every fact is in the block, or the facts are not embedded
// with that model. The block itself stays as it is: a turn sends these
// after the history, so that the start of its request does not change
// with each message.
func (svc *Service) Relevant(u *User, v []float32) (string, int) {
	if svc.Embedder == nil || !u.BlockCut || u.VectorModel != svc.Embedder.Model() || len(v) == 0 {
		return "", 0
	}
	var out []Fact
	sim := map[string]float64{}
	for _, f := range byEffective(u.Facts, svc.now(), svc.Settings.DecayPerWeek) {
		if len(f.Vector) > 0 && !strings.Contains(u.Block+"\n", "\n- "+f.Content+"\n") {
			sim[f.ID] = math.Round(100*(1-vector.Cosine(v, f.Vector))) / 100
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return sim[out[i].ID] > sim[out[j].ID] })
	lines := make([]string, len(out))
	for i, f := range out {
		lines[i] = "- " + f.Content
	}
	count := func(text string) int { return blockTokens(svc.Tokens, text) }
	text, n, kept := fitLines(prompts.MemoryRelevant, lines, svc.Settings.BlockTokens/2, count)
	if kept == 0 {
		return "", 0
	}
	return text, n
}
