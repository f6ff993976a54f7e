package longterm

import (
	"context"
	"errors"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/kernel/strictjson"
)

// View is what a user sees of their memory.
type View struct {
	Enabled     bool        `json:"enabled"`
	Profile     Profile     `json:"profile"`
	History     HistoryView `json:"history"`
	Facts       []FactView  `json:"facts"`
	BlockTokens int         `json:"blockTokens"`
}

// HistoryView is the episodic history's tiers as the user sees them.
type HistoryView struct {
	Recent     Tier       `json:"recent"`
	Months     Tier       `json:"months"`
	Earlier    Tier       `json:"earlier"`
	RolledUpAt *time.Time `json:"rolledUpAt"`
}

// ProfilePatch changes parts of the profile; nil leaves a part as it is.
type ProfilePatch struct {
	Work     *string `json:"work,omitempty"`
	Personal *string `json:"personal,omitempty"`
	Focus    *string `json:"focus,omitempty"`
}

// UnmarshalJSON rejects unknown keys.
func (p *ProfilePatch) UnmarshalJSON(data []byte) error {
	type plain ProfilePatch // without this method
	return strictjson.Decode(data, (*plain)(p))
}

// UpdateProfile lets the user write their own profile.
func (svc *Service) UpdateProfile(ctx context.Context, userID string, p ProfilePatch) (*View, error) {
	if p.Work == nil && p.Personal == nil && p.Focus == nil {
		return nil, errs.Errorf(errs.EINVALID, "nothing to update: give work, personal and/or focus")
	}
	for _, v := range []*string{p.Work, p.Personal, p.Focus} {
		if v != nil && len([]rune(*v)) > svc.Settings.MaxContent {
			return nil, errs.Errorf(errs.EINVALID, "each profile part has at most %d characters", svc.Settings.MaxContent)
		}
	}
	now := svc.now()
	err := svc.change(ctx, userID, func(u *User) (Change, error) {
		for _, upd := range []struct {
			v *string
			f *ProfileField
		}{{p.Work, &u.Profile.Work}, {p.Personal, &u.Profile.Personal}, {p.Focus, &u.Profile.Focus}} {
			if upd.v != nil { // the user's own words: no session is their source
				upd.f.Text, upd.f.UpdatedAt, upd.f.SessionID = clip(*upd.v, svc.Settings.MaxContent), &now, ""
			}
		}
		return Change{KeepFacts: true}, nil
	})
	if err != nil {
		return nil, err
	}
	return svc.Get(ctx, userID)
}

// Forget deletes one fact of the user's (ENOTFOUND for anyone else's).
func (svc *Service) Forget(ctx context.Context, userID, factID string) error {
	if !ids.Valid(factID) {
		return errs.Errorf(errs.EINVALID, "malformed fact id")
	}
	return svc.change(ctx, userID, func(u *User) (Change, error) {
		for i, f := range u.Facts {
			if f.ID == factID {
				u.Facts = append(u.Facts[:i:i], u.Facts[i+1:]...)
				return Change{}, nil
			}
		}
		return Change{}, errs.Errorf(errs.ENOTFOUND, "fact %q not found", factID)
	})
}

