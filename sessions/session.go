// Package sessions holds what a chat session is and what may happen to it:
// the session document, its metadata, its context settings, its lifecycle
// (active, archived, deleted, purged), the moment retention will next act
// on it, and its tree of branches. Every other domain package builds on
// it; it knows nothing of HTTP or of Firestore, and declares the storage
// it needs as the Store interface.
package sessions

import (
	"encoding/json"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/kernel/strictjson"
)

// Status is where a session stands in its lifecycle.
type Status string

const (
	StatusActive   Status = "active"
	StatusArchived Status = "archived"
	StatusDeleted  Status = "deleted"
	// StatusPurged is the terminal state: the session and everything under it
	// are gone. It is never stored.
	StatusPurged Status = "purged"
)

// ParseStatus accepts the statuses a stored session can have.
func ParseStatus(s string) (Status, error) {
	switch st := Status(s); st {
	case StatusActive, StatusArchived, StatusDeleted:
		return st, nil
	}
	return "", errs.Errorf(errs.EINVALID, "unknown status %q (want active, archived or deleted)", s)
}

// TitleSource says who chose a session's title; a user's title is never
// overwritten by a generated one.
type TitleSource string

const (
	TitleDefault   TitleSource = "default"
	TitleUser      TitleSource = "user"
	TitleGenerated TitleSource = "generated"
)

// DefaultTitle is the title of a session created without one.
const DefaultTitle = "New chat"

