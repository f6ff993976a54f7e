package sessions

import (
	"context"
	"strings"
	"time"

	"github.com/chatmemory/backend/kernel/clock"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/kernel/paging"
	"github.com/chatmemory/backend/kernel/strictjson"
)

// Store is the storage the sessions service needs. Implementations return
// *errs.Error values: errs.ENOTFOUND for a missing session, errs.EUNAVAILABLE when the
// database cannot be reached.
type Store interface {
	CreateSession(ctx context.Context, s *Session) error
	GetSession(ctx context.Context, id string) (*Session, error)
	// UpdateSession reads the session, calls fn with it and stores what fn
	// left in it, atomically. fn may run more than once and must have no
	// other effects; an error from fn aborts the update and is returned.
	UpdateSession(ctx context.Context, id string, fn func(*Session) error) (*Session, error)
	// ListSessions returns up to q.Limit sessions of q.UserID in q.Status,
	// by UpdatedAt descending, then ID descending, after q.After if set.
	ListSessions(ctx context.Context, q ListQuery) ([]*Session, error)
	// PurgeSession removes the session and every document under it once
	// check, run atomically with the removal of the session, accepts it,
	// then calls forget (if set) before the purge counts as done: a purge
	// cut off before forget returned is resumed with it. It returns how
	// many documents it deleted.
	PurgeSession(ctx context.Context, id string, check func(*Session) error, forget Forget) (int, error)
}

// Forget removes what was derived from purged sessions of one user and
// lives outside them (what long-term memory learned from them), in one
// change however many they are: a purge of many sessions calls it once a
// user. It is called once the sessions' documents are gone, so nothing
// derived from them can be stored any more, and may be called again for
// the same sessions.
type Forget func(ctx context.Context, userID string, sessionIDs []string) error

// ListQuery is one page of a user's sessions in one status.
type ListQuery struct {
	UserID string
	Status Status
	Limit  int
	After  *Cursor
}

// Cursor is the position after which a session page starts.
type Cursor struct {
	UpdatedAt time.Time
	ID        string
}

// Service carries out session operations for a signed-in user. Another
// user's session is reported exactly like a missing one.
type Service struct {
	Store          Store
	Policy         Policy
	Now            func() time.Time
	DefaultModel   string
	DefaultContext ContextSettings // strategy and window of sessions created without their own
	// Forget is called for each purged session's user (nil: nothing to forget).
	Forget Forget
	// ContextSize returns a model's context size in tokens, which
	// bounds a session's budget; nil bounds it by MaxBudgetTokens only.
	ContextSize func(model string) int
	// MaxInstructionsChars bounds a session's instructions; 0: a session
	// may have none.
	MaxInstructionsChars int
	// Models are the chat models a session may choose (DefaultModel among
	// them); nil: DefaultModel only.
	Models []string
}

// NewService returns a service with the default policy and the system clock.
func NewService(store Store, defaultModel string) *Service {
	return &Service{Store: store, Policy: DefaultPolicy(), Now: time.Now, DefaultModel: defaultModel, MaxInstructionsChars: DefaultMaxInstructionsChars}
}

// CreateInput is what a caller may choose when creating a session.
type CreateInput struct {
	Title         string   `json:"title,omitempty"`
	Metadata      Metadata `json:"metadata"`
	RetentionDays int      `json:"retentionDays,omitempty"`
	// MessageRetentionDays deletes the session's messages once they are
	// this old (the service's own period still applies if shorter).
	MessageRetentionDays int             `json:"messageRetentionDays,omitempty"`
	Context              ContextSettings `json:"memory"`
	NoLearning           bool            `json:"noLearning,omitempty"`
	// Instructions are the session's own system message (see
	// Session.Instructions), at most the service's MaxInstructionsChars.
	Instructions string `json:"instructions,omitempty"`
	// Model is the chat model of the session, one of the service's Models;
	// empty means the service default. The context budget, token counts
	// and summaries follow it.
	Model string `json:"model,omitempty"`
	// ID, when set, is the new session's id (so that a retried request
	// creates the same session); empty means a random id.
	ID string `json:"-"`
}