// ForgetSessions removes what was learned from purged sessions of the
// user's, in one change: the sessions leave the sources of every fact,
// live or superseded; a fact with no source left is deleted; a profile
// part learned from one is cleared. A fact also confirmed in another
// session stays, with that session as its source. It is a
// sessions.Forget, run by every purge: a sweep's page of purges calls it
// once a user, so its reads and its write are the user's, not each
// session's (and the user's sessions do not contend on the document).
func (svc *Service) ForgetSessions(ctx context.Context, userID string, sessionIDs []string) error {
	if len(sessionIDs) == 0 {
		return nil
	}
	gone := make(map[string]bool, len(sessionIDs))
	for _, id := range sessionIDs {
		gone[id] = true
	}
	u, err := svc.Store.GetUser(ctx, userID)
	if err != nil {
		return err
	}
	if u.Version == 0 {
		return nil // the user has no memory (every save writes the document)
	}
	var old []Fact
	if u.Filed { // else there are none to list (a query a user, each purge's)
		if old, err = svc.Store.ListSuperseded(ctx, userID); err != nil {
			return err
		}
	}
	var c Change
	for _, f := range old {
		switch changed, left := f.dropSources(gone); {
		case !left:
			c.Drop = append(c.Drop, f.ID)
		case changed:
			c.File = append(c.File, f)
		}
	}
	// It saves even when nothing was learned from the sessions: a change
	// of the memory is what refuses a learning that started before the
	// purge (see extract).
	return svc.changeFrom(ctx, u, userID, func(u *User) (Change, error) {
		facts := false
		kept := u.Facts[:0:0]
		for _, f := range u.Facts {
			dropped, left := f.dropSources(gone)
			facts = facts || dropped
			if left {
				kept = append(kept, f)
			}
		}
		u.Facts = kept
		for _, pf := range u.Profile.fields() {
			if gone[pf.f.SessionID] {
				*pf.f = ProfileField{}
			}
		}
		forgot := false
		for _, id := range sessionIDs {
			forgot = u.History.forget(id) || forgot
		}
		if forgot {
			u.History.render(svc.now()) // month notes and the background are made again by the next roll-up
		}
		c.KeepFacts = !facts
		return c, nil
	})
}

// ForgetAll deletes everything the user's memory holds, superseded facts
// included; the on/off switch stays as it is.
func (svc *Service) ForgetAll(ctx context.Context, userID string) error {
	u, err := svc.Store.GetUser(ctx, userID)
	if err != nil {
		return err
	}
	disabled := u.Disabled
	if _, err := svc.Store.EraseMemory(ctx, userID); err != nil {
		return err
	}
	if disabled {
		return svc.SetEnabled(ctx, userID, false)
	}
	return nil
}

// SetEnabled turns the user's memory on or off. Off, nothing is learned and
// nothing is shown to the model; what was learned stays until forgotten.
func (svc *Service) SetEnabled(ctx context.Context, userID string, on bool) error {
	return svc.change(ctx, userID, func(u *User) (Change, error) {
		u.Disabled = !on
		return Change{KeepFacts: true}, nil
	})
}

// ExportUser returns everything the user's memory holds, superseded facts
// included.
func (svc *Service) ExportUser(ctx context.Context, userID string) (any, error) {
	u, err := svc.Store.GetUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	old, err := svc.Store.ListSuperseded(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"enabled": !u.Disabled, "profile": u.Profile, "history": u.History, "facts": append(append([]Fact{}, u.Facts...), old...)}
	embedded := 0
	for _, f := range u.Facts {
		if len(f.Vector) > 0 {
			embedded++
		}
	}
	if embedded > 0 { // derived data: said, not shipped
		out["embeddings"] = map[string]any{"facts": embedded, "model": u.VectorModel,
			"about": "each of these live facts is also held as an embedding (a vector of numbers computed from its text), to merge near-duplicates and choose the facts relevant to a message; it goes with its fact"}
	}
	return out, nil
}

// EraseUser deletes the user's memory.
func (svc *Service) EraseUser(ctx context.Context, userID string) (int, error) {
	return svc.Store.EraseMemory(ctx, userID)
}

// HistoryPatch changes tiers of the episodic history; nil leaves a tier
// as it is. Text is the user's own words, which roll-ups then leave alone;
// "" forgets the tier: its text and what it was made from.
type HistoryPatch struct {
	Recent  *string `json:"recent,omitempty"`
	Months  *string `json:"months,omitempty"`
	Earlier *string `json:"earlier,omitempty"`
}

// UnmarshalJSON rejects unknown keys.
func (p *HistoryPatch) UnmarshalJSON(data []byte) error {
	type plain HistoryPatch // without this method
	return strictjson.Decode(data, (*plain)(p))
}

