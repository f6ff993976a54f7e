// Package history holds the messages of a session and decides what history
// the model sees: the context of a turn (context.go), built from the tail
// a session keeps stored (tail.go) and its summaries (compact.go).
// Messages are appended atomically with the session's counters and tail,
// numbered by a gapless per-session seq, and never changed after.
package history

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/strictjson"
	"github.com/chatmemory/backend/sessions"
)

// Role is who speaks in a message, in OpenAI's chat vocabulary.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system"
	RoleTool      Role = "tool"
)

// Limits on a message and a batch. Content is capped so that a message
// document stays far below Firestore's 1 MiB.
const (
	MaxContentBytes   = 32 << 10 // 32 KiB of UTF-8
	MaxBatch          = 50       // messages in one append
	MaxToolCalls      = 16       // tool calls in one assistant message
	MaxArgumentsBytes = 8 << 10  // arguments of one tool call
	MaxKeyLen         = 128      // clientMessageId
	maxNameLen        = 64
	maxSources        = 50
	maxSourceLen      = 2048
	maxToolsUsed      = 50
	maxShortField     = 128
)

// ToolCall is a function call requested by an assistant message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and carries its JSON arguments.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// MessageMetadata describes how a message came about.
type MessageMetadata struct {
	Model        string   `json:"model,omitempty" firestore:"model,omitempty"`
	Sources      []string `json:"sources,omitempty" firestore:"sources,omitempty"`
	ToolsUsed    []string `json:"toolsUsed,omitempty" firestore:"toolsUsed,omitempty"`
	DurationMs   int64    `json:"durationMs,omitempty" firestore:"durationMs,omitempty"`
	FinishReason string   `json:"finishReason,omitempty" firestore:"finishReason,omitempty"`
}

// UnmarshalJSON rejects unknown keys.
func (m *MessageMetadata) UnmarshalJSON(data []byte) error {
	type plain MessageMetadata // without this method
	return strictjson.Decode(data, (*plain)(m))
}

// Draft is a message as a caller submits it; the server assigns the rest.
type Draft struct {
	Role       Role            `json:"role"`
	Content    string          `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []ToolCall      `json:"toolCalls,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	Metadata   MessageMetadata `json:"metadata"`
	// Attachments are the ids of files the user uploaded (POST
	// /attachments) that a user's message carries.
	Attachments []string `json:"attachments,omitempty"`
	// Parts are Attachments as the service found them, in their order:
	// what the stored message keeps of each.
	Parts []Part `json:"-"`
}

// UnmarshalJSON rejects unknown keys.
func (d *Draft) UnmarshalJSON(data []byte) error {
	type plain Draft // without this method
	return strictjson.Decode(data, (*plain)(d))
}

// Message is a stored message. Tokens was counted once, when it was written.
type Message struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionId"`
	UserID    string `json:"-"`
	Seq       int    `json:"seq"`
	// ParentSeq is the seq of the message this one follows in its branch;
	// -1 for a first message (see sessions.Branches).
	ParentSeq       int             `json:"parentSeq"`
	Role            Role            `json:"role"`
	Content         string          `json:"content"`
	Name            string          `json:"name,omitempty"`
	ToolCalls       []ToolCall      `json:"toolCalls,omitempty"`
	ToolCallID      string          `json:"toolCallId,omitempty"`
	CreatedAt       time.Time       `json:"createdAt"`
	Tokens          int             `json:"tokens"`
	ClientMessageID string          `json:"clientMessageId,omitempty"`
	Metadata        MessageMetadata `json:"metadata"`
	// Attachments are the files a user's message carries (see Part).
	Attachments []Part `json:"attachments,omitempty"`
	// Feedback is its user's rating, on a reply they rated.
	Feedback *Feedback `json:"feedback,omitempty"`
	// Siblings, in a listing, are the seqs of the versions of this message
	// (those with its parent), itself included, when there is more than one.
	Siblings []int `json:"siblings,omitempty"`
	// Op, on the messages a keyed turn stores (its user message and its
	// reply), is the operation the key named: a retry under the key must
	// ask for the same one. Zero on other messages; a keyed message stored
	// before operations were recorded is a turn's.
	Op sessions.Operation `json:"-"`
}

// Searchable reports whether search finds m once it is indexed: a user's
// message, an assistant's reply (not a call of tools) or a tool's result,
// with text.
func (m *Message) Searchable() bool {
	switch m.Role {
	case RoleUser, RoleTool:
	case RoleAssistant:
		if len(m.ToolCalls) > 0 {
			return false
		}
	default:
		return false
	}
	return strings.TrimSpace(m.Content) != "" || len(m.Attachments) > 0
}

// sameContent reports whether a stored message is what d asks to store:
// the test for an idempotent retry.
func (m *Message) SameContent(d *Draft) bool {
	return m.Role == d.Role && m.Content == d.Content && m.Name == d.Name &&
		m.ToolCallID == d.ToolCallID && reflect.DeepEqual(nilIfEmpty(m.ToolCalls), nilIfEmpty(d.ToolCalls)) &&
		slices.Equal(PartIDs(m.Attachments), nilIfNone(d.Attachments))
}

func nilIfNone(ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	return ids
}

func nilIfEmpty(c []ToolCall) []ToolCall {
	if len(c) == 0 {
		return nil
	}
	return c
}

// Validate checks a batch of drafts and its key without storing anything.
func Validate(key string, drafts ...Draft) error { return validateBatch(key, drafts) }

