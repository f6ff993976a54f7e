package longterm

import (
	"context"
	"time"

	"github.com/chatmemory/backend/sessions"
)

// A run of roll-ups lists the sessions updated since its mark, whole (a
// read each, as listing only their owners was), and each user's roll-up
// takes its sessions from that listing instead of two queries of its own
// (a user's active and archived sessions updated since): a read and two
// round trips less a user, and on the emulator, which answers every query
// by scanning the whole project, the difference between a roll-up that
// grows with the project and one that does not. A user whose history
// looks further back than the listing (a first roll-up after the first
// run, or memory turned on again) queries, as does every user of a run
// that lists more than listedMax sessions (which it does not keep). A
// roll-up from the listing is as of the listing's start: its RolledUpAt
// is that moment, so a session updated after it is read again by the next
// run, not missed.

// listedMax is how many listed sessions a run keeps for its roll-ups.
const listedMax = 50000

// listing is the sessions updated after since, listed from at on, by
// user.
type listing struct {
	since, at time.Time
	of        map[string][]*sessions.Session
}

// listActive lists the sessions updated since (at now), a page at a
// time, and rolls up their users: all at once after the listing, each
// with its sessions from it, or, once more than listedMax are listed,
// those listed so far and then each page's, by their own queries. It
// returns the listing (nil if it was not kept) and whether out cut the
// roll-ups short.
func (svc *Service) listActive(ctx context.Context, r *RollUpReport, since, now time.Time, done map[string]bool,
	run func(ctx context.Context, userID string) error, out func() bool) (*listing, bool, error) {
	l := &listing{since: since, at: now, of: map[string][]*sessions.Session{}}
	var users []string
	for cursor := (*sessions.Cursor)(nil); ; {
		page, next, err := svc.Rolls.SessionsUpdatedSince(ctx, since, cursor, usersPage)
		if err != nil {
			return nil, false, err
		}
		r.Listed += len(page)
		for _, s := range page {
			users = append(users, s.UserID)
			if l != nil {
				l.of[s.UserID] = append(l.of[s.UserID], s)
			}
		}
		if r.Listed > listedMax {
			l = nil // too many to keep
		}
		if l == nil {
			if !svc.rollAll(ctx, r, newIDs(users, done), run, out) {
				return nil, true, nil
			}
			users = nil
		}
		if next == nil {
			break
		}
		cursor = next
	}
	return l, l != nil && !svc.rollAll(withListing(ctx, l), r, newIDs(users, done), run, out), nil
}

// sessionsSince returns userID's active and archived sessions updated
// after since, and the moment they are as of: from the run's listing if
// it goes back that far, else by queries (as of now).
func (svc *Service) sessionsSince(ctx context.Context, rolls RollUpStore, userID string, since, now time.Time) ([]*sessions.Session, time.Time, error) {
	if l := listingOf(ctx); l != nil && !since.Before(l.since) && !l.at.After(now) {
		var out []*sessions.Session
		for _, s := range l.of[userID] {
			if (s.Status == sessions.StatusActive || s.Status == sessions.StatusArchived) && s.UpdatedAt.After(since) {
				out = append(out, s)
			}
		}
		return out, l.at, nil
	}
	var out []*sessions.Session
	for _, st := range []sessions.Status{sessions.StatusActive, sessions.StatusArchived} {
		seen, err := svc.activeSince(ctx, rolls, userID, st, since)
		if err != nil {
			return nil, now, err
		}
		out = append(out, seen...)
	}
	return out, now, nil
}

type listingKey struct{}

// withListing is ctx with l for the roll-ups run under it (none if nil).
func withListing(ctx context.Context, l *listing) context.Context {
	if l == nil {
		return ctx
	}
	return context.WithValue(ctx, listingKey{}, l)
}

func listingOf(ctx context.Context) *listing {
	l, _ := ctx.Value(listingKey{}).(*listing)
	return l
}