// UpdateHistory lets the user write or forget tiers of their history.
func (svc *Service) UpdateHistory(ctx context.Context, userID string, p HistoryPatch) (*View, error) {
	if p.Recent == nil && p.Months == nil && p.Earlier == nil {
		return nil, errs.Errorf(errs.EINVALID, "nothing to update: give recent, months and/or earlier")
	}
	limits := []int{maxRecentText, maxMonthsText, MaxEarlierText}
	for i, v := range []*string{p.Recent, p.Months, p.Earlier} {
		if v != nil && len([]rune(*v)) > limits[i] {
			return nil, errs.Errorf(errs.EINVALID, "recent, months and earlier have at most %d, %d and %d characters", limits[0], limits[1], limits[2])
		}
	}
	now := svc.now()
	err := svc.change(ctx, userID, func(u *User) (Change, error) {
		h := u.History.Clone()
		for _, upd := range []struct {
			v      *string
			t      *Tier
			forget func()
		}{
			{p.Recent, &h.Recent, func() { h.Episodes = nil }},
			{p.Months, &h.Months, func() { h.Notes = nil }},
			{p.Earlier, &h.Earlier, func() { h.Background, h.EarlierStale = nil, false }},
		} {
			switch {
			case upd.v == nil:
			case clip(*upd.v, 1<<20) == "":
				upd.forget()
				*upd.t = Tier{}
			default: // the user's own words: no session is their source
				*upd.t = Tier{Text: clip(*upd.v, 1<<20), UpdatedAt: &now, Edited: true}
			}
		}
		h.render(now)
		u.History = h
		return Change{KeepFacts: true}, nil
	})
	if err != nil {
		return nil, err
	}
	return svc.Get(ctx, userID)
}

// FactView is a live fact with its confidence as it stands now.
type FactView struct {
	Fact
	Effective float64 `json:"effectiveConfidence"`
}

// Get returns the user's profile and live facts, by effective confidence.
func (svc *Service) Get(ctx context.Context, userID string) (*View, error) {
	u, err := svc.Store.GetUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	now := svc.now()
	v := &View{Enabled: !u.Disabled, Profile: u.Profile, History: viewOf(&u.History), BlockTokens: u.BlockTokens, Facts: []FactView{}}
	for _, f := range byEffective(u.Facts, now, svc.Settings.DecayPerWeek) {
		v.Facts = append(v.Facts, FactView{Fact: f, Effective: f.Effective(now, svc.Settings.DecayPerWeek)})
	}
	return v, nil
}

func viewOf(h *History) HistoryView {
	v := HistoryView{Recent: h.Recent, Months: h.Months, Earlier: h.Earlier}
	for _, t := range []*Tier{&v.Recent, &v.Months, &v.Earlier} {
		if t.Sessions == nil {
			t.Sessions = []string{}
		}
	}
	if !h.RolledUpAt.IsZero() {
		at := h.RolledUpAt
		v.RolledUpAt = &at
	}
	return v
}

// errUnchanged tells change that fn changed nothing: nothing is saved.
var errUnchanged = errors.New("longterm: unchanged")

// change applies fn to the user's memory and saves it with a fresh block,
// retrying when another change landed meanwhile.
func (svc *Service) change(ctx context.Context, userID string, fn func(u *User) (Change, error)) error {
	return svc.changeFrom(ctx, nil, userID, fn)
}

// changeFrom is change whose first attempt starts from u, just read (nil:
// read it); a retry reads again.
func (svc *Service) changeFrom(ctx context.Context, u *User, userID string, fn func(u *User) (Change, error)) error {
	for attempt := 0; ; attempt++ {
		if u == nil {
			var err error
			if u, err = svc.Store.GetUser(ctx, userID); err != nil {
				return err
			}
		}
		c, err := fn(u)
		if errors.Is(err, errUnchanged) {
			return nil
		}
		if err != nil {
			return err
		}
		err = svc.save(ctx, u, c)
		if errs.CodeOf(err) != errs.ECONFLICT || attempt == 2 {
			return err
		}
		u = nil
	}
}
