package chat

import (
	"context"
	"testing"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
)

func TestAdmitTurn(t *testing.T) {
	noon := time.Date(2026, 3, 10, 12, 0, 10, 0, time.UTC)
	minute := noon.Unix() / 60
	first := func(int) int { return 0 }
	for _, tc := range []struct {
		name      string
		limits    Limits
		dayTokens int
		slots     []int64
		at        time.Time
		wantSlot  int
		wantRetry time.Duration // 0: admitted
	}{
		{name: "no limits", limits: Limits{}, slots: nil, at: noon, wantSlot: NoSlot},
		{name: "fresh user", limits: Limits{TurnsPerMinute: 2}, slots: []int64{0, 0}, at: noon, wantSlot: 0},
		{name: "one slot taken", limits: Limits{TurnsPerMinute: 2}, slots: []int64{minute, 0}, at: noon, wantSlot: 1},
		{name: "slots from an earlier minute are free", limits: Limits{TurnsPerMinute: 2}, slots: []int64{minute - 1, minute - 5}, at: noon, wantSlot: 0},
		{name: "all taken this minute", limits: Limits{TurnsPerMinute: 2}, slots: []int64{minute, minute}, at: noon.Add(49 * time.Second), wantRetry: time.Second},
		{name: "all taken, early in the minute", limits: Limits{TurnsPerMinute: 2}, slots: []int64{minute, minute}, at: noon, wantRetry: 50 * time.Second},
		{name: "a new minute", limits: Limits{TurnsPerMinute: 2}, slots: []int64{minute, minute}, at: noon.Add(50 * time.Second), wantSlot: 0},
		{name: "limit lowered below stored slots", limits: Limits{TurnsPerMinute: 1}, slots: []int64{minute, 0}, at: noon, wantRetry: 50 * time.Second},
		{name: "day spent", limits: Limits{TurnsPerMinute: 2, TokensPerDay: 100}, dayTokens: 100, slots: []int64{0, 0}, at: noon.Add(2 * time.Minute),
			wantRetry: 12*time.Hour - 2*time.Minute - 10*time.Second},
		{name: "day nearly spent", limits: Limits{TokensPerDay: 100}, dayTokens: 99, at: noon, wantSlot: NoSlot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slot, err := AdmitTurn(tc.at, tc.limits, tc.dayTokens, tc.slots, first)
			if tc.wantRetry != 0 {
				if errs.CodeOf(err) != errs.ERATELIMITED || errs.RetryAfter(err) != tc.wantRetry {
					t.Fatalf("got slot %d, %v (retry %s); want rate limited, retry %s", slot, err, errs.RetryAfter(err), tc.wantRetry)
				}
				return
			}
			if err != nil || slot != tc.wantSlot {
				t.Fatalf("got slot %d, %v; want slot %d", slot, err, tc.wantSlot)
			}
		})
	}
}

// TestAdmitTurnPicksAmongFree: the chooser sees only free slots.
func TestAdmitTurnPicksAmongFree(t *testing.T) {
	noon := time.Date(2026, 3, 10, 12, 0, 10, 0, time.UTC)
	m := noon.Unix() / 60
	slots := []int64{m, 0, m, 0, m}
	seen := map[int]bool{}
	for i := range 2 {
		slot, err := AdmitTurn(noon, Limits{TurnsPerMinute: 5}, 0, slots, func(n int) int {
			if n != 2 {
				t.Fatalf("chooser offered %d slots, want 2", n)
			}
			return i
		})
		if err != nil {
			t.Fatal(err)
		}
		seen[slot] = true
	}
	if !seen[1] || !seen[3] {
		t.Fatalf("picked %v, want slots 1 and 3", seen)
	}
}

func TestAppendedMessagesWindow(t *testing.T) {
	l := Limits{MessagesPerMinute: 5, TokensPerDay: 100}
	noon := time.Date(2026, 3, 10, 12, 0, 10, 0, time.UTC)
	var u Usage
	if err := u.AdmitMessages(noon, l, 4); err != nil {
		t.Fatal(err)
	}
	if err := u.AdmitMessages(noon, l, 2); errs.CodeOf(err) != errs.ERATELIMITED || errs.RetryAfter(err) != 50*time.Second {
		t.Errorf("a batch over the minute's messages: %v (retry %s)", err, errs.RetryAfter(err))
	}
	if err := u.AdmitMessages(noon, l, 1); err != nil || u.MinuteMessages != 5 {
		t.Errorf("a refused batch counted: %v, %d messages", err, u.MinuteMessages)
	}
	if err := u.AdmitMessages(noon.Add(50*time.Second), l, 5); err != nil {
		t.Errorf("a new minute: %v", err)
	}
	u.DayTokens = 100
	if err := u.AdmitMessages(noon.Add(2*time.Minute), l, 1); errs.CodeOf(err) != errs.ERATELIMITED {
		t.Errorf("over the day's tokens: %v", err)
	}
}