// UnmarshalJSON rejects unknown keys.
func (in *CreateInput) UnmarshalJSON(data []byte) error {
	type plain CreateInput // without this method
	return strictjson.Decode(data, (*plain)(in))
}

// Create starts an active session owned by userID.
func (svc *Service) Create(ctx context.Context, userID string, in CreateInput) (*Session, error) {
	s, err := svc.New(userID, in)
	if err != nil {
		return nil, err
	}
	if err := svc.Store.CreateSession(ctx, s); err != nil {
		return nil, err
	}
	return s, nil
}

// New returns the session Create would store, without storing it: for
// callers that store it together with other writes.
func (svc *Service) New(userID string, in CreateInput) (*Session, error) {
	if err := checkUser(userID); err != nil {
		return nil, err
	}
	title, err := normalizeTitle(in.Title)
	if err != nil {
		return nil, err
	}
	if err := in.Metadata.Validate(); err != nil {
		return nil, err
	}
	model, err := svc.checkModel(in.Model)
	if err != nil {
		return nil, err
	}
	in.Model = model
	if err := svc.checkContext(in.Context, in.Model); err != nil {
		return nil, err
	}
	if in.RetentionDays < 0 || in.RetentionDays > MaxRetentionDays {
		return nil, errs.Errorf(errs.EINVALID, "retentionDays must be between 1 and %d", MaxRetentionDays)
	}
	if err := CheckMessageRetentionDays(in.MessageRetentionDays); err != nil {
		return nil, err
	}
	instructions, err := svc.checkInstructions(in.Instructions)
	if err != nil {
		return nil, err
	}
	id := in.ID
	if id == "" {
		id = ids.New()
	} else if err := CheckID(id); err != nil {
		return nil, err
	}
	now := svc.now()
	s := &Session{
		ID:                   id,
		UserID:               userID,
		Title:                title,
		TitleSource:          TitleUser,
		Model:                in.Model,
		Status:               StatusActive,
		CreatedAt:            now,
		UpdatedAt:            now,
		LastActivityAt:       now,
		RetentionDays:        in.RetentionDays,
		MessageRetentionDays: in.MessageRetentionDays,
		Metadata:             in.Metadata.Clone(),
		Context:              in.Context.withDefaults(svc.DefaultContext),
		NoLearning:           in.NoLearning,
		Instructions:         instructions,
	}
	if title == "" {
		s.Title, s.TitleSource = DefaultTitle, TitleDefault
	}
	s.ExpiresAt = svc.Policy.ExpiresAt(s)
	return s, nil
}

// Get returns the caller's session id.
func (svc *Service) Get(ctx context.Context, userID, id string) (*Session, error) {
	if err := checkUser(userID); err != nil {
		return nil, err
	}
	if err := CheckID(id); err != nil {
		return nil, err
	}
	s, err := svc.Store.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.CheckOwner(userID); err != nil {
		return nil, err
	}
	return s, nil
}

// ListRequest asks for one page of the caller's sessions.
type ListRequest struct {
	Status    Status // empty: active
	Limit     int    // 0: paging.DefaultSize
	PageToken string
}

// SessionPage is one page of sessions; NextPageToken is empty on the last.
type SessionPage struct {
	Sessions      []*Session `json:"sessions"`
	NextPageToken string     `json:"nextPageToken,omitempty"`
}