// Limits on what a caller may put in a session.
const (
	MaxTitleLen       = 200 // characters
	MaxRetentionDays  = 3650
	maxTags           = 20
	maxTagLen         = 64
	maxCustomEntries  = 20
	maxCustomValueLen = 512
	maxAgentTypeLen   = 64
	maxTopicLen       = 200
	maxIDLen          = 128
	generatedIDLength = 20
	idAlphabet        = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

// Session is one conversation of one user: what it is (its owner, title,
// model, status and dates, counters, settings, its tree of branches), and
// what other domains keep with it (Bookkeeping). Counters (MessageCount,
// TokenCount, NextSeq) change only together with the messages they count.
type Session struct {
	ID             string      `json:"id"`
	UserID         string      `json:"userId"`
	Title          string      `json:"title"`
	TitleSource    TitleSource `json:"titleSource"`
	Model          string      `json:"model"`
	Status         Status      `json:"status"`
	CreatedAt      time.Time   `json:"createdAt"`
	UpdatedAt      time.Time   `json:"updatedAt"`
	LastActivityAt time.Time   `json:"lastActivityAt"`
	ArchivedAt     *time.Time  `json:"archivedAt"`
	DeletedAt      *time.Time  `json:"deletedAt"`
	ExpiresAt      time.Time   `json:"expiresAt"`
	MessageCount   int         `json:"messageCount"`
	TokenCount     int         `json:"tokenCount"`
	NextSeq        int         `json:"nextSeq"`
	RetentionDays  int         `json:"retentionDays,omitempty"`
	// MessageRetentionDays, if set, deletes the session's messages once
	// they are this many days old (see MessageRetention).
	MessageRetentionDays int             `json:"messageRetentionDays,omitempty"`
	Metadata             Metadata        `json:"metadata"`
	Context              ContextSettings `json:"memory"`
	// Usage is what the session's replies cost.
	Usage Usage `json:"usage"`
	// Feedback counts the ratings of its replies.
	Feedback FeedbackCounts `json:"feedback"`
	// NoLearning marks a session nothing may be learned from for the
	// user's long-term memory.
	NoLearning bool `json:"noLearning,omitempty"`
	// Instructions are the session's own system message to the model,
	// sent after the operator's prompt (which always comes first and
	// which a session cannot remove); "" for none.
	Instructions string `json:"instructions,omitempty"`
	// Branches is the session's tree of messages once it was branched
	// (a reply regenerated, a message edited); nil until then.
	Branches *Branches `json:"branches,omitempty"`
	// Bookkeeping is what other domains keep with the session. Its fields
	// show in the API beside the session's own (see MarshalJSON).
	Bookkeeping Bookkeeping `json:"-"`
}

// sessionJSON is a session as the API shows it: Bookkeeping's fields
// beside the session's own, as they were when Session embedded it.
type sessionJSON struct {
	*plainSession
	*Bookkeeping
}

// plainSession is Session without its methods, so that encoding it does
// not call them again.
type plainSession Session

// MarshalJSON writes s with Bookkeeping's fields at the top level.
func (s Session) MarshalJSON() ([]byte, error) {
	return json.Marshal(sessionJSON{(*plainSession)(&s), &s.Bookkeeping})
}

// UnmarshalJSON reads s as MarshalJSON writes it.
func (s *Session) UnmarshalJSON(data []byte) error {
	return json.Unmarshal(data, &sessionJSON{(*plainSession)(s), &s.Bookkeeping})
}

// Bookkeeping is what other domains keep in a session's document, beside
// what the session is, each field under its owner: declared here, kept
// there so that a turn reads and commits one document.
type Bookkeeping struct {
	// Message retention (package retention, through history): the seq
	// from which the session's messages are still stored (those before it
	// were deleted), and when its oldest stored message was written (zero
	// without messages; see NoteAppend).
	HistoryFrom    int       `json:"historyFrom"`
	HistoryStartAt time.Time `json:"-"`
	// Summaries (package history): the summary in use and when it was made.
	Summary          string     `json:"summary,omitempty"`
	SummaryUpdatedAt *time.Time `json:"summaryUpdatedAt,omitempty"`
	// Long-term memory (package longterm): the first seq it has not yet
	// learned from.
	LearnFrom int `json:"-"`
	// Tool exchanges (packages history and chat): the ids of the calls the
	// last stored assistant message made that have no result yet; a tool
	// result is accepted only for one of them.
	PendingToolCalls []string `json:"-"`
	// The turn (package chat): the turn answering one of its messages, if
	// any (see Answering); nil once its reply is stored.
	Answering *Answering `json:"-"`
}

// Usage is what a session's turns cost: the model tokens of its replies
// (as the model service reported them, or as counted here when it did
// not), how many replies, and the model of the last. Work done after a
// reply (titles, summaries, learning, embeddings) is charged to the
// user's day, not counted here.
type Usage struct {
	PromptTokens     int `json:"promptTokens" firestore:"promptTokens"`
	CompletionTokens int `json:"completionTokens" firestore:"completionTokens"`
	// CachedTokens are the part of PromptTokens the provider served from
	// its prompt cache (JSON also shows the rest, uncachedPromptTokens).
	CachedTokens int    `json:"cachedPromptTokens" firestore:"cachedTokens,omitempty"`
	Turns        int    `json:"turns" firestore:"turns"`
	LastModel    string `json:"lastModel,omitempty" firestore:"lastModel,omitempty"`
}

// MarshalJSON shows u with its uncached prompt tokens.
func (u Usage) MarshalJSON() ([]byte, error) {
	type plain Usage
	return json.Marshal(struct {
		plain
		Uncached int `json:"uncachedPromptTokens"`
	}{plain(u), max(u.PromptTokens-u.CachedTokens, 0)})
}

// FeedbackCounts are how many of a session's replies are rated up and
// down.
type FeedbackCounts struct {
	Up   int `json:"up" firestore:"up"`
	Down int `json:"down" firestore:"down"`
}

// Count adds d to the count of rating ("up" or "down").
func (f *FeedbackCounts) Count(rating string, d int) {
	switch rating {
	case "up":
		f.Up = max(0, f.Up+d)
	case "down":
		f.Down = max(0, f.Down+d)
	}
}

// Clone returns a deep copy, so stores can hand out sessions without sharing.
func (s *Session) Clone() *Session {
	c := *s
	c.ArchivedAt = cloneTime(s.ArchivedAt)
	c.DeletedAt = cloneTime(s.DeletedAt)
	c.Bookkeeping.SummaryUpdatedAt = cloneTime(s.Bookkeeping.SummaryUpdatedAt)
	c.Metadata = s.Metadata.Clone()
	if s.Context.ToolOutputs != nil {
		t := *s.Context.ToolOutputs
		c.Context.ToolOutputs = &t
	}
	c.Bookkeeping.PendingToolCalls = append([]string(nil), s.Bookkeeping.PendingToolCalls...)
	c.Branches = s.Branches.clone()
	if s.Bookkeeping.Answering != nil {
		a := *s.Bookkeeping.Answering
		c.Bookkeeping.Answering = &a
	}
	return &c
}

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// Metadata describes a session for the app that owns it.
type Metadata struct {
	AgentType string            `json:"agentType,omitempty" firestore:"agentType"`
	Topic     string            `json:"topic,omitempty" firestore:"topic"`
	Tags      []string          `json:"tags,omitempty" firestore:"tags"`
	Custom    map[string]string `json:"custom,omitempty" firestore:"custom"`
}

// Clone returns a deep copy.
func (m Metadata) Clone() Metadata {
	c := m
	c.Tags = append([]string(nil), m.Tags...)
	if m.Custom != nil {
		c.Custom = make(map[string]string, len(m.Custom))
		for k, v := range m.Custom {
			c.Custom[k] = v
		}
	}
	return c
}

// UnmarshalJSON rejects keys Metadata does not know, so a typo in a client is
// an error rather than silently dropped data.
func (m *Metadata) UnmarshalJSON(data []byte) error {
	type plain Metadata // without this method
	return strictjson.Decode(data, (*plain)(m))
}

// Validate checks the sizes and shapes of metadata.
func (m Metadata) Validate() error {
	switch {
	case utf8.RuneCountInString(m.AgentType) > maxAgentTypeLen:
		return errs.Errorf(errs.EINVALID, "metadata.agentType is longer than %d characters", maxAgentTypeLen)
	case utf8.RuneCountInString(m.Topic) > maxTopicLen:
		return errs.Errorf(errs.EINVALID, "metadata.topic is longer than %d characters", maxTopicLen)
	case len(m.Tags) > maxTags:
		return errs.Errorf(errs.EINVALID, "metadata.tags has more than %d tags", maxTags)
	case len(m.Custom) > maxCustomEntries:
		return errs.Errorf(errs.EINVALID, "metadata.custom has more than %d entries", maxCustomEntries)
	}
	for _, t := range m.Tags {
		if t == "" || utf8.RuneCountInString(t) > maxTagLen {
			return errs.Errorf(errs.EINVALID, "metadata.tags: each tag must have 1 to %d characters", maxTagLen)
		}
	}
	for k, v := range m.Custom {
		if !customKeyRE.MatchString(k) {
			return errs.Errorf(errs.EINVALID, "metadata.custom: key %q must match %s", k, customKeyRE)
		}
		if ReservedKey(k) {
			return errs.Errorf(errs.EINVALID, "metadata.custom: key %q is reserved (keys may not both start and end with \"__\")", k)
		}
		if utf8.RuneCountInString(v) > maxCustomValueLen {
			return errs.Errorf(errs.EINVALID, "metadata.custom[%q] is longer than %d characters", k, maxCustomValueLen)
		}
	}
	return nil
}

var customKeyRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// ReservedKey reports whether a caller's map key is one Firestore reserves
// for itself: field names matching __.*__ (such as __name__).
func ReservedKey(k string) bool {
	return len(k) >= 4 && strings.HasPrefix(k, "__") && strings.HasSuffix(k, "__")
}

// CheckID returns an invalid-argument error for a malformed session id.
func CheckID(id string) error {
	if !ids.Valid(id) {
		return errs.Errorf(errs.EINVALID, "malformed session id")
	}
	return nil
}

func normalizeTitle(title string) (string, error) {
	t := strings.TrimSpace(title)
	if utf8.RuneCountInString(t) > MaxTitleLen {
		return "", errs.Errorf(errs.EINVALID, "title is longer than %d characters", MaxTitleLen)
	}
	return t, nil
}
