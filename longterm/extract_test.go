package longterm

import (
	"strings"
	"testing"
	"time"
)

func TestParseExtraction(t *testing.T) {
	for _, tc := range []struct {
		raw, problem string
		facts        int
	}{
		{`{"facts":[{"content":"Works at a bakery","category":"project","confidence":0.9}]}`, "", 1},
		{"```json\n{\"facts\":[]}\n```", "", 0},
		{`not json`, "not the JSON asked for", 0},
		{`{"facts":[{"content":" ","category":"project","confidence":0.9}]}`, "a fact out of range", 0},
		{`{"facts":[{"content":"x","category":"nonsense","confidence":0.9}]}`, "a fact out of range", 0},
		{`{"facts":[{"content":"x","category":"project","confidence":1.5}]}`, "a fact out of range", 0},
	} {
		ex, err := parseExtraction(tc.raw)
		switch {
		case tc.problem != "" && (err == nil || err.Error() != tc.problem):
			t.Errorf("%s: err %v, want %q", tc.raw, err, tc.problem)
		case tc.problem == "" && (err != nil || len(ex.Facts) != tc.facts):
			t.Errorf("%s: %d facts, err %v", tc.raw, len(ex.Facts), err)
		}
	}
}

func TestCandidatesAndDecisions(t *testing.T) {
	now := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	st := DefaultSettings()
	known := []Fact{
		{ID: "a", Content: "Lives in Lisbon with two cats", Category: "personal", Confidence: 0.8, Sources: []Source{{SessionID: "old", StartSeq: 0, EndSeq: 3}}},
		{ID: "b", Content: "Prefers tea over coffee", Category: "personal", Confidence: 0.75},
	}
	ex, err := parseExtraction(`{"facts":[
		{"content":"Lives in Lisbon with two cats","category":"personal","confidence":0.95},
		{"content":"Prefers coffee over tea now","category":"personal","confidence":0.9},
		{"content":"Learning to play the cello","category":"personal","confidence":0.85},
		{"content":"Maybe likes jazz","category":"personal","confidence":0.3}]}`)
	if err != nil {
		t.Fatal(err)
	}
	src := Source{SessionID: "s1", StartSeq: 10, EndSeq: 15}
	cands := candidates(ex, known, Fact{UserID: "u", Sources: []Source{src}, CreatedAt: now, LastConfirmedAt: now}, st)
	if len(cands) != 3 {
		t.Fatalf("%d candidates, want 3 (under the threshold is dropped)", len(cands))
	}
	if len(cands[0].similar) != 1 || cands[0].similar[0].ID != "a" || len(cands[2].similar) != 0 {
		t.Fatalf("similar: %+v", cands)
	}
	asked := resolution(cands)
	if len(asked) != 3 || asked[0].Similar[0].ID != "a" {
		t.Fatalf("resolution asks %+v", asked)
	}
	if resolution(cands[2:]) != nil {
		t.Errorf("a call is asked for although no candidate is near a known fact")
	}
	byID := factsByID(known)
	fresh := applyDecisions(cands, map[int]decision{0: {kind: "same", existing: "a"}, 1: {kind: "contradicts", existing: "b"}}, byID, src, now)
	if len(fresh) != 2 || fresh[0].Content != "Prefers coffee over tea now" || fresh[1].Content != "Learning to play the cello" {
		t.Fatalf("fresh facts: %+v", fresh)
	}
	if a := known[0]; a.Confidence != 0.95 || !a.LastConfirmedAt.Equal(now) || len(a.Sources) != 2 {
		t.Errorf("the confirmed fact: %+v", a)
	}
	if b := known[1]; b.InvalidAt == nil || b.SupersededBy != fresh[0].ID || b.Live() {
		t.Errorf("the contradicted fact: %+v", b)
	}
	live, superseded := partition(append(known, fresh...))
	if len(live) != 3 || len(superseded) != 1 || superseded[0].ID != "b" {
		t.Errorf("live %d, superseded %+v", len(live), superseded)
	}
	// Undecided near-duplicates are dropped, never doubled.
	if fresh := applyDecisions(cands[:1], nil, factsByID(known), src, now); len(fresh) != 0 {
		t.Errorf("an undecided near-duplicate was kept: %+v", fresh)
	}
}

func TestApplyProfile(t *testing.T) {
	now := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	work, blank, long := "Pastry chef", "  ", strings.Repeat("x", 500)
	p := Profile{Personal: ProfileField{Text: "kept"}}
	applyProfile(&p, &profileUpdate{Work: &work, Personal: &blank, Focus: &long}, "s1", now, 300)
	if p.Work.Text != work || p.Work.SessionID != "s1" || p.Work.UpdatedAt == nil || !p.Work.UpdatedAt.Equal(now) {
		t.Errorf("work: %+v", p.Work)
	}
	if p.Personal.Text != "kept" {
		t.Errorf("a blank line changed the profile: %+v", p.Personal)
	}
	if n := len([]rune(p.Focus.Text)); n > 301 {
		t.Errorf("focus not clipped: %d characters", n)
	}
	applyProfile(&p, nil, "s2", now, 300)
	if p.Work.SessionID != "s1" {
		t.Errorf("no update changed the profile")
	}
}
