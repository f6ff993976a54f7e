package chat

import (
	"context"
	"time"

	"github.com/chatmemory/backend/sessions"
)

// Limits protect the model bill: each signed-in user may run at most
// TurnsPerMinute turns in a calendar minute and spend at most TokensPerDay
// model tokens in a UTC day. Zero means no limit.
type Limits struct {
	TurnsPerMinute int
	TokensPerDay   int
}

// Usage is what one user has spent in the current windows. It is stored (one
// document per user), so the limits hold across all server instances.
type Usage struct {
	UserID      string
	Minute      int64 // unix minute of the turn window
	MinuteTurns int
	Day         string // UTC date of the token window, YYYY-MM-DD
	DayTokens   int
}

// UsageRepo stores usage. UpdateUsage reads the user's usage (zero if none),
// calls fn and stores the result, atomically; fn may run more than once.
type UsageRepo interface {
	UpdateUsage(ctx context.Context, userID string, fn func(*Usage) error) error
}

// Admit counts one turn at now, or refuses it with ERATELIMITED and how long
// to wait.
func (u *Usage) Admit(now time.Time, l Limits) error {
	u.roll(now)
	if l.TokensPerDay > 0 && u.DayTokens >= l.TokensPerDay {
		midnight := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
		return limited(midnight.Sub(now), "daily token limit of %d reached", l.TokensPerDay)
	}
	if l.TurnsPerMinute > 0 && u.MinuteTurns >= l.TurnsPerMinute {
		next := time.Unix((u.Minute+1)*60, 0)
		return limited(next.Sub(now), "limit of %d turns per minute reached", l.TurnsPerMinute)
	}
	u.MinuteTurns++
	return nil
}

// AddTokens records model tokens spent at now.
func (u *Usage) AddTokens(now time.Time, n int) {
	u.roll(now)
	u.DayTokens += n
}

// roll starts new windows when now has left the stored ones.
func (u *Usage) roll(now time.Time) {
	if m := now.Unix() / 60; m != u.Minute {
		u.Minute, u.MinuteTurns = m, 0
	}
	if d := now.UTC().Format(time.DateOnly); d != u.Day {
		u.Day, u.DayTokens = d, 0
	}
}

func limited(wait time.Duration, format string, args ...any) error {
	if wait < time.Second {
		wait = time.Second
	}
	e := sessions.Errorf(sessions.ERATELIMITED, format, args...)
	e.RetryAfter = wait.Round(time.Second)
	return e
}

// UsageStore reads and deletes a user's usage, for export and erasure.
type UsageStore interface {
	GetUsage(ctx context.Context, userID string) (*Usage, error) // nil if none
	DeleteUsage(ctx context.Context, userID string) (int, error)
}

// UsageData is a user's rate-limit windows as personal data.
type UsageData struct{ Store UsageStore }

// ExportUser returns the user's usage, or nil.
func (d UsageData) ExportUser(ctx context.Context, userID string) (any, error) {
	u, err := d.Store.GetUsage(ctx, userID)
	if err != nil || u == nil {
		return nil, err
	}
	return map[string]any{"minute": u.Minute, "turnsThisMinute": u.MinuteTurns, "day": u.Day, "tokensToday": u.DayTokens}, nil
}

// EraseUser deletes the user's usage.
func (d UsageData) EraseUser(ctx context.Context, userID string) (int, error) {
	return d.Store.DeleteUsage(ctx, userID)
}
