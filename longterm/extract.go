package longterm

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/prompts"
	"github.com/chatmemory/backend/sessions"
)

// extraction is what the extraction prompt asks the model for.
type extraction struct {
	Profile *profileUpdate `json:"profile"`
	Facts   []struct {
		Content    string   `json:"content"`
		Category   Category `json:"category"`
		Confidence float64  `json:"confidence"`
	} `json:"facts"`
}

// profileUpdate is the profile lines an extraction proposes; nil: unchanged.
type profileUpdate struct {
	Work     *string `json:"work"`
	Personal *string `json:"personal"`
	Focus    *string `json:"focus"`
}

// extract learns from messages from..to of s (have holds the latest
// messages, usually all of them): a read, the extraction call, the
// resolution call when a candidate is near a known fact, and a save,
// around pure steps (candidates, decisions applied, profile applied) that
// are tested without a model.
func (svc *Service) extract(ctx context.Context, s *sessions.Session, model string, from, to int, have []history.Message, read *User) error {
	u, fenced, err := svc.memoryOf(ctx, s.UserID, read)
	if err != nil {
		return err
	}
	if u.Disabled {
		return ErrNothingToLearn // memory is off: the batch passes unlearned
	}
	msgs := between(have, from, to)
	if msgs == nil {
		if msgs, err = svc.Messages.MessageRange(ctx, s.ID, from, to); err != nil || len(msgs) == 0 {
			return err
		}
	}
	raw, err := svc.Model.Complete(ctx, model, prompts.Extract, extractRequest(&u.Profile, msgs))
	if err != nil {
		return err
	}
	ex, err := parseExtraction(raw)
	if err != nil {
		return svc.malformed(ctx, s, "extraction", err.Error(), len(raw))
	}
	now := svc.now()
	src := Source{SessionID: s.ID, StartSeq: msgs[0].Seq, EndSeq: msgs[len(msgs)-1].Seq}
	cands := candidates(ex, u.Facts, Fact{UserID: s.UserID, Sources: []Source{src}, CreatedAt: now, LastConfirmedAt: now}, svc.Settings)
	cands = svc.mergeNear(ctx, s, u, cands, src, now)
	byID := factsByID(u.Facts)
	decisions := map[int]decision{}
	if asked := resolution(cands); asked != nil {
		raw, err := svc.Model.Complete(ctx, model, prompts.Resolve, prompts.ResolveRequest(asked))
		if err != nil {
			return err
		}
		if decisions, err = parseDecisions(raw, len(cands), byID); err != nil {
			return svc.malformed(ctx, s, "resolution", "not the decisions asked for", len(raw))
		}
	}
	fresh := applyDecisions(cands, decisions, byID, src, now)
	applyProfile(&u.Profile, ex.Profile, s.ID, now, svc.Settings.MaxContent)
	live, superseded := partition(append(u.Facts, fresh...)) // u.Facts were changed in place
	u.Facts = svc.evict(live, now)
	c := Change{File: superseded}
	if !fenced {
		c.Sources = []string{s.ID}
	}
	return svc.save(ctx, u, c)
}

// memoryOf is userID's memory with its live facts: the turn's read of it
// (read), when it is this user's, or read now. It is fenced when it is
// the turn's read of an existing memory: a save that starts from it needs
// no check that its session still exists, since the turn's reply was
// stored after that read, so a purge of the session comes after it, and
// a purge's forgetting always changes the memory (ForgetSessions), which
// refuses the save; the retry starts from a fresh read and checks.
func (svc *Service) memoryOf(ctx context.Context, userID string, read *User) (u *User, fenced bool, err error) {
	u = read.clone()
	fenced = u != nil && u.UserID == userID && u.Version > 0
	if u == nil || u.UserID != userID {
		if u, err = svc.Store.GetUser(ctx, userID); err != nil {
			return nil, false, err
		}
	}
	if u.Partial && !u.Disabled { // the turn read the memory without its live facts
		if u.Facts, err = svc.Store.LiveFacts(ctx, userID); err != nil {
			return nil, false, err
		}
		u.Partial = false
	}
	return u, fenced, nil
}

// extractRequest is the extraction prompt's request: the profile as known
// and what was said (user messages, and replies with text), each clipped.
func extractRequest(p *Profile, msgs []history.Message) string {
	var profile []prompts.ProfileLine
	for _, pf := range p.fields() {
		profile = append(profile, prompts.ProfileLine{Label: pf.label, Text: pf.f.Text})
	}
	var said []prompts.Said
	for _, m := range msgs {
		if m.Role == history.RoleUser || (m.Role == history.RoleAssistant && m.Content != "") {
			said = append(said, prompts.Said{Role: string(m.Role), Text: clip(m.Content, 2000)})
		}
	}
	return prompts.ExtractRequest(profile, said)
}

