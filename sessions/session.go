// Package sessions holds what a chat session is and what may happen to it:
// the session document, its metadata, its lifecycle (active, archived,
// deleted, purged) and the moment retention will next act on it. It is the
// domain root of the backend: it knows nothing of HTTP or of Firestore, and
// declares the storage it needs as the Repo interface.
package sessions

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
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
	return "", Errorf(EINVALID, "unknown status %q (want active, archived or deleted)", s)
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

// Session is one conversation of one user. Counters (MessageCount,
// TokenCount, NextSeq) change only together with the messages they count.
type Session struct {
	ID               string      `json:"id"`
	UserID           string      `json:"userId"`
	Title            string      `json:"title"`
	TitleSource      TitleSource `json:"titleSource"`
	Model            string      `json:"model"`
	Status           Status      `json:"status"`
	CreatedAt        time.Time   `json:"createdAt"`
	UpdatedAt        time.Time   `json:"updatedAt"`
	LastActivityAt   time.Time   `json:"lastActivityAt"`
	ArchivedAt       *time.Time  `json:"archivedAt"`
	DeletedAt        *time.Time  `json:"deletedAt"`
	ExpiresAt        time.Time   `json:"expiresAt"`
	MessageCount     int         `json:"messageCount"`
	TokenCount       int         `json:"tokenCount"`
	NextSeq          int         `json:"nextSeq"`
	RetentionDays    int         `json:"retentionDays,omitempty"`
	Summary          string      `json:"summary,omitempty"`
	SummaryUpdatedAt *time.Time  `json:"summaryUpdatedAt,omitempty"`
	Metadata         Metadata    `json:"metadata"`
	Memory           Memory      `json:"memory"`
	// NoLearning marks a session nothing may be learned from for the
	// user's long-term memory.
	NoLearning bool `json:"noLearning,omitempty"`
	// LearnFrom is the first seq long-term memory has not yet learned from.
	LearnFrom int `json:"-"`
	// PendingToolCalls are the ids of tool calls made by the last stored
	// assistant message that have no result yet. A tool result is accepted
	// only for one of them.
	PendingToolCalls []string `json:"-"`
	// Branches is the session's tree of messages once it was branched
	// (a reply regenerated, a message edited); nil until then.
	Branches *Branches `json:"branches,omitempty"`
}

// Clone returns a deep copy, so stores can hand out sessions without sharing.
func (s *Session) Clone() *Session {
	c := *s
	c.ArchivedAt = cloneTime(s.ArchivedAt)
	c.DeletedAt = cloneTime(s.DeletedAt)
	c.SummaryUpdatedAt = cloneTime(s.SummaryUpdatedAt)
	c.Metadata = s.Metadata.Clone()
	c.PendingToolCalls = append([]string(nil), s.PendingToolCalls...)
	c.Branches = s.Branches.clone()
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
	AgentType string            `json:"agentType,omitempty"`
	Topic     string            `json:"topic,omitempty"`
	Tags      []string          `json:"tags,omitempty"`
	Custom    map[string]string `json:"custom,omitempty"`
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
	return DecodeJSON(data, (*plain)(m))
}

var customKeyRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// ReservedKey reports whether a caller's map key is one Firestore reserves
// for itself: field names matching __.*__ (such as __name__).
func ReservedKey(k string) bool {
	return len(k) >= 4 && strings.HasPrefix(k, "__") && strings.HasSuffix(k, "__")
}

// Validate checks the sizes and shapes of metadata.
func (m Metadata) Validate() error {
	switch {
	case utf8.RuneCountInString(m.AgentType) > maxAgentTypeLen:
		return Errorf(EINVALID, "metadata.agentType is longer than %d characters", maxAgentTypeLen)
	case utf8.RuneCountInString(m.Topic) > maxTopicLen:
		return Errorf(EINVALID, "metadata.topic is longer than %d characters", maxTopicLen)
	case len(m.Tags) > maxTags:
		return Errorf(EINVALID, "metadata.tags has more than %d tags", maxTags)
	case len(m.Custom) > maxCustomEntries:
		return Errorf(EINVALID, "metadata.custom has more than %d entries", maxCustomEntries)
	}
	for _, t := range m.Tags {
		if t == "" || utf8.RuneCountInString(t) > maxTagLen {
			return Errorf(EINVALID, "metadata.tags: each tag must have 1 to %d characters", maxTagLen)
		}
	}
	for k, v := range m.Custom {
		if !customKeyRE.MatchString(k) {
			return Errorf(EINVALID, "metadata.custom: key %q must match %s", k, customKeyRE)
		}
		if ReservedKey(k) {
			return Errorf(EINVALID, "metadata.custom: key %q is reserved (keys may not both start and end with \"__\")", k)
		}
		if utf8.RuneCountInString(v) > maxCustomValueLen {
			return Errorf(EINVALID, "metadata.custom[%q] is longer than %d characters", k, maxCustomValueLen)
		}
	}
	return nil
}

