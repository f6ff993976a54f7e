package longterm

import (
	"context"
	"time"

	"github.com/chatmemory/backend/kernel/vector"
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
