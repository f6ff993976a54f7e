package chat

import (
	"context"
	"time"

	"github.com/chatmemory/backend/sessions"
)

// Limits protect the model bill and the servers: each signed-in user may
// run at most TurnsPerMinute turns and append at most MessagesPerMinute
// messages of their own in a calendar minute, and spend at most
// TokensPerDay tokens in a UTC day (the model's, and those of appended
// messages, which later turns send to the model). Zero means no limit.
type Limits struct {
	TurnsPerMinute    int
	MessagesPerMinute int
	TokensPerDay      int
}

// Usage is what one user has spent in the current windows. It is stored (one
// document per user), so the limits hold across all server instances.
type Usage struct {
	UserID         string
	Minute         int64 // unix minute of the turn and message window
	MinuteTurns    int
	MinuteMessages int    // appended by the client (not by turns)
	Day            string // UTC date of the token window, YYYY-MM-DD
	DayTokens      int
}

// UsageRepo stores usage. UpdateUsage reads the user's usage (zero if none),
// calls fn and stores the result, atomically; fn may run more than once.
type UsageRepo interface {
	UpdateUsage(ctx context.Context, userID string, fn func(*Usage) error) error
}

// Admit counts one turn at now, or refuses it with ERATELIMITED and how long
// to wait.
func (u *Usage) Admit(now time.Time, l Limits) error {
	if err := u.admitDay(now, l); err != nil {
		return err
	}
	if l.TurnsPerMinute > 0 && u.MinuteTurns >= l.TurnsPerMinute {
		return limited(u.nextMinute(now), "limit of %d turns per minute reached", l.TurnsPerMinute)
	}
	u.MinuteTurns++
	return nil
}

// AdmitMessages counts n appended messages at now, or refuses them all.
func (u *Usage) AdmitMessages(now time.Time, l Limits, n int) error {
	if err := u.admitDay(now, l); err != nil {
		return err
	}
	if l.MessagesPerMinute > 0 && u.MinuteMessages+n > l.MessagesPerMinute {
		return limited(u.nextMinute(now), "limit of %d appended messages per minute reached", l.MessagesPerMinute)
	}
	u.MinuteMessages += n
	return nil
}

// admitDay refuses once the day's tokens are spent.
func (u *Usage) admitDay(now time.Time, l Limits) error {
	u.roll(now)
	if l.TokensPerDay > 0 && u.DayTokens >= l.TokensPerDay {
		midnight := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
		return limited(midnight.Sub(now), "daily token limit of %d reached", l.TokensPerDay)
	}
	return nil
}

func (u *Usage) nextMinute(now time.Time) time.Duration {
	return time.Unix((u.Minute+1)*60, 0).Sub(now)
}

// AddTokens records model tokens spent at now.
func (u *Usage) AddTokens(now time.Time, n int) {
	u.roll(now)
	u.DayTokens += n
}

// roll starts new windows when now has left the stored ones.
func (u *Usage) roll(now time.Time) {
	if m := now.Unix() / 60; m != u.Minute {
		u.Minute, u.MinuteTurns, u.MinuteMessages = m, 0, 0
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
	return map[string]any{"minute": u.Minute, "turnsThisMinute": u.MinuteTurns, "messagesThisMinute": u.MinuteMessages, "day": u.Day, "tokensToday": u.DayTokens}, nil
}

// EraseUser deletes the user's usage.
func (d UsageData) EraseUser(ctx context.Context, userID string) (int, error) {
	return d.Store.DeleteUsage(ctx, userID)
}
