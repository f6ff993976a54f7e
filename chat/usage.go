package chat

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
)

// Limits protect the model bill and the servers: each signed-in user may
// run at most TurnsPerMinute turns and append at most MessagesPerMinute
// messages of their own in a calendar minute, and spend at most
// TokensPerDay tokens in a UTC day (the model's, and those of appended
// messages, which later turns send to the model). Zero means no limit.
type Limits struct {
	TurnsPerMinute    int
	MessagesPerMinute int
	SearchesPerMinute int
	TokensPerDay      int
}

// MaxTurnsPerMinute bounds TurnsPerMinute: a user has one rate-limit slot
// per turn allowed in a minute, and a turn may read them all.
const MaxTurnsPerMinute = 100

// Usage is a user's appended messages in the current minute and tokens
// spent on the current day. It is stored, so the limits hold across all
// server instances.
type Usage struct {
	UserID         string
	Minute         int64 // unix minute of the per-minute message quota
	MinuteMessages int   // appended by the client (not by turns)
	SearchMinute   int64 // unix minute of the per-minute search quota
	MinuteSearches int   // searches run in it
	Day            string
	DayTokens      int
}

// AdmitTurn admits a turn at now, given the user's spend today and the
// minute each of their rate-limit slots was last taken in, and returns the
// slot to take (NoSlot without a turn limit). A turn takes a slot that was
// not taken this minute, so at most TurnsPerMinute turns run in a minute
// however many instances serve them, and concurrent turns of one user
// take different slots rather than queueing for one. pick chooses
// among free slots (random, so that concurrent turns rarely pick the same).
func AdmitTurn(now time.Time, l Limits, dayTokens int, slots []int64, pick func(n int) int) (int, error) {
	if err := admitDay(now, l, dayTokens); err != nil {
		return NoSlot, err
	}
	if l.TurnsPerMinute <= 0 {
		return NoSlot, nil
	}
	minute := now.Unix() / 60
	var free []int
	for i := range min(l.TurnsPerMinute, len(slots)) {
		if slots[i] != minute {
			free = append(free, i)
		}
	}
	if len(free) == 0 {
		return NoSlot, limited(time.Unix((minute+1)*60, 0).Sub(now), "limit of %d turns per minute reached", l.TurnsPerMinute)
	}
	return free[pick(len(free))], nil
}

// slotSample is how many of a user's turn slots a turn reads: a free one
// is among them unless both were taken this minute, and then the turn
// reads them all, at one more round trip. With the default 20 a minute, a
// user who took k slots this minute meets that on k(k-1)/380 of turns
// (0.5% at 2 turns a minute, 5% at 5), so nearly every turn reads 2
// slots for its limit instead of 3 (or 20).
const slotSample = 2

