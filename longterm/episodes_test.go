package longterm

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/history"
)

func day(n int) time.Time { return time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).AddDate(0, 0, n) }

func ep(id string, at time.Time) Episode {
	return Episode{SessionID: id, Title: "title " + id, Summary: "summary of " + id, At: at}
}

func sessionIDs(eps []Episode) string {
	var ids []string
	for _, e := range eps {
		ids = append(ids, e.SessionID)
	}
	return strings.Join(ids, " ")
}

func months(notes []MonthNote) string {
	var ms []string
	for _, n := range notes {
		ms = append(ms, n.Month+":"+sessionIDs(n.Episodes))
	}
	return strings.Join(ms, " ")
}

// TestHistoryMoves: sessions seen are episodes, newest first, once each;
// a session active again leaves its month's note; episodes older than 30
// days move into their months' notes (stale until made again), and notes
// older than six months into the background (with their text and
// sessions; a note without text has nothing to give); DueAt is the next
// of those moments, or now while a text is still to be made.
func TestHistoryMoves(t *testing.T) {
	var h History
	h.see(ep("a", day(0)))
	h.see(ep("b", day(3)))
	h.see(ep("a", day(5))) // active again
	if got := sessionIDs(h.Episodes); got != "a b" {
		t.Fatalf("episodes %q", got)
	}
	if due := h.DueAt(day(6)); !due.Equal(day(33)) {
		t.Errorf("due %v, want day 33 (b's 30 days)", due)
	}
	if h.ageOut(day(33)) != true || sessionIDs(h.Episodes) != "a" || months(h.Notes) != "2026-01:b" || !h.Notes[0].Stale {
		t.Fatalf("after day 33: episodes %q, notes %q", sessionIDs(h.Episodes), months(h.Notes))
	}
	if due := h.DueAt(day(33)); !due.Equal(day(33)) {
		t.Errorf("a stale note is due at once: %v", due)
	}
	h.Notes[0].Text, h.Notes[0].Stale, h.Notes[0].Sessions = "Worked on b.", false, []string{"b"}
	if due := h.DueAt(day(34)); !due.Equal(day(35)) {
		t.Errorf("due %v, want day 35 (a's 30 days)", due)
	}
	h.see(ep("b", day(34))) // back from its month
	if sessionIDs(h.Episodes) != "b a" || months(h.Notes) != "2026-01:" || !h.Notes[0].Stale {
		t.Fatalf("b active again: episodes %q, notes %q", sessionIDs(h.Episodes), months(h.Notes))
	}
	h.ageOut(day(70))
	if sessionIDs(h.Episodes) != "" || months(h.Notes) != "2026-01:a 2026-02:b" && months(h.Notes) != "2026-02:b 2026-01:a" {
		t.Fatalf("day 70: notes %q", months(h.Notes))
	}
	slices.SortFunc(h.Notes, func(a, b MonthNote) int { return strings.Compare(b.Month, a.Month) })
	for i := range h.Notes {
		h.Notes[i].Text, h.Notes[i].Stale, h.Notes[i].Sessions = "note "+h.Notes[i].Month, false, []string{h.Notes[i].Episodes[0].SessionID}
	}
	// January leaves the middle tier on August 1st.
	if due := h.DueAt(day(70)); !due.Equal(time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("due %v, want August 1st", due)
	}
	h.ageOut(time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC))
	if months(h.Notes) != "2026-02:b" || len(h.Background) != 1 || h.Background[0].Month != "2026-01" || !h.EarlierStale ||
		!slices.Equal(h.Background[0].Sessions, []string{"a"}) {
		t.Fatalf("august: notes %q, background %+v", months(h.Notes), h.Background)
	}
}

