package chat

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// StoppedReason is the finishReason of a reply stopped by its user.
const StoppedReason = "stopped"

// DefaultDraftInterval is how often a streaming reply's draft is written
// (and a stop request noticed): a page loaded mid-reply starts about a
// second behind the stream on average, at most two, and a reply streaming
// for 20 s writes its draft 10 times (make bench measures 0.5 to 4 s).
const DefaultDraftInterval = 2 * time.Second

// generate calls the model. A streaming reply is followed by a draft: its
// partial text is written every DraftInterval (a heartbeat, too), and a
// stop requested through it cancels the call and keeps what was said.
func (svc *Service) generate(ctx context.Context, req TurnRequest, q TurnQuery, st *TurnState, c *claim, mreq Request) (*Reply, error) {
	mctx, cancel := context.WithTimeout(ctx, svc.ModelTimeout)
	defer cancel()
	onDelta := req.OnDelta
	var mu sync.Mutex
	var partial strings.Builder
	var stopped atomic.Bool
	done := make(chan struct{})
	var follow sync.WaitGroup
	d := &Draft{SessionID: q.SessionID, ReplyID: c.replyID, UserID: q.UserID}
	if c.draft {
		onDelta = func(text string) {
			mu.Lock()
			partial.WriteString(text)
			mu.Unlock()
			req.OnDelta(text)
		}
		d.Version = st.DraftVersion
		interval := svc.DraftInterval
		if interval <= 0 {
			interval = DefaultDraftInterval
		}
		follow.Add(1)
		go func() {
			defer follow.Done()
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
				}
				mu.Lock()
				d.Text = partial.String()
				mu.Unlock()
				stop, err := svc.Drafts.SaveDraft(ctx, d)
				if errors.Is(err, ErrDraftTaken) {
					return // a later streaming turn of the session has the draft
				}
				if err != nil {
					svc.logError(ctx, "saving a draft failed", q.SessionID, err)
					continue
				}
				if stop {
					stopped.Store(true)
					cancel()
					return
				}
			}
		}()
	}
	reply, err := svc.Model.Generate(mctx, mreq, onDelta)
	close(done)
	follow.Wait()
	if c.draft {
		c.draftVersion = d.Version
	}
	if stopped.Load() {
		text := partial.String()
		if text == "" {
			return nil, errs.Errorf(errs.ECONFLICT, "the reply was stopped before any of it arrived; your message is saved")
		}
		return &Reply{Content: text, Model: mreq.Model, FinishReason: StoppedReason}, nil
	}
	if err == nil && reply.Content == "" {
		err = errEmptyReply
	}
	if err != nil {
		return nil, errs.Wrap(errs.EUPSTREAM, err, "the model did not answer; your message is saved, retry with the same clientMessageId")
	}
	return reply, nil
}

// Stop asks the streaming reply replyID of the caller's session to stop,
// whichever instance runs it. The reply is stored with what it said so far
// and finishReason "stopped". ENOTFOUND if no such reply is in progress.
func (svc *Service) Stop(ctx context.Context, userID, sessionID, replyID string) error {
	if err := sessions.CheckID(sessionID); err != nil {
		return err
	}
	if err := sessions.CheckID(replyID); err != nil {
		return err
	}
	if svc.Drafts == nil {
		return errs.Errorf(errs.ENOTFOUND, "no reply in progress can be stopped here")
	}
	return svc.Drafts.RequestStop(ctx, userID, sessionID, replyID)
}
