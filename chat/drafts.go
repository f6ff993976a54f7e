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
	var follower *draftFollower
	if c.draft {
		follower = svc.followDraft(ctx, cancel, &Draft{SessionID: q.SessionID, ReplyID: c.replyID, UserID: q.UserID, Version: st.DraftVersion}, req.OnDelta)
		onDelta = follower.add
	}
	reply, err := svc.Model.Generate(mctx, mreq, onDelta)
	if follower != nil {
		stoppedWith, stopped, version := follower.end()
		c.draftVersion = version
		if stopped {
			if stoppedWith == "" {
				return nil, errs.Errorf(errs.ECONFLICT, "the reply was stopped before any of it arrived; your message is saved")
			}
			return &Reply{Content: stoppedWith, Model: mreq.Model, FinishReason: StoppedReason}, nil
		}
	}
	if err == nil && reply.Content == "" && len(reply.ToolCalls) == 0 {
		err = errEmptyReply
	}
	if err != nil {
		return nil, errs.Wrap(errs.EUPSTREAM, err, "the model did not answer; your message is saved, retry with the same clientMessageId")
	}
	return reply, nil
}

// draftFollower writes a streaming reply's draft while it streams.
type draftFollower struct {
	onDelta func(string)
	mu      sync.Mutex
	partial strings.Builder
	stopped atomic.Bool
	done    chan struct{}
	running sync.WaitGroup
	draft   *Draft
}

// followDraft starts writing d every DraftInterval with the text streamed
// so far (passed on to onDelta as it arrives), until the reply ends, a
// later streaming turn of the session takes the draft, or a stop is
// requested through it (which cancels the model's call).
func (svc *Service) followDraft(ctx context.Context, cancel func(), d *Draft, onDelta func(string)) *draftFollower {
	f := &draftFollower{onDelta: onDelta, done: make(chan struct{}), draft: d}
	interval := svc.DraftInterval
	if interval <= 0 {
		interval = DefaultDraftInterval
	}
	f.running.Add(1)
	go func() {
		defer f.running.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-f.done:
				return
			case <-tick.C:
			}
			stop, err := svc.Drafts.SaveDraft(ctx, f.snapshot())
			switch {
			case errors.Is(err, ErrDraftTaken):
				return // a later streaming turn of the session has the draft
			case err != nil:
				svc.logError(ctx, "saving a draft failed", d.SessionID, err)
			case stop:
				f.stopped.Store(true)
				cancel()
				return
			}
		}
	}()
	return f
}

// add takes a piece of the reply's text.
func (f *draftFollower) add(text string) {
	f.mu.Lock()
	f.partial.WriteString(text)
	f.mu.Unlock()
	f.onDelta(text)
}

// snapshot is the draft with the text so far (written by one goroutine
// only: the follower's).
func (f *draftFollower) snapshot() *Draft {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.draft.Text = f.partial.String()
	return f.draft
}

// end stops following and returns the text so far, whether a stop was
// requested, and the store's record of the draft's last write.
func (f *draftFollower) end() (text string, stopped bool, version any) {
	close(f.done)
	f.running.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.partial.String(), f.stopped.Load(), f.draft.Version
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
