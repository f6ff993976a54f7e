package chat

import (
	"context"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
)

// Append stores messages the client composed itself (its own tool loop,
// or an imported conversation) as the next messages of the caller's
// session, under the same per-user limits as turns: the batch counts
// against the messages a minute, is refused once the day's tokens are
// spent, and its tokens count against the day (later turns send them to
// the model). A retry under the same key returns the stored batch and
// is not charged again.
func (svc *Service) Append(ctx context.Context, userID, sessionID, key string, drafts []history.Draft) ([]history.Message, error) {
	if err := history.Validate(key, drafts...); err != nil {
		return nil, err
	}
	if !svc.AllowSystemMessages {
		for i, d := range drafts {
			if d.Role == history.RoleSystem {
				return nil, errs.Errorf(errs.EINVALID, "messages[%d].role: system messages come from the server only (the operator can allow them with CLIENT_SYSTEM_MESSAGES=on)", i)
			}
		}
	}
	s, err := svc.Sessions.Get(ctx, userID, sessionID)
	if err != nil {
		return nil, err
	}
	now := svc.now()
	if err := svc.Usage.UpdateUsage(ctx, userID, Day(now), func(u *Usage) error {
		return u.AdmitMessages(now, svc.Limits, len(drafts))
	}); err != nil {
		return nil, err
	}
	var a *history.Appended
	err = svc.waitTurn(true, func() (err error) {
		a, err = svc.History.AppendAll(ctx, s, key, drafts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !a.Replayed {
		n := 0
		for _, m := range a.Messages {
			n += m.Tokens
		}
		svc.addTokens(ctx, userID, n)
	}
	return a.Messages, nil
}
