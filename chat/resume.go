package chat

import (
	"context"
	"strings"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/clock"
	"github.com/chatmemory/backend/kernel/errs"
)

// Resuming a reply from another connection (a reload while it streams):
// the reply in progress is found by its draft, followed as the draft
// grows, and ends with the stored reply.

// Progress is a reply in progress: its id and its text so far (its draft's).
type Progress struct {
	ReplyID, Text string
}

// InProgress answers the session's reply in progress; nil when none is,
// or when its turn stopped beating (an instance that died with it).
func (svc *Service) InProgress(ctx context.Context, userID, sessionID string) (*Progress, error) {
	st, err := svc.Turns.ReadTurn(ctx, TurnQuery{UserID: userID, SessionID: sessionID, Draft: true})
	if err == nil && st.Session != nil {
		err = st.Session.CheckOwner(userID)
	}
	if err != nil {
		return nil, err
	}
	if st.Session == nil || st.DraftReplyID == "" || st.Session.AnsweringAt(clock.Stored(svc.Now)) == nil {
		return nil, nil
	}
	return &Progress{ReplyID: st.DraftReplyID, Text: st.DraftText}, nil
}

// StopInProgress stops the session's reply in progress (stored as far as
// it got); ENOTFOUND when none is.
func (svc *Service) StopInProgress(ctx context.Context, userID, sessionID string) error {
	st, err := svc.Turns.ReadTurn(ctx, TurnQuery{UserID: userID, SessionID: sessionID, Draft: true})
	if err != nil {
		return err
	}
	if st.Session == nil || st.DraftReplyID == "" {
		return errs.Errorf(errs.ENOTFOUND, "no reply of this chat is in progress")
	}
	return svc.Stop(ctx, userID, sessionID, st.DraftReplyID)
}

// Follow passes p's text to send as its draft grows (each call the text
// not sent before) until the draft is gone (the reply stored, or its turn
// failed), ctx ends or the model's time is up; then it sends what the
// stored reply adds and answers that reply. EUNAVAILABLE when the reply
// was not stored.
func (svc *Service) Follow(ctx context.Context, userID, sessionID string, p Progress, send func(delta string)) (*history.Message, error) {
	q := TurnQuery{UserID: userID, SessionID: sessionID, Draft: true, ReplyID: p.ReplyID}
	sent := svc.followText(ctx, q, p.Text, send)
	st, err := svc.Turns.ReadTurn(ctx, q)
	if err != nil {
		return nil, err
	}
	if st.Answer == nil {
		return nil, errs.Errorf(errs.EUNAVAILABLE, "the reply did not complete; send the message again to have it answered")
	}
	if rest, ok := strings.CutPrefix(st.Answer.Content, sent); ok && rest != "" {
		send(rest)
	}
	return st.Answer, nil
}

// followText sends the draft's text as it grows and answers the text sent.
func (svc *Service) followText(ctx context.Context, q TurnQuery, text string, send func(string)) string {
	sent := ""
	every := max(svc.DraftInterval/2, 250*time.Millisecond)
	deadline := svc.Now().Add(svc.ModelTimeout + time.Minute)
	for {
		if rest, ok := strings.CutPrefix(text, sent); ok && rest != "" {
			send(rest)
			sent = text
		}
		select {
		case <-ctx.Done():
			return sent
		case <-time.After(every):
		}
		st, err := svc.Turns.ReadTurn(ctx, q)
		if err != nil || st.DraftReplyID != q.ReplyID || st.Answer != nil || svc.Now().After(deadline) {
			return sent
		}
		text = st.DraftText
	}
}
