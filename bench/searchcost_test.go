package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/llm"
)

// TestSearchCost: a search of the stored fixture waits for one round trip
// of the store after its embedding (its queries and the read of the
// user's Visibility at once, and nothing after: the units carry their
// sessions' titles; the median, as times tell them, since a loaded
// machine's scheduler can start a ready RPC after another ended), and
// reads what its words and meaning found, far under the bound of the
// words leg (40 a term).
func TestSearchCost(t *testing.T) {
	emulatortest.Require(t, "FIRESTORE_EMULATOR_HOST")
	tok, err := history.NewTikToken()
	if err != nil {
		t.Fatal(err)
	}
	c, err := MeasureSearchCost(context.Background(), llm.Lexical{}, tok)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	WriteSearchCost(&out, c)
	t.Log(out.String())
	if c.Searches < 30 || c.SequentialP50 != 1 || c.ReadsMax > 40*12+20+1+30 || c.ReadsMean == 0 {
		t.Errorf("search cost %+v", c)
	}
}

// TestSearchScale: with users' units seeded through the API (a few here;
// make bench seeds 10 users' 3,000), a search through GET /search answers
// and reads what its legs found, far under the words leg's bound; each of
// its RPCs is timed alone too.
func TestSearchScale(t *testing.T) {
	emulatortest.Require(t, "FIRESTORE_EMULATOR_HOST")
	emulatortest.Require(t, "FIREBASE_AUTH_EMULATOR_HOST")
	s, err := MeasureSearchScale(context.Background(), 2, 500, 20, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	WriteSearchScale(&out, s)
	t.Log(out.String())
	if s.UnitsPerUser != 500 || s.ReadsMean == 0 || s.ReadsMean > 40*12+20+1+30 {
		t.Errorf("search at scale %+v", s)
	}
	if f := s.Floor; f == nil || f.Vector.P50Ms <= 0 || f.Term.P50Ms <= 0 || f.List.P50Ms <= 0 || f.EmptyProject.P50Ms <= 0 {
		t.Errorf("each RPC alone: %+v", f)
	}
}
