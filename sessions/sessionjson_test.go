package sessions

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestSessionJSONFlat: a session's Bookkeeping shows in the API beside the
// session's own fields (historyFrom, summary, summaryUpdatedAt), not under
// a key of its own, its API-hidden fields stay hidden, and what is written
// reads back the same, by value and by pointer.
func TestSessionJSONFlat(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := Session{ID: "a", UserID: "u", NextSeq: 3, Bookkeeping: Bookkeeping{HistoryFrom: 2, HistoryStartAt: at,
		Summary: "earlier", SummaryUpdatedAt: &at, LearnFrom: 1, PendingToolCalls: []string{"x"}, Answering: &Answering{Seq: 2}}}
	byValue, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	byPointer, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	if string(byValue) != string(byPointer) {
		t.Fatalf("by value %s, by pointer %s", byValue, byPointer)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(byValue, &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"historyFrom", "summary", "summaryUpdatedAt", "id", "nextSeq", "memory"} {
		if _, ok := top[k]; !ok {
			t.Errorf("no %q at the top level of %s", k, byValue)
		}
	}
	for k := range top {
		if slices.Contains([]string{"Bookkeeping", "bookkeeping", "HistoryStartAt", "LearnFrom", "PendingToolCalls", "Answering"}, k) {
			t.Errorf("%q shows in %s", k, byValue)
		}
	}
	var back Session
	if err := json.Unmarshal(byValue, &back); err != nil {
		t.Fatal(err)
	}
	want := Bookkeeping{HistoryFrom: 2, Summary: "earlier", SummaryUpdatedAt: &at}
	if !reflect.DeepEqual(back.Bookkeeping, want) || back.ID != "a" || back.NextSeq != 3 {
		t.Fatalf("read back %+v, bookkeeping %+v; want bookkeeping %+v", back, back.Bookkeeping, want)
	}
}
