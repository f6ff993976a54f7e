package sessions

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/chatmemory/backend/kernel/errs"
)

// What a session may choose of what the operator offers: its model and
// its own instructions.

// checkModel returns the model a session asks for (the default for ""),
// or why it may not have it, naming the ones it may.
func (svc *Service) checkModel(model string) (string, error) {
	switch {
	case model == "":
		return svc.DefaultModel, nil
	case model == svc.DefaultModel || slices.Contains(svc.Models, model):
		return model, nil
	}
	allowed := svc.Models
	if len(allowed) == 0 {
		allowed = []string{svc.DefaultModel}
	}
	return "", errs.Errorf(errs.EINVALID, "model: %q is not offered here; choose one of %s", model, strings.Join(allowed, ", "))
}

// DefaultMaxInstructionsChars is how long a session's instructions may be
// unless the operator says otherwise.
const DefaultMaxInstructionsChars = 4000

// checkInstructions returns a session's instructions as stored (trimmed),
// or why they are refused: longer than MaxInstructionsChars, or any at
// all when that is 0 (the operator turned them off).
func (svc *Service) checkInstructions(text string) (string, error) {
	text = strings.TrimSpace(text)
	switch n := utf8.RuneCountInString(text); {
	case n == 0:
		return "", nil
	case svc.MaxInstructionsChars == 0:
		return "", errs.Errorf(errs.EINVALID, "instructions: this server takes none (SESSION_INSTRUCTIONS_MAX_CHARS=0)")
	case n > svc.MaxInstructionsChars:
		return "", errs.Errorf(errs.EINVALID, "instructions: at most %d characters, not %d", svc.MaxInstructionsChars, n)
	}
	return text, nil
}