// validateBatch checks a whole append before anything is counted or written.
func validateBatch(key string, drafts []Draft) error {
	if len(drafts) == 0 {
		return errs.Errorf(errs.EINVALID, "no messages to append")
	}
	if len(drafts) > MaxBatch {
		return errs.Errorf(errs.EINVALID, "at most %d messages in one append", MaxBatch)
	}
	if err := ValidateKey(key); err != nil {
		return err
	}
	for i := range drafts {
		if err := drafts[i].validate(i); err != nil {
			return err
		}
	}
	return nil
}

// validate checks one draft on its own; i is its place in the batch.
func (d *Draft) validate(i int) error {
	switch d.Role {
	case RoleUser, RoleAssistant, RoleSystem, RoleTool:
	default:
		return invalid(i, "unknown role %q (want user, assistant, system or tool)", d.Role)
	}
	if len(d.Content) > MaxContentBytes {
		return invalid(i, "content is larger than %d bytes", MaxContentBytes)
	}
	if !utf8.ValidString(d.Content) {
		return invalid(i, "content is not valid UTF-8")
	}
	if strings.TrimSpace(d.Content) == "" && !(d.Role == RoleAssistant && len(d.ToolCalls) > 0) && len(d.Attachments) == 0 {
		return invalid(i, "content is empty")
	}
	if err := d.checkAttachments(i); err != nil {
		return err
	}
	if d.Name != "" && !nameRE.MatchString(d.Name) {
		return invalid(i, "name must match %s", nameRE)
	}
	if len(d.ToolCalls) > 0 && d.Role != RoleAssistant {
		return invalid(i, "only assistant messages carry toolCalls")
	}
	if d.Role == RoleTool && d.ToolCallID == "" {
		return invalid(i, "a tool message needs the toolCallId of the call it answers")
	}
	if d.ToolCallID != "" && (d.Role != RoleTool || !idRE.MatchString(d.ToolCallID)) {
		return invalid(i, "toolCallId belongs on tool messages only and must be 1 to 128 printable characters")
	}
	if len(d.ToolCalls) > MaxToolCalls {
		return invalid(i, "more than %d tool calls", MaxToolCalls)
	}
	seen := map[string]bool{}
	for j := range d.ToolCalls {
		c := &d.ToolCalls[j]
		if c.Type == "" {
			c.Type = "function"
		}
		switch {
		case !idRE.MatchString(c.ID) || seen[c.ID]:
			return invalid(i, "toolCalls[%d]: id must be unique and 1 to 128 printable characters", j)
		case c.Type != "function":
			return invalid(i, "toolCalls[%d]: type must be \"function\"", j)
		case !nameRE.MatchString(c.Function.Name):
			return invalid(i, "toolCalls[%d]: function.name must match %s", j, nameRE)
		case len(c.Function.Arguments) > MaxArgumentsBytes:
			return invalid(i, "toolCalls[%d]: arguments are larger than %d bytes", j, MaxArgumentsBytes)
		}
		seen[c.ID] = true
	}
	return d.Metadata.validate(i)
}

func (m *MessageMetadata) validate(i int) error {
	switch {
	case len(m.Model) > maxShortField, len(m.FinishReason) > maxShortField:
		return invalid(i, "metadata.model and metadata.finishReason have at most %d characters", maxShortField)
	case m.DurationMs < 0:
		return invalid(i, "metadata.durationMs must not be negative")
	case len(m.Sources) > maxSources:
		return invalid(i, "metadata.sources has more than %d entries", maxSources)
	case len(m.ToolsUsed) > maxToolsUsed:
		return invalid(i, "metadata.toolsUsed has more than %d entries", maxToolsUsed)
	}
	for _, s := range m.Sources {
		if s == "" || len(s) > maxSourceLen {
			return invalid(i, "metadata.sources: each entry must have 1 to %d characters", maxSourceLen)
		}
	}
	for _, s := range m.ToolsUsed {
		if s == "" || len(s) > maxShortField {
			return invalid(i, "metadata.toolsUsed: each entry must have 1 to %d characters", maxShortField)
		}
	}
	return nil
}

// ValidateKey checks a clientMessageId ("" is none).
func ValidateKey(key string) error {
	if key != "" && !idRE.MatchString(key) {
		return errs.Errorf(errs.EINVALID, "clientMessageId must be 1 to %d printable characters", MaxKeyLen)
	}
	return nil
}

// toolSequence checks that every tool message in msgs answers an open call,
// given the calls still open before them, and returns the calls open after.
// An assistant message with tool calls opens its calls; any message other
// than a tool result closes what was open (an abandoned exchange), as
// OpenAI-style APIs want tool results right after the call.
func toolSequence(open []string, msgs []Message) ([]string, error) {
	for i, m := range msgs {
		switch {
		case m.Role == RoleTool:
			j := indexOf(open, m.ToolCallID)
			if j < 0 {
				return nil, invalid(i, "tool message answers no open tool call %q", m.ToolCallID)
			}
			open = append(open[:j:j], open[j+1:]...)
		case len(m.ToolCalls) > 0:
			open = open[:0:0]
			for _, c := range m.ToolCalls {
				open = append(open, c.ID)
			}
		default:
			open = nil
		}
	}
	if len(open) == 0 {
		return nil, nil
	}
	return open, nil
}

var (
	nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	idRE   = regexp.MustCompile(`^[\x21-\x7e]{1,128}$`) // printable ASCII, no spaces
)

// invalid is the error for messages[i] of a batch.
func invalid(i int, format string, args ...any) error {
	return errs.Errorf(errs.EINVALID, "messages[%d]: "+format, append([]any{i}, args...)...)
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}