// List returns a page of the caller's sessions, most recently updated first.
func (svc *Service) List(ctx context.Context, userID string, req ListRequest) (*SessionPage, error) {
	if err := checkUser(userID); err != nil {
		return nil, err
	}
	if req.Status == "" {
		req.Status = StatusActive
	}
	if _, err := ParseStatus(string(req.Status)); err != nil {
		return nil, err
	}
	limit, err := paging.Limit(req.Limit)
	if err != nil {
		return nil, err
	}
	q := ListQuery{UserID: userID, Status: req.Status, Limit: limit + 1}
	if req.PageToken != "" {
		if q.After, err = decodeSessionToken(req.PageToken, req.Status); err != nil {
			return nil, err
		}
	}
	list, err := svc.Store.ListSessions(ctx, q)
	if err != nil {
		return nil, err
	}
	page := &SessionPage{Sessions: list}
	if len(list) > limit {
		page.Sessions = list[:limit]
		last := page.Sessions[limit-1]
		page.NextPageToken = paging.Encode(sessionToken{Status: req.Status, UpdatedAt: last.UpdatedAt.UnixNano(), ID: last.ID})
	}
	if page.Sessions == nil {
		page.Sessions = []*Session{}
	}
	return page, nil
}

type sessionToken struct {
	Status    Status `json:"s"`
	UpdatedAt int64  `json:"u"`
	ID        string `json:"i"`
}

func decodeSessionToken(tok string, status Status) (*Cursor, error) {
	var t sessionToken
	if err := paging.Decode(tok, &t); err != nil {
		return nil, err
	}
	if t.Status != status || !ids.Valid(t.ID) {
		return nil, errs.Errorf(errs.EINVALID, "pageToken does not belong to this query")
	}
	return &Cursor{UpdatedAt: time.Unix(0, t.UpdatedAt).UTC(), ID: t.ID}, nil
}

// Update is a change of a session's title, metadata and context settings:
// the only fields a caller may change directly. Unknown fields are rejected.
type Update struct {
	Title      *string          `json:"title,omitempty"`
	Metadata   *Metadata        `json:"metadata,omitempty"`
	Context    *ContextSettings `json:"memory,omitempty"`
	NoLearning *bool            `json:"noLearning,omitempty"`
	// MessageRetentionDays sets the session's own message retention; 0
	// removes it.
	MessageRetentionDays *int `json:"messageRetentionDays,omitempty"`
	// Instructions replace the session's instructions; "" removes them.
	// They apply from the next turn.
	Instructions *string `json:"instructions,omitempty"`
	// Model changes the session's model (one of the service's Models)
	// from the next turn.
	Model *string `json:"model,omitempty"`
}

// UnmarshalJSON rejects any field Update does not have.
func (u *Update) UnmarshalJSON(data []byte) error {
	type plain Update // without this method
	return strictjson.Decode(data, (*plain)(u))
}

// Update changes the title and/or replaces the metadata of the caller's session.
func (svc *Service) Update(ctx context.Context, userID, id string, upd Update) (*Session, error) {
	if err := checkUser(userID); err != nil {
		return nil, err
	}
	if err := CheckID(id); err != nil {
		return nil, err
	}
	upd, err := svc.checkUpdate(upd)
	if err != nil {
		return nil, err
	}
	now := svc.now()
	return svc.Store.UpdateSession(ctx, id, func(s *Session) error {
		if err := s.CheckOwner(userID); err != nil {
			return err
		}
		if err := svc.apply(s, upd); err != nil {
			return err
		}
		s.UpdatedAt = now
		return nil
	})
}

// checkUpdate checks each change of upd on its own, and returns upd with
// its title, model and instructions as they are stored.
func (svc *Service) checkUpdate(upd Update) (Update, error) {
	if upd == (Update{}) {
		return upd, errs.Errorf(errs.EINVALID, "nothing to update: give title, metadata, memory, noLearning, messageRetentionDays, instructions and/or model")
	}
	if upd.Model != nil {
		model, err := svc.checkModel(*upd.Model)
		if err != nil {
			return upd, err
		}
		upd.Model = &model
	}
	if upd.Instructions != nil {
		instructions, err := svc.checkInstructions(*upd.Instructions)
		if err != nil {
			return upd, err
		}
		upd.Instructions = &instructions
	}
	if upd.MessageRetentionDays != nil {
		if err := CheckMessageRetentionDays(*upd.MessageRetentionDays); err != nil {
			return upd, err
		}
	}
	if upd.Title != nil {
		title, err := normalizeTitle(*upd.Title)
		if err != nil {
			return upd, err
		}
		if title == "" {
			return upd, errs.Errorf(errs.EINVALID, "title must not be empty")
		}
		upd.Title = &title
	}
	if upd.Metadata != nil {
		if err := upd.Metadata.Validate(); err != nil {
			return upd, err
		}
	}
	if upd.Context != nil {
		if err := upd.Context.Validate(); err != nil {
			return upd, err
		}
	}
	return upd, nil
}