// TestHistoryForget: a forgotten session's episode goes; a month note made
// with it is made again (its text goes at once); a background note made
// with it goes whole; a tier made with it is emptied until rendered again;
// what the user wrote stays.
func TestHistoryForget(t *testing.T) {
	now := day(200)
	h := History{
		Episodes:   []Episode{ep("a", day(190)), ep("b", day(185))},
		Notes:      []MonthNote{{Month: "2026-05", Text: "Worked on c and d.", Episodes: []Episode{ep("c", day(130)), ep("d", day(129))}, Sessions: []string{"c", "d"}}},
		Background: []MonthNote{{Month: "2026-01", Text: "Planned e.", Sessions: []string{"e"}}, {Month: "2025-12", Text: "Read f.", Sessions: []string{"f"}}},
		Earlier:    Tier{Text: "Has planned e and read f.", Sessions: []string{"e", "f"}},
		Months:     Tier{Text: "You wrote this.", Edited: true},
	}
	h.render(now)
	if !strings.Contains(h.Recent.Text, "title a") || !strings.Contains(h.Recent.Text, "title b") || h.Months.Text != "You wrote this." {
		t.Fatalf("rendered: %+v / %+v", h.Recent, h.Months)
	}
	for _, id := range []string{"a", "c", "e"} {
		if !h.forget(id) {
			t.Fatalf("forgetting %s changed nothing", id)
		}
	}
	if h.forget("zzz") {
		t.Error("forgetting a stranger changed something")
	}
	h.render(now)
	if sessionIDs(h.Episodes) != "b" || strings.Contains(h.Recent.Text, "title a") || !slices.Equal(h.Recent.Sessions, []string{"b"}) {
		t.Errorf("recent after forgetting a: %+v", h.Recent)
	}
	if n := h.Notes[0]; sessionIDs(n.Episodes) != "d" || n.Text != "" || !n.Stale {
		t.Errorf("note after forgetting c: %+v", n)
	}
	if len(h.Background) != 1 || h.Background[0].Month != "2025-12" || h.Earlier.Text != "" || !h.EarlierStale {
		t.Errorf("background after forgetting e: %+v; earlier %+v", h.Background, h.Earlier)
	}
	if h.Months.Text != "You wrote this." {
		t.Errorf("the user's own words changed: %+v", h.Months)
	}
}

// TestHistoryInTheBlock: the tiers come after the profile and before the
// facts, within their share of the cap, newest tier first; with a share of
// 0 there is none.
func TestHistoryInTheBlock(t *testing.T) {
	tok, err := history.NewTikToken()
	if err != nil {
		t.Fatal(err)
	}
	u := &User{Profile: Profile{Work: ProfileField{Text: "Backend engineer"}},
		History: History{Recent: Tier{Text: "Nov 20: Planning a trip to Oslo"}, Months: Tier{Text: strings.Repeat("Worked on RAG pipelines. ", 30)},
			Earlier: Tier{Text: "Has been building RAG systems since early 2025."}},
		Facts: []Fact{{ID: "f1", Content: "The user is vegetarian.", Confidence: 1}}}
	st := DefaultSettings()
	block, _, _, _ := buildBlock(u, u.Facts, st, tok)
	iw, ir, ie, iv := strings.Index(block, "Backend engineer"), strings.Index(block, "In the last 30 days: Nov 20"), strings.Index(block, "Earlier: Has been"), strings.Index(block, "vegetarian")
	if iw < 0 || ir < iw || ie < ir || iv < ie {
		t.Fatalf("block order: %q", block)
	}
	st.HistoryShare = 0.05 // 100 tokens: the long middle tier no longer fits, so it and what follows are left out
	block, _, _, _ = buildBlock(u, u.Facts, st, tok)
	if !strings.Contains(block, "Nov 20") || strings.Contains(block, "RAG") || !strings.Contains(block, "vegetarian") {
		t.Errorf("within a small share: %q", block)
	}
	st.HistoryShare = 0
	if block, _, _, _ = buildBlock(u, u.Facts, st, tok); strings.Contains(block, "Nov 20") {
		t.Errorf("a share of 0 shows history: %q", block)
	}
}
