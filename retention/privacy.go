package retention

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/clock"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// PrivacyRepo is the storage export and erasure need.
type PrivacyRepo interface {
	ListSessions(ctx context.Context, q sessions.ListQuery) ([]*sessions.Session, error)
	ListMessages(ctx context.Context, q history.ListQuery) ([]history.Message, error)
	ListCompactions(ctx context.Context, sessionID string) ([]history.Compaction, error)
	PurgeSession(ctx context.Context, id string, check func(*sessions.Session) error, forget sessions.Forget) (int, error)
	// DeleteUserDocuments deletes, in pages, every document still carrying
	// userID (what an interrupted purge left behind), and returns how many.
	DeleteUserDocuments(ctx context.Context, userID string) (int, error)
}

// UserData is per-user data kept outside sessions (rate-limit windows,
// long-term memory): each kind exports and erases its own.
type UserData interface {
	ExportUser(ctx context.Context, userID string) (any, error) // JSON-able; nil if none
	EraseUser(ctx context.Context, userID string) (int, error)  // documents deleted
}

// StreamedExport is a value of an export that writes its JSON itself, a
// piece at a time as it reads it (files' bytes, which must not be held
// whole), rather than being marshalled at once.
type StreamedExport interface {
	WriteJSON(ctx context.Context, w io.Writer) error
}

// Privacy exports and erases everything a user owns.
type Privacy struct {
	Repo PrivacyRepo
	Data map[string]UserData // by the key it has in an export
	Now  func() time.Time
}

var statuses = []sessions.Status{sessions.StatusActive, sessions.StatusArchived, sessions.StatusDeleted}

const exportPage = 200

// Export writes everything userID owns as one JSON document, streamed: a
// page of sessions or messages at a time is all it holds at once. The
// document is
//
//	{"userId":…, "exportedAt":…, "sessions":[{"session":…, "compactions":[…], "messages":[…]}, …], <data key>:…}
//
// An error after writing began leaves the document unterminated, so a
// truncated export can never pass for a complete one.
func (p *Privacy) Export(ctx context.Context, userID string, w io.Writer) error {
	out := &jsonOut{w: w, enc: json.NewEncoder(w)}
	out.enc.SetEscapeHTML(false)
	head, _ := json.Marshal(map[string]any{"userId": userID, "exportedAt": clock.Stored(p.Now)})
	// Nothing is written until the first read has answered, so an export
	// that cannot start is an error the caller can still report as one.
	open := func() error { return out.put(string(head[:len(head)-1]) + `,"sessions":[`) }
	if err := p.exportSessions(ctx, userID, out, open); err != nil {
		return err
	}
	if err := out.put("]"); err != nil {
		return err
	}
	if err := p.exportData(ctx, userID, out); err != nil {
		return err
	}
	return out.put("}\n")
}

// exportSessions writes each of userID's sessions, a page at a time, by
// status; open runs once the first page has been read.
func (p *Privacy) exportSessions(ctx context.Context, userID string, out *jsonOut, open func() error) error {
	n := 0
	for _, st := range statuses {
		q := sessions.ListQuery{UserID: userID, Status: st, Limit: exportPage}
		for {
			page, err := p.Repo.ListSessions(ctx, q)
			if err != nil {
				return err
			}
			if open != nil {
				if err := open(); err != nil {
					return err
				}
				open = nil
			}
			for _, s := range page {
				if err := out.comma(n); err != nil {
					return err
				}
				n++
				if err := p.exportSession(ctx, out, s); err != nil {
					return err
				}
			}
			if len(page) < q.Limit {
				break
			}
			last := page[len(page)-1]
			q.After = &sessions.Cursor{UpdatedAt: last.UpdatedAt, ID: last.ID}
		}
	}
	return nil
}

// exportData writes, under each name of p.Data in order, what that
// domain keeps of userID.
func (p *Privacy) exportData(ctx context.Context, userID string, out *jsonOut) error {
	for _, name := range slices.Sorted(maps.Keys(p.Data)) {
		v, err := p.Data[name].ExportUser(ctx, userID)
		if err != nil {
			return err
		}
		key, _ := json.Marshal(name)
		if err := out.put("," + string(key) + ":"); err != nil {
			return err
		}
		if sv, ok := v.(StreamedExport); ok {
			err = sv.WriteJSON(ctx, out.w)
		} else {
			err = out.enc.Encode(v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *Privacy) exportSession(ctx context.Context, out *jsonOut, s *sessions.Session) error {
	cs, err := p.Repo.ListCompactions(ctx, s.ID)
	if err != nil {
		return err
	}
	if cs == nil {
		cs = []history.Compaction{}
	}
	if err := out.put(`{"session":`); err != nil {
		return err
	}
	if err := out.enc.Encode(s); err != nil {
		return err
	}
	if err := out.put(`,"compactions":`); err != nil {
		return err
	}
	if err := out.enc.Encode(cs); err != nil {
		return err
	}
	if err := out.put(`,"messages":[`); err != nil {
		return err
	}
	q := history.ListQuery{SessionID: s.ID, Limit: exportPage}
	n := 0
	for {
		page, err := p.Repo.ListMessages(ctx, q)
		if err != nil {
			return err
		}
		for _, m := range page {
			if err := out.comma(n); err != nil {
				return err
			}
			n++
			if err := out.enc.Encode(m); err != nil {
				return err
			}
		}
		if len(page) < q.Limit {
			break
		}
		q.AfterSeq = &page[len(page)-1].Seq
	}
	return out.put("]}")
}

// jsonOut is where an export's JSON is written as it is read.
type jsonOut struct {
	w   io.Writer
	enc *json.Encoder
}

// comma separates item n of a list from the one before it.
func (o *jsonOut) comma(n int) error {
	if n == 0 {
		return nil
	}
	return o.put(",")
}

func (o *jsonOut) put(s string) error {
	_, err := io.WriteString(o.w, s)
	return err
}

// Erasure is what Erase removed.
type Erasure struct {
	Sessions  int `json:"sessionsDeleted"`
	Documents int `json:"documentsDeleted"`
}

// Erase deletes everything userID owns, immediately and irreversibly:
// sessions of every status with everything under them, the user's other
// data, and any document an interrupted purge left carrying the user's id.
// It works in pages and is idempotent: run again after a failure, it
// continues where the last run stopped.
func (p *Privacy) Erase(ctx context.Context, userID string) (*Erasure, error) {
	if userID == "" {
		return nil, errs.Errorf(errs.EUNAUTHENTICATED, "no signed-in user")
	}
	e := &Erasure{}
	for _, st := range statuses {
		q := sessions.ListQuery{UserID: userID, Status: st, Limit: exportPage}
		for {
			page, err := p.Repo.ListSessions(ctx, q) // purged sessions leave the list
			if err != nil {
				return e, err
			}
			for _, s := range page {
				// Nothing to forget session by session: the user's other
				// data goes whole below, after every session is gone.
				n, err := p.Repo.PurgeSession(ctx, s.ID, func(s *sessions.Session) error { return s.CheckOwner(userID) }, nil)
				if errs.CodeOf(err) == errs.ENOTFOUND {
					continue // a concurrent erasure got there first
				}
				if err != nil {
					return e, err
				}
				e.Sessions++
				e.Documents += n
			}
			if len(page) < q.Limit {
				break
			}
		}
	}
	for name, d := range p.Data {
		n, err := d.EraseUser(ctx, userID)
		if err != nil {
			return e, fmt.Errorf("erase %s: %w", name, err)
		}
		e.Documents += n
	}
	n, err := p.Repo.DeleteUserDocuments(ctx, userID)
	e.Documents += n
	return e, err
}