// apply makes the checked changes upd to s, once the session's context
// settings fit its model (the new one, if upd changes it).
func (svc *Service) apply(s *Session, upd Update) error {
	if upd.Model != nil {
		s.Model = *upd.Model
	}
	if upd.Context != nil || upd.Model != nil {
		settings := s.Context
		if upd.Context != nil {
			settings = *upd.Context
		}
		if err := svc.checkContext(settings, s.Model); err != nil {
			return err
		}
	}
	if upd.Title != nil {
		s.Title, s.TitleSource = *upd.Title, TitleUser
	}
	if upd.Instructions != nil {
		s.Instructions = *upd.Instructions
	}
	if upd.Metadata != nil {
		s.Metadata = upd.Metadata.Clone()
	}
	if upd.Context != nil {
		s.Context = upd.Context.withDefaults(svc.DefaultContext)
	}
	if upd.NoLearning != nil {
		s.NoLearning = *upd.NoLearning
	}
	if upd.MessageRetentionDays != nil {
		s.MessageRetentionDays = *upd.MessageRetentionDays
	}
	return nil
}

// checkContext validates context settings for a session of model.
func (svc *Service) checkContext(m ContextSettings, model string) error {
	if svc.ContextSize != nil {
		if err := m.checkBudget(min(svc.ContextSize(model), MaxBudgetTokens), model); err != nil {
			return err
		}
	}
	return m.Validate()
}

// SetGeneratedTitle gives the session a generated title, unless its user
// has chosen one (which is never overwritten). It reports whether it did.
func (svc *Service) SetGeneratedTitle(ctx context.Context, id, title string) (bool, error) {
	title, err := normalizeTitle(title)
	if err != nil || title == "" {
		return false, errs.Errorf(errs.EINVALID, "unusable generated title")
	}
	set := false
	_, err = svc.Store.UpdateSession(ctx, id, func(s *Session) error {
		set = s.TitleSource != TitleUser
		if set {
			s.Title, s.TitleSource = title, TitleGenerated
		}
		return nil
	})
	return set && err == nil, err
}

// Archive, Restore and Delete move the caller's session through its lifecycle.
func (svc *Service) Archive(ctx context.Context, userID, id string) (*Session, error) {
	return svc.transition(ctx, userID, id, ActionArchive)
}

func (svc *Service) Restore(ctx context.Context, userID, id string) (*Session, error) {
	return svc.transition(ctx, userID, id, ActionRestore)
}

func (svc *Service) Delete(ctx context.Context, userID, id string) (*Session, error) {
	return svc.transition(ctx, userID, id, ActionDelete)
}

func (svc *Service) transition(ctx context.Context, userID, id string, a Action) (*Session, error) {
	if err := checkUser(userID); err != nil {
		return nil, err
	}
	if err := CheckID(id); err != nil {
		return nil, err
	}
	now := svc.now()
	return svc.Store.UpdateSession(ctx, id, func(s *Session) error {
		if err := s.CheckOwner(userID); err != nil {
			return err
		}
		return s.Apply(a, now, svc.Policy)
	})
}

func (svc *Service) now() time.Time { return clock.Stored(svc.Now) }

func checkUser(userID string) error {
	if strings.TrimSpace(userID) == "" {
		return errs.Errorf(errs.EUNAUTHENTICATED, "no signed-in user")
	}
	return nil
}
