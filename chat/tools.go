package chat

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
)

// A turn may offer the model the app's own tools (OpenAI's function
// tools). The server runs none of them: when the model asks for calls,
// the turn stores its reply with them and ends there (the session then
// awaits their results); the app runs them and sends the results as the
// next turn (TurnRequest.ToolResults), which stores them and calls the
// model again, as many rounds as the operator allows.

// Tool is a function the app defines and runs itself.
type Tool struct {
	Type        string          `json:"type,omitempty"` // "function" (the only kind), or empty
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // a JSON Schema object
}

// ToolResult answers one of the calls the session's last reply made.
type ToolResult struct {
	ToolCallID string `json:"toolCallId"`
	Content    string `json:"content"`
}

// resultsDigest names a whole set of tool results, in order, so that a
// key reused with any of them changed, added or left out is another
// request (sessions.Operation.Target of OpTools).
func resultsDigest(results []ToolResult) string {
	h := sha256.New()
	for _, r := range results {
		fmt.Fprintf(h, "%d:%s%d:%s", len(r.ToolCallID), r.ToolCallID, len(r.Content), r.Content)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// Tool choices (or a tool's name: that tool must be called).
const (
	ToolChoiceAuto     = "auto"     // the model decides (the default with tools)
	ToolChoiceNone     = "none"     // the model answers in text
	ToolChoiceRequired = "required" // the model calls at least one tool
)

// Bounds of a turn's tools.
const (
	MaxTools             = 32       // tools a turn offers
	MaxToolBytes         = 64 << 10 // all their definitions, as JSON
	MaxToolDescription   = 1024     // characters of a tool's description
	DefaultMaxToolRounds = 8        // replies with tool calls in a row before the model must answer in text
)

// NotRunResult is the result stored for a call a new message abandoned
// (TurnRequest.AbandonTools): the model sees that it was not run.
const NotRunResult = "not run: the app went on without this call's result"

// StatusRequiresAction is a turn whose reply asks for tool calls: the app
// runs them and sends their results.
const StatusRequiresAction = "requires_action"

// StatusCompleted is a turn whose reply is an answer.
const StatusCompleted = "completed"

// Status is what the turn's reply leaves the app to do.
func (r *TurnResult) Status() string {
	if len(r.Reply.ToolCalls) > 0 {
		return StatusRequiresAction
	}
	return StatusCompleted
}

var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// validateTools checks a request's tools, its tool choice and its tool
// results before anything is read.
func validateTools(req TurnRequest) error {
	if err := checkTools(req.Tools); err != nil {
		return err
	}
	if err := checkToolChoice(req.ToolChoice, req.Tools); err != nil {
		return err
	}
	switch {
	case len(req.ToolResults) == 0:
		if req.AbandonTools && req.Message == "" {
			return errs.Errorf(errs.EINVALID, "abandonTools: goes with a message (it records the calls awaiting results as not run)")
		}
		return nil
	case req.Message != "" || req.Regenerate != "" || req.Edit != "":
		return errs.Errorf(errs.EINVALID, "toolResults: a turn sends either tool results or a message, regenerates or edits, not both")
	case req.SessionID == "":
		return errs.Errorf(errs.EINVALID, "sessionId is required with toolResults")
	case len(req.ToolResults) > history.MaxToolCalls:
		return errs.Errorf(errs.EINVALID, "toolResults: at most %d", history.MaxToolCalls)
	}
	seen := map[string]bool{}
	for i, r := range req.ToolResults {
		if r.ToolCallID == "" {
			return errs.Errorf(errs.EINVALID, "toolResults[%d].toolCallId is required", i)
		}
		if seen[r.ToolCallID] {
			return errs.Errorf(errs.EINVALID, "toolResults[%d].toolCallId: %q is answered twice", i, r.ToolCallID)
		}
		seen[r.ToolCallID] = true
	}
	return nil
}

func checkTools(tools []Tool) error {
	if len(tools) > MaxTools {
		return errs.Errorf(errs.EINVALID, "tools: at most %d", MaxTools)
	}
	size, names := 0, map[string]bool{}
	for i, t := range tools {
		switch {
		case t.Type != "" && t.Type != "function":
			return errs.Errorf(errs.EINVALID, "tools[%d].type must be \"function\"", i)
		case !toolNameRE.MatchString(t.Name):
			return errs.Errorf(errs.EINVALID, "tools[%d].name must match %s", i, toolNameRE)
		case names[t.Name]:
			return errs.Errorf(errs.EINVALID, "tools[%d].name: %q is declared twice", i, t.Name)
		case len([]rune(t.Description)) > MaxToolDescription:
			return errs.Errorf(errs.EINVALID, "tools[%d].description: at most %d characters", i, MaxToolDescription)
		case len(t.Parameters) > 0 && !isJSONObject(t.Parameters):
			return errs.Errorf(errs.EINVALID, "tools[%d].parameters must be a JSON Schema object", i)
		}
		names[t.Name] = true
		size += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	if size > MaxToolBytes {
		return errs.Errorf(errs.EINVALID, "tools: at most %d bytes of definitions", MaxToolBytes)
	}
	return nil
}

func isJSONObject(b json.RawMessage) bool {
	var v map[string]any
	return bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) && json.Unmarshal(b, &v) == nil
}

func checkToolChoice(choice string, tools []Tool) error {
	switch choice {
	case "", ToolChoiceAuto, ToolChoiceNone:
		return nil
	case ToolChoiceRequired:
		if len(tools) == 0 {
			return errs.Errorf(errs.EINVALID, "toolChoice %q needs tools", choice)
		}
		return nil
	}
	for _, t := range tools {
		if t.Name == choice {
			return nil
		}
	}
	return errs.Errorf(errs.EINVALID, "toolChoice must be auto, none, required or the name of one of the tools; %q is none of them", choice)
}
