package chat

import (
	"context"
	"strings"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// validate checks a turn request before anything is read.
func (svc *Service) validate(req TurnRequest, draft history.Draft) error {
	if err := validateTools(req); err != nil {
		return err
	}
	switch {
	case len(req.Attachments) > 0 && (len(req.ToolResults) > 0 || req.Regenerate != ""):
		return errs.Errorf(errs.EINVALID, "attachments: only a message carries attachments (a regeneration or tool results do not)")
	case len(req.ToolResults) > 0:
		drafts := make([]history.Draft, len(req.ToolResults))
		for i, r := range req.ToolResults {
			drafts[i] = history.Draft{Role: history.RoleTool, ToolCallID: r.ToolCallID, Content: r.Content}
		}
		return renamed(history.Validate(req.ClientMessageID, drafts...), "messages[", "toolResults[")
	case req.Regenerate != "" && req.Edit != "":
		return errs.Errorf(errs.EINVALID, "a turn either regenerates a reply or edits a message, not both")
	case (req.Regenerate != "" || req.Edit != "") && req.SessionID == "":
		return errs.Errorf(errs.EINVALID, "sessionId is required to regenerate or edit")
	case req.Regenerate != "":
		if req.Message != "" {
			return errs.Errorf(errs.EINVALID, "a regeneration sends no message: it answers the stored one again")
		}
		if err := sessions.CheckID(req.Regenerate); err != nil {
			return err
		}
		return history.ValidateKey(req.ClientMessageID)
	case req.Edit != "":
		if err := sessions.CheckID(req.Edit); err != nil {
			return err
		}
	}
	return renamed(renamed(history.Validate(req.ClientMessageID, draft), "messages[0].attachments", "attachments"), "messages[0]", "message")
}

// renamed names in a batch's error the field a turn's request has: a turn
// sends one message (or its tool results), not a batch of messages.
func renamed(err error, batch, field string) error {
	if err == nil {
		return nil
	}
	if rest, ok := strings.CutPrefix(errs.Message(err), batch); ok {
		return errs.Errorf(errs.CodeOf(err), "%s%s", field, rest)
	}
	return err
}

// fork is where a regeneration or an edit branches off.
type fork struct {
	regenerate bool
	target     history.Message // the user message answered anew, or edited
	leaf       int             // the message the new branch continues
	base       *history.Tail   // that branch's tail (history.BranchTail)
}

// planFork reads what a regeneration or an edit branches from: its target
// message and the tail of the branch it continues, read once (for a
// regenerated reply, the branch that ends at its question, which the tail
// usually holds). Messages and their parents never change, so what it
// reads stays true while the turn runs. It costs a read of the session and
// the target, and the reads of BranchTail; a turn that does not branch
// reads none of it.
func (svc *Service) planFork(ctx context.Context, req TurnRequest) (*fork, error) {
	f := &fork{regenerate: req.Regenerate != ""}
	id := req.Edit
	if f.regenerate {
		id = req.Regenerate
	}
	s, target, err := svc.readForked(ctx, req, id)
	if err != nil {
		return nil, err
	}
	reply := f.regenerate && target.Role == history.RoleAssistant // its question is answered anew
	notAnswer := errs.Errorf(errs.EINVALID, "message %s does not answer a user message, so it cannot be regenerated", target.ID)
	switch {
	case reply:
		if f.leaf = s.Parent(target.Seq); f.leaf < 0 {
			return nil, notAnswer
		}
	case target.Role != history.RoleUser:
		return nil, errs.Errorf(errs.EINVALID, "message %s is not a user message or a reply to one", id)
	default:
		f.target, f.leaf = target, target.Seq
		if !f.regenerate {
			f.leaf = s.Parent(target.Seq)
		}
	}
	if f.base, err = svc.History.BranchTail(ctx, s, f.leaf); err != nil {
		return nil, err
	}
	if !reply {
		return f, nil
	}
	// The question: the newest message of the branch read, else read.
	msgs := f.base.Messages
	if n := len(msgs); n > 0 && msgs[n-1].Seq == f.leaf {
		msgs = msgs[n-1:]
	} else if msgs, err = svc.History.Store.MessageRange(ctx, s.ID, f.leaf, f.leaf); err != nil {
		return nil, err
	}
	if len(msgs) != 1 || msgs[0].Role != history.RoleUser {
		return nil, notAnswer
	}
	f.target = msgs[0]
	return f, nil
}

// readForked reads the session of req and its message id, which a turn
// may branch from: the caller's, writable, and with no reply being
// written.
func (svc *Service) readForked(ctx context.Context, req TurnRequest, id string) (*sessions.Session, history.Message, error) {
	q := TurnQuery{UserID: req.UserID, SessionID: req.SessionID, AskedID: id}
	st, err := svc.Turns.RunTurn(ctx, q, nil, func(*TurnState) (*TurnWrite, error) { return nil, nil })
	if err != nil {
		return nil, history.Message{}, err
	}
	if st.Session == nil {
		return nil, history.Message{}, sessions.NotFound(req.SessionID)
	}
	s := st.Session
	if err := s.CheckOwner(req.UserID); err != nil {
		return nil, history.Message{}, err
	}
	if err := s.CheckWritable(); err != nil {
		return nil, history.Message{}, err
	}
	if st.Asked == nil {
		return nil, history.Message{}, errs.Errorf(errs.ENOTFOUND, "message %s not found in this session", id)
	}
	if a := s.AnsweringAt(svc.now()); a != nil {
		// Nothing branches while a reply of the session is written.
		return nil, history.Message{}, sessions.InProgress(svc.now(), a, "a reply in this session is being written; retry once it is stored")
	}
	return s, *st.Asked, nil
}