func TestSlotsToRead(t *testing.T) {
	for _, tc := range []struct {
		n    int
		all  bool
		want int
	}{{0, false, 0}, {2, false, 2}, {3, false, slotSample}, {20, false, slotSample}, {20, true, 20}, {50, true, 50}, {MaxTurnsPerMinute + 5, true, MaxTurnsPerMinute}} {
		got := slotsToRead(tc.n, tc.all)
		seen := map[int]bool{}
		for _, i := range got {
			if i < 0 || i >= min(tc.n, MaxTurnsPerMinute) || seen[i] {
				t.Errorf("slotsToRead(%d, %v) = %v: out of range or twice", tc.n, tc.all, got)
			}
			seen[i] = true
		}
		if len(got) != tc.want {
			t.Errorf("slotsToRead(%d, %v) = %v, want %d slots", tc.n, tc.all, got, tc.want)
		}
	}
}

func TestAdmitSearch(t *testing.T) {
	noon := time.Date(2026, 3, 10, 12, 0, 10, 0, time.UTC)
	minute := noon.Unix() / 60
	for _, tc := range []struct {
		name      string
		limits    Limits
		usage     Usage
		wantUsed  int
		wantRetry time.Duration // 0: admitted
	}{
		{name: "no limits", usage: Usage{SearchMinute: minute, MinuteSearches: 1000}, wantUsed: 1001},
		{name: "first search", limits: Limits{SearchesPerMinute: 2}, wantUsed: 1},
		{name: "second in the minute", limits: Limits{SearchesPerMinute: 2}, usage: Usage{SearchMinute: minute, MinuteSearches: 1}, wantUsed: 2},
		{name: "minute full", limits: Limits{SearchesPerMinute: 2}, usage: Usage{SearchMinute: minute, MinuteSearches: 2}, wantRetry: 50 * time.Second},
		{name: "an earlier minute is forgotten", limits: Limits{SearchesPerMinute: 2}, usage: Usage{SearchMinute: minute - 1, MinuteSearches: 2}, wantUsed: 1},
		{name: "messages do not count", limits: Limits{SearchesPerMinute: 2}, usage: Usage{Minute: minute, MinuteMessages: 50}, wantUsed: 1},
		{name: "day spent", limits: Limits{SearchesPerMinute: 2, TokensPerDay: 100}, usage: Usage{DayTokens: 100}, wantRetry: 12*time.Hour - 10*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := tc.usage
			err := u.AdmitSearch(noon, tc.limits)
			if tc.wantRetry != 0 {
				if errs.CodeOf(err) != errs.ERATELIMITED || errs.RetryAfter(err) != tc.wantRetry || u.MinuteSearches != tc.usage.MinuteSearches {
					t.Fatalf("got %v (retry %s, %d searches); want rate limited, retry %s, nothing counted", err, errs.RetryAfter(err), u.MinuteSearches, tc.wantRetry)
				}
				return
			}
			if err != nil || u.MinuteSearches != tc.wantUsed || u.SearchMinute != minute || u.MinuteMessages != tc.usage.MinuteMessages {
				t.Fatalf("got %v, %+v; want %d searches this minute", err, u, tc.wantUsed)
			}
		})
	}
}

type fixedModel struct{ reply Reply }

func (m fixedModel) Generate(context.Context, Request, func(string)) (*Reply, error) {
	r := m.reply
	return &r, nil
}

type wordCounter struct{}

func (wordCounter) Text(_, s string) int { return len(s) }

func TestMetered(t *testing.T) {
	req := Request{Model: "m", System: "sys", Messages: []history.Message{{Role: history.RoleUser, Content: "hello"}}}
	cases := []struct {
		name  string
		reply Reply
		want  int
	}{
		{"reported usage", Reply{Content: "hi", PromptTokens: 10, CompletionTokens: 2}, 12},
		{"no usage reported: counted here", Reply{Content: "hi"}, len("sys") + len("hi") + history.ReplyPriming + len("hello") + 4},
	}
	for _, c := range cases {
		ctx, meter := WithMeter(context.Background())
		m := Metered(fixedModel{c.reply}, wordCounter{})
		for i := 0; i < 2; i++ {
			if _, err := m.Generate(ctx, req, nil); err != nil {
				t.Fatal(err)
			}
		}
		if got := meter.Tokens(); got != 2*c.want {
			t.Errorf("%s: metered %d, want %d", c.name, got, 2*c.want)
		}
	}
	// Without a meter in the context nothing is counted and nothing fails.
	if _, err := Metered(fixedModel{}, wordCounter{}).Generate(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
}