// slotsToRead picks which of the user's n turn slots a turn reads:
// slotSample of them at random, or all.
func slotsToRead(n int, all bool) []int {
	n = min(n, MaxTurnsPerMinute)
	if n <= 0 {
		return nil
	}
	if all || n <= slotSample {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	return rand.Perm(n)[:slotSample]
}

// errMoreSlots is a claim's answer when every slot it read was taken this
// minute but it read only some: the turn reads them all and claims again.
var errMoreSlots = errs.Errorf(errs.EUNAVAILABLE, "every turn slot read was taken")

// AdmitSearch counts a search at now, or refuses it: a search embeds its
// query, which the day's spend pays for, and reads the user's exchanges,
// so a spent day or a full minute stops it before either.
func (u *Usage) AdmitSearch(now time.Time, l Limits) error {
	if err := admitDay(now, l, u.DayTokens); err != nil {
		return err
	}
	if m := now.Unix() / 60; m != u.SearchMinute {
		u.SearchMinute, u.MinuteSearches = m, 0
	}
	if l.SearchesPerMinute > 0 && u.MinuteSearches >= l.SearchesPerMinute {
		return limited(time.Unix((u.SearchMinute+1)*60, 0).Sub(now), "limit of %d searches per minute reached", l.SearchesPerMinute)
	}
	u.MinuteSearches++
	return nil
}

// AdmitMessages counts n appended messages at now, or refuses them all.
func (u *Usage) AdmitMessages(now time.Time, l Limits, n int) error {
	if err := admitDay(now, l, u.DayTokens); err != nil {
		return err
	}
	if m := now.Unix() / 60; m != u.Minute {
		u.Minute, u.MinuteMessages = m, 0
	}
	if l.MessagesPerMinute > 0 && u.MinuteMessages+n > l.MessagesPerMinute {
		return limited(time.Unix((u.Minute+1)*60, 0).Sub(now), "limit of %d appended messages per minute reached", l.MessagesPerMinute)
	}
	u.MinuteMessages += n
	return nil
}

// admitDay refuses once the day's tokens are spent.
func admitDay(now time.Time, l Limits, dayTokens int) error {
	if l.TokensPerDay > 0 && dayTokens >= l.TokensPerDay {
		midnight := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
		return limited(midnight.Sub(now), "daily token limit of %d reached", l.TokensPerDay)
	}
	return nil
}

func limited(wait time.Duration, format string, args ...any) error {
	if wait < time.Second {
		wait = time.Second
	}
	e := errs.Errorf(errs.ERATELIMITED, format, args...)
	e.RetryAfter = wait.Round(time.Second)
	return e
}

// UsageStore keeps a user's usage: their appended-messages and search
// quotas, their spend by day and their turn slots; turns and charges
// write it, the limits read it, export and erasure read and delete it.
type UsageStore interface {
	// UpdateUsage reads the user's per-minute message quota and their spend on day
	// (zero if none), calls fn and stores the quota, atomically; fn may
	// run more than once.
	UpdateUsage(ctx context.Context, userID, day string, fn func(*Usage) error) error
	// AddTokens adds n to the user's spend on day without reading it, so
	// that concurrent turns of one user never wait for each other.
	AddTokens(ctx context.Context, userID, day string, n int) error
	// ChargeAfter adds n to the user's spend on day for work done after
	// a reply or an append of that day (a title, a summary, learning,
	// embeddings), without reading it, and only if the day's spend is
	// there (the reply's or the append's own commit wrote it): after an
	// erasure it is not, ENOTFOUND is returned and nothing is written, so
	// work that outlives an erasure leaves nothing of the user behind.
	ChargeAfter(ctx context.Context, userID, day string, n int) error
	// ChargeMemory adds n to the user's spend on day for work done on
	// their long-term memory (a history roll-up), atomically with finding
	// that memory still there; an erased one is ENOTFOUND and nothing is
	// written.
	ChargeMemory(ctx context.Context, userID, day string, n int) error

	// GetUsage returns the user's usage records, nil if none.
	GetUsage(ctx context.Context, userID string) (*UsageRecord, error)
	// UsageOn returns the user's per-minute message quota, their spend on day (the
	// only day in Days) and the minutes of their first slots turn slots
	// (0 for one never taken), in one read.
	UsageOn(ctx context.Context, userID, day string, slots int) (*UsageRecord, error)
	DeleteUsage(ctx context.Context, userID string) (int, error)
}

// UsageRecord is everything stored of a user's usage.
type UsageRecord struct {
	Minute         int64          // of the per-minute message quota
	MinuteMessages int            // appended in it
	SearchMinute   int64          // of the per-minute search quota
	MinuteSearches int            // searches run in it
	Days           map[string]int // tokens spent, by UTC day
	// Models are, for UsageOn's day, the replies' tokens by the model that
	// answered (titles, summaries, learning and embeddings are not among
	// them: Days has every token).
	Models map[string]int
	// Bill are, for UsageOn's day, the same replies' tokens by model as
	// input, cached input and output (none for days before they were kept).
	Bill        map[string]ModelTokens
	TurnMinutes []int64 // the minute each rate-limit slot was last taken in
}

// Standing is where userID stands against the service's limits now, and
// today's bill priced by price (nil: the list prices); one read.
func (svc *Service) Standing(ctx context.Context, userID string, price func(model string) Price) (*Standing, error) {
	return UsageData{Store: svc.Usage, Price: price}.Standing(ctx, userID, svc.Limits, svc.now())
}

// UsageData is a user's per-minute quotas as personal data, and where
// they stand against the limits and the bill.
type UsageData struct {
	Store UsageStore
	// Price is a model's price (nil: the list prices, see ListPrice).
	Price func(model string) Price
}

// ExportUser returns the user's usage, or nil.
func (d UsageData) ExportUser(ctx context.Context, userID string) (any, error) {
	u, err := d.Store.GetUsage(ctx, userID)
	if err != nil || u == nil {
		return nil, err
	}
	return map[string]any{"minute": u.Minute, "messagesThisMinute": u.MinuteMessages,
		"searchMinute": u.SearchMinute, "searchesThisMinute": u.MinuteSearches,
		"tokensByDay": u.Days, "turnSlotMinutes": u.TurnMinutes}, nil
}

// EraseUser deletes the user's usage.
func (d UsageData) EraseUser(ctx context.Context, userID string) (int, error) {
	return d.Store.DeleteUsage(ctx, userID)
}

// Standing is a user's usage against the limits, now.
type Standing struct {
	Day      string `json:"day"`
	Tokens   Gauge  `json:"tokens"`   // spent today (UTC), of TokensPerDay
	Turns    Gauge  `json:"turns"`    // run this minute, of TurnsPerMinute
	Messages Gauge  `json:"messages"` // appended this minute, of MessagesPerMinute
	Searches Gauge  `json:"searches"` // run this minute, of SearchesPerMinute
	// ReplyTokensByModel are today's replies' tokens by the model that
	// answered (the rest of Tokens is titles, summaries, learning and
	// embeddings).
	ReplyTokensByModel map[string]int `json:"replyTokensByModel"`
	// Models are today's replies by the model that answered: input
	// tokens, the part of them served from the provider's prompt cache and
	// the rest, output tokens, and, at the model's price, dollars.
	Models map[string]ModelBill `json:"models"`
	// Dollars is what today's replies cost, at the prices known (models
	// without one are not in it).
	Dollars float64 `json:"dollars"`
}

// Gauge is one limit's standing: Limit 0 is none.
type Gauge struct {
	Used     int       `json:"used"`
	Limit    int       `json:"limit"`
	ResetsAt time.Time `json:"resetsAt"`
}

// Standing reads where userID stands against l at now (one read).
func (d UsageData) Standing(ctx context.Context, userID string, l Limits, now time.Time) (*Standing, error) {
	day, minute := Day(now), now.Unix()/60
	r, err := d.Store.UsageOn(ctx, userID, day, min(max(l.TurnsPerMinute, 0), MaxTurnsPerMinute))
	if err != nil {
		return nil, err
	}
	nextMinute := time.Unix((minute+1)*60, 0).UTC()
	st := &Standing{Day: day,
		Tokens:   Gauge{Used: r.Days[day], Limit: l.TokensPerDay, ResetsAt: now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)},
		Turns:    Gauge{Limit: l.TurnsPerMinute, ResetsAt: nextMinute},
		Messages: Gauge{Limit: l.MessagesPerMinute, ResetsAt: nextMinute},
		Searches: Gauge{Limit: l.SearchesPerMinute, ResetsAt: nextMinute}}
	for _, m := range r.TurnMinutes {
		if m == minute {
			st.Turns.Used++
		}
	}
	if r.Minute == minute {
		st.Messages.Used = r.MinuteMessages
	}
	if r.SearchMinute == minute {
		st.Searches.Used = r.MinuteSearches
	}
	st.ReplyTokensByModel = map[string]int{}
	for m, n := range r.Models {
		st.ReplyTokensByModel[m] = n
	}
	st.Models = d.bills(r)
	for _, b := range st.Models {
		if b.Dollars != nil {
			st.Dollars += *b.Dollars
		}
	}
	return st, nil
}