// DecodeJSON decodes data into v strictly: unknown keys, values of the
// wrong type and trailing data are invalid-argument errors whose message
// names the field's path ("memory.budgetTokens: …") without echoing the
// caller's data. A type whose UnmarshalJSON calls DecodeJSON itself is
// decoded strictly wherever it is nested; the message is made once, by the
// outermost call, from the whole document.
func DecodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var inner *decodeError
		if errors.As(err, &inner) && inner.nested {
			// An UnmarshalJSON of ours failed inside this document: its
			// path is relative to itself, so find the problem again from here.
			err = inner.cause
		}
		return &Error{Code: EINVALID, Message: describe(data, reflect.TypeOf(v), err),
			Err: &decodeError{cause: err, nested: true}}
	}
	if dec.More() {
		return Errorf(EINVALID, "malformed JSON: trailing data after the object")
	}
	return nil
}

// decodeError marks an error of DecodeJSON, so that an enclosing call
// describes it anew instead of prefixing the inner message again.
type decodeError struct {
	cause  error
	nested bool
}

func (e *decodeError) Error() string { return e.cause.Error() }
func (e *decodeError) Unwrap() error { return e.cause }

// describe says what is wrong with data as a value of type t, naming the
// path of the first unknown key or value of the wrong kind.
func describe(data []byte, t reflect.Type, err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) || !json.Valid(data) {
		return "malformed JSON: syntax error"
	}
	if path, problem, ok := findProblem(data, t, ""); ok {
		if path == "" {
			return "the body " + problem
		}
		return path + ": " + problem
	}
	return "malformed JSON: cannot decode"
}

var (
	timeType      = reflect.TypeOf(time.Time{})
	rawType       = reflect.TypeOf(json.RawMessage(nil))
	unmarshalType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
)

// findProblem walks raw (valid JSON) against t as encoding/json would and
// returns the path of the first value it would refuse, and why.
func findProblem(raw []byte, t reflect.Type, path string) (string, string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" || t == rawType || t.Kind() == reflect.Interface {
		return "", "", false
	}
	want := func(what string) (string, string, bool) { return path, "must be " + what, true }
	switch {
	case t == timeType:
		if raw[0] != '"' {
			return want("a time in RFC 3339 format")
		}
		return "", "", false
	case t.Kind() != reflect.Struct && reflect.PointerTo(t).Implements(unmarshalType):
		return "", "", false // decodes itself; nothing of ours
	}
	switch t.Kind() {
	case reflect.String:
		if raw[0] != '"' {
			return want("a string")
		}
	case reflect.Bool:
		if raw[0] != 't' && raw[0] != 'f' {
			return want("true or false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if bytes.ContainsAny(raw, ".eE") || raw[0] == '"' || raw[0] == '{' || raw[0] == '[' || raw[0] == 't' || raw[0] == 'f' {
			return want("a whole number")
		}
		if json.Unmarshal(raw, reflect.New(t).Interface()) != nil {
			return want("a whole number in range")
		}
	case reflect.Float32, reflect.Float64:
		if !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
			return want("a number")
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
			return want("a list")
		}
		for i, item := range items {
			if p, why, ok := findProblem(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, why, true
			}
		}
	case reflect.Map:
		var obj map[string]json.RawMessage
		if raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
			return want("an object")
		}
		for _, k := range sortedKeys(obj) {
			if p, why, ok := findProblem(obj[k], t.Elem(), join(path, k)); ok {
				return p, why, true
			}
		}
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
			return want("an object")
		}
		fields := jsonFields(t)
		for _, k := range sortedKeys(obj) {
			ft, ok := fields[strings.ToLower(k)]
			if !ok {
				return join(path, k), "unknown field", true
			}
			if p, why, ok := findProblem(obj[k], ft, join(path, k)); ok {
				return p, why, true
			}
		}
	}
	return "", "", false
}

// jsonFields maps the lower-cased JSON names of t's fields (embedded
// structs flattened, as encoding/json does) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		case !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		out[strings.ToLower(name)] = f.Type
	}
	return out
}

func join(path, key string) string {
	if len(key) > 64 { // a message names a field; it does not replay the body
		key = strings.ToValidUTF8(key[:64], "") + "…"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ValidID reports whether id can name a session (or any document we create):
// letters, digits, '_' and '-', at most 128 characters, not starting with "__".
func ValidID(id string) bool {
	return len(id) > 0 && len(id) <= maxIDLen && idRE.MatchString(id) && !strings.HasPrefix(id, "__")
}

// CheckID returns an invalid-argument error for a malformed session id.
func CheckID(id string) error {
	if !ValidID(id) {
		return Errorf(EINVALID, "malformed session id")
	}
	return nil
}

// NewID returns a random 20-character identifier, like Firestore's own.
func NewID() string {
	b := make([]byte, generatedIDLength)
	rand.Read(b) // never fails (crypto/rand panics rather than return an error)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b)
}

func normalizeTitle(title string) (string, error) {
	t := strings.TrimSpace(title)
	if utf8.RuneCountInString(t) > MaxTitleLen {
		return "", Errorf(EINVALID, "title is longer than %d characters", MaxTitleLen)
	}
	return t, nil
}
