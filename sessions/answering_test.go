package sessions

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
)

func TestAnswering(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		a     *Answering
		live  bool
		retry time.Duration
	}{
		{"none", nil, false, 0},
		{"ran out", &Answering{Until: now}, false, 0},
		{"long", &Answering{Until: now.Add(time.Minute)}, true, MaxRetryAfter},
		{"short", &Answering{Until: now.Add(2200 * time.Millisecond)}, true, 2 * time.Second},
		{"nearly over", &Answering{Until: now.Add(time.Millisecond)}, true, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Session{Bookkeeping: Bookkeeping{Answering: tc.a}}
			if got := s.AnsweringAt(now) != nil; got != tc.live {
				t.Fatalf("live = %v, want %v", got, tc.live)
			}
			err := s.CheckNotAnswering(now)
			if !tc.live {
				if err != nil {
					t.Fatalf("CheckNotAnswering = %v", err)
				}
				return
			}
			if errs.CodeOf(err) != errs.ECONFLICT || errs.RetryAfter(err) != tc.retry {
				t.Errorf("CheckNotAnswering = %v (retry %v), want a conflict with retry %v", err, errs.RetryAfter(err), tc.retry)
			}
			if c := s.Clone(); c.Bookkeeping.Answering == s.Bookkeeping.Answering {
				t.Errorf("Clone shares the lease")
			}
		})
	}
}

func TestBranchesJSON(t *testing.T) {
	b, _ := json.Marshal(&Branches{Leaf: 3})
	if got, want := string(b), `{"leaf":3,"forks":[]}`; got != want {
		t.Errorf("%s, want %s", got, want)
	}
}