// bills are r's replies by model, priced.
func (d UsageData) bills(r *UsageRecord) map[string]ModelBill {
	price := d.Price
	if price == nil {
		price = ListPrice
	}
	out := map[string]ModelBill{}
	for m, t := range r.Bill {
		out[m] = billOf(t, price(m))
	}
	return out
}

// The per-user charges of what is spent outside a turn's own commits.

// Spend records n tokens spent for userID outside a turn (a search's
// embedding) against their daily limit.
func (svc *Service) Spend(ctx context.Context, userID string, n int) { svc.addTokens(ctx, userID, n) }

// AdmitSearch counts a search of userID's against their limits, or
// refuses it (rate_limited, with when to try again) before anything is
// embedded or read.
func (svc *Service) AdmitSearch(ctx context.Context, userID string) error {
	now := svc.now()
	return svc.Usage.UpdateUsage(ctx, userID, Day(now), func(u *Usage) error { return u.AdmitSearch(now, svc.Limits) })
}

// ChargeMemory records n tokens spent on userID's long-term memory (a
// history roll-up) against their daily limit, unless the memory was erased
// meanwhile. A failure is logged.
func (svc *Service) ChargeMemory(ctx context.Context, userID string, n int) {
	if n <= 0 {
		return
	}
	err := svc.Usage.ChargeMemory(ctx, userID, Day(svc.now()), n)
	if err != nil && errs.CodeOf(err) != errs.ENOTFOUND && svc.Log != nil {
		svc.Log.ErrorContext(ctx, "recording token usage failed", "code", string(errs.CodeOf(err)))
	}
}