// parseExtraction reads the model's extraction, refusing anything but
// the JSON asked for with every fact in range.
func parseExtraction(raw string) (extraction, error) {
	var ex extraction
	if err := decodeModelJSON(raw, &ex); err != nil {
		return ex, errors.New("not the JSON asked for")
	}
	for _, f := range ex.Facts {
		if strings.TrimSpace(f.Content) == "" || !validCategory(f.Category) || f.Confidence < 0 || f.Confidence > 1 {
			return ex, errors.New("a fact out of range")
		}
	}
	return ex, nil
}

// candidate is a proposed fact and the known facts it is near.
type candidate struct {
	fact    Fact
	similar []*Fact
}

// candidates are the extraction's facts at or over the threshold, as new
// facts like proto (its user, sources and times, with an id each), each
// with the known facts it is similar to (pointers into facts).
func candidates(ex extraction, facts []Fact, proto Fact, st Settings) []candidate {
	var out []candidate
	for _, f := range ex.Facts {
		if f.Confidence < st.Threshold {
			continue
		}
		c := candidate{fact: proto}
		c.fact.ID, c.fact.Content, c.fact.Category, c.fact.Confidence = ids.New(), clip(f.Content, st.MaxContent), f.Category, f.Confidence
		c.fact.Sources = append([]Source(nil), proto.Sources...)
		for i := range facts {
			if Similarity(c.fact.Content, facts[i].Content) >= st.Similar {
				c.similar = append(c.similar, &facts[i])
			}
		}
		out = append(out, c)
	}
	return out
}

func factsByID(facts []Fact) map[string]*Fact {
	byID := make(map[string]*Fact, len(facts))
	for i := range facts {
		byID[facts[i].ID] = &facts[i]
	}
	return byID
}

// resolution is what the resolution prompt is asked about the candidates,
// or nil when none is near a known fact (no call is needed).
func resolution(cands []candidate) []prompts.Candidate {
	ambiguous := false
	for _, c := range cands {
		ambiguous = ambiguous || len(c.similar) > 0
	}
	if !ambiguous {
		return nil
	}
	asked := make([]prompts.Candidate, len(cands))
	for i, c := range cands {
		asked[i].Text = c.fact.Content
		for _, f := range c.similar {
			asked[i].Similar = append(asked[i].Similar, prompts.Known{ID: f.ID, Text: f.Content})
		}
	}
	return asked
}

// applyDecisions applies the model's decisions to the known facts (in
// place, through byID) and returns the new facts to keep: a candidate the
// same as a known fact confirms it (the higher confidence, src added); one
// that contradicts it supersedes it; an undecided near-duplicate is
// dropped, never doubled; the rest are new.
func applyDecisions(cands []candidate, decisions map[int]decision, byID map[string]*Fact, src Source, now time.Time) []Fact {
	var fresh []Fact
	for i, c := range cands {
		d, ok := decisions[i]
		if !ok && len(c.similar) > 0 {
			continue
		}
		switch d.kind {
		case "same":
			old := byID[d.existing]
			old.Confidence = max(old.Confidence, c.fact.Confidence)
			old.LastConfirmedAt = now
			old.confirm(src)
		case "contradicts":
			old := byID[d.existing]
			old.InvalidAt, old.SupersededBy = &now, c.fact.ID
			fresh = append(fresh, c.fact)
		default:
			fresh = append(fresh, c.fact)
		}
	}
	return fresh
}

// applyProfile sets the profile lines an extraction proposes (blank ones
// are ignored), clipped, as learned now from session sessionID.
func applyProfile(p *Profile, upd *profileUpdate, sessionID string, now time.Time, maxContent int) {
	if upd == nil {
		return
	}
	for _, u := range []struct {
		v *string
		f *ProfileField
	}{{upd.Work, &p.Work}, {upd.Personal, &p.Personal}, {upd.Focus, &p.Focus}} {
		if u.v != nil && strings.TrimSpace(*u.v) != "" {
			at := now
			u.f.Text, u.f.UpdatedAt, u.f.SessionID = clip(*u.v, maxContent), &at, sessionID
		}
	}
}

// partition splits facts into the live and the superseded.
func partition(facts []Fact) (live, superseded []Fact) {
	for _, f := range facts {
		if f.Live() {
			live = append(live, f)
		} else {
			superseded = append(superseded, f)
		}
	}
	return live, superseded
}