// chargeAfter records n tokens of work done after a reply or an append
// of day against the user's daily limit, unless the user was erased
// meanwhile (nothing of theirs is written then). A failure is logged.
func (svc *Service) chargeAfter(ctx context.Context, userID, sessionID, day string, n int) {
	if n <= 0 {
		return
	}
	err := svc.Usage.ChargeAfter(ctx, userID, day, n)
	if err != nil && errs.CodeOf(err) != errs.ENOTFOUND {
		svc.logError(ctx, "recording token usage failed", sessionID, err)
	}
}

// addTokens records n tokens against the user's daily limit. What they
// paid for is stored already, so a failure here is logged, not returned.
func (svc *Service) addTokens(ctx context.Context, userID string, n int) {
	if n <= 0 {
		return
	}
	err := svc.Usage.AddTokens(ctx, userID, Day(svc.now()), n)
	if err != nil && svc.Log != nil {
		svc.Log.ErrorContext(ctx, "recording token usage failed", "code", string(errs.CodeOf(err)))
	}
}

// Day is the UTC date of now, as usage is kept by.
func Day(now time.Time) string { return now.UTC().Format(time.DateOnly) }

// Meter adds up the model tokens spent on a user's behalf besides a turn's
// own reply: titles, summaries, extractions. afterTurn charges the total
// against the user's daily limit once, when that work is done.
type Meter struct{ tokens atomic.Int64 }

type meterKey struct{}

// WithMeter returns ctx carrying a new meter, and the meter.
func WithMeter(ctx context.Context) (context.Context, *Meter) {
	m := &Meter{}
	return context.WithValue(ctx, meterKey{}, m), m
}

// Charge adds n tokens to the meter ctx carries, if any: what a call
// other than a chat completion (an embedding) spent for the user.
func Charge(ctx context.Context, n int) {
	if m, ok := ctx.Value(meterKey{}).(*Meter); ok && n > 0 {
		m.tokens.Add(int64(n))
	}
}

// Tokens is what the meter has counted.
func (m *Meter) Tokens() int { return int(m.tokens.Load()) }

// TextCounter counts the tokens of a text.
type TextCounter interface {
	Text(model, s string) int
}

// Metered wraps model so that the tokens of each call made under a meter
// (see WithMeter) are added to it: as the service reports them, or, when
// it reports none, as counted here from the request and the reply.
func Metered(model Model, count TextCounter) Model { return metered{model, count} }

type metered struct {
	Model
	count TextCounter
}

func (m metered) Generate(ctx context.Context, req Request, onDelta func(string)) (*Reply, error) {
	r, err := m.Model.Generate(ctx, req, onDelta)
	meter, _ := ctx.Value(meterKey{}).(*Meter)
	if err != nil || meter == nil {
		return r, err
	}
	n := r.PromptTokens + r.CompletionTokens
	if n == 0 {
		n = m.count.Text(req.Model, req.System) + m.count.Text(req.Model, req.Memory) + m.count.Text(req.Model, req.Context) + m.count.Text(req.Model, r.Content) + history.ReplyPriming
		for _, msg := range req.Messages {
			n += m.count.Text(req.Model, msg.Content) + 4
		}
	}
	meter.tokens.Add(int64(n))
	return r, nil
}
