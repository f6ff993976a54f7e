package retention

import (
	"slices"
	"time"

	"github.com/chatmemory/backend/kernel/rpcs"
)

// A run's time is split into phases. Those that run one after the other
// do so without gaps: each phase's time runs from the end of the one
// before (or the run's start) to its own end. Kinds of work that take
// turns (purges, soft-deletes, trims) add each of their pages to their
// phase. A phase that runs at once with others (the backstop and the
// roll-up, beside the retention work: see Beside) has its own wall time.
// Each phase says when it began (StartMs, from the run's start); the
// run's total (DurationMs) is its wall time, from its start to the end of
// its last phase, and the phases add up to it plus OverlapMs, the time
// counted twice because phases ran at once.

// Phase names, in the order a run meets them.
const (
	PhaseOpen         = "open"         // the command's configuration and clients (cmd/sweep only)
	PhaseDueJobs      = "dueJobs"      // after-turn jobs their turns left undone (not in a dry run)
	PhaseResumePurges = "resumePurges" // purges an earlier run left cut off
	PhasePurge        = "purge"        // sessions past their recovery window, the queries finding them included
	PhaseSoftDelete   = "softDelete"   // idle and long-archived sessions, the queries finding them included
	PhaseTrim         = "trim"         // messages past their retention period
	PhaseBacklog      = "backlog"      // counting what is still due, and the run's log line
	PhaseBackstop     = "backstop"     // accounts deleted in Auth whose event never came
	PhaseRollUp       = "rollUp"       // the episodic histories of users active since the last run
	PhaseAttachments  = "attachments"  // uploads no message named within a day
)

// Phase is one part of a run: where the time went, the round trips to
// the store it made, and what it did.
type Phase struct {
	Name string `json:"name"`
	// StartMs is when the phase began, from the run's start; Ms is its
	// time (a phase whose pages took turns with others: the sum of its
	// pages').
	StartMs int64          `json:"startMs"`
	Ms      int64          `json:"ms"`
	RPCs    int64          `json:"rpcs"`
	Counts  map[string]int `json:"counts,omitempty"`
	took    time.Duration
	// began and ended are when its first part began and its last ended
	// (zero: it has taken no time).
	began, ended time.Time
}

// Lap ends the phase called name now: the time since the previous lap (or
// the clock's start) is added to it, as are counts. A phase lapped again
// (a kind's next page) keeps its place.
func (r *Report) Lap(name string, counts map[string]int) {
	if r.now == nil {
		r.StartClock(nil)
	}
	t, n := r.now(), r.rpcs.Load()
	r.span(name, r.lapped, t)
	r.AddPhase(name, t.Sub(r.lapped), counts)
	r.phase(name).RPCs += n - r.rpcLapped
	r.lapped, r.rpcLapped = t, n
	r.total()
}

// Resume has the next lap start now: the time since the last one went to
// waiting for phases beside the others (see Beside), which the run's
// total covers.
func (r *Report) Resume() {
	if r.now == nil {
		r.StartClock(nil)
		return
	}
	r.lapped, r.rpcLapped = r.now(), r.rpcs.Load()
}

// CountRPCs has each lap from now on count the round trips c counted
// during it (see rpcs: the run's context carries c).
func (r *Report) CountRPCs(c *rpcs.Counter) {
	r.rpcs, r.rpcLapped = c, c.Load()
}

// Before adds a phase that ended as the run's clock started (opening the
// command that runs it, the due after-turn jobs) in front of the others,
// with the round trips it made.
func (r *Report) Before(name string, d time.Duration, rpcs int64, counts map[string]int) {
	if r.now == nil {
		r.StartClock(nil)
	}
	r.First(name, r.origin.Add(-d), d, rpcs, counts)
}

// First adds a phase that began at began and took d, before the others
// or at once with them (the after-turn jobs, beside the retention work),
// in front of them, with the round trips it made; the run started no
// later than it.
func (r *Report) First(name string, began time.Time, d time.Duration, rpcs int64, counts map[string]int) {
	if r.now == nil {
		r.StartClock(nil)
	}
	r.Phases = slices.Insert(r.Phases, 0, Phase{Name: name, RPCs: rpcs})
	if began.Before(r.origin) {
		r.origin = began
	}
	r.span(name, began, began.Add(d))
	r.AddPhase(name, d, counts)
}

// Started is when the run started: when its clock started, or its first
// phase (see Before) began.
func (r *Report) Started() time.Time {
	if r.now == nil {
		r.StartClock(nil)
	}
	return r.origin
}

// Beside adds a phase that began at began and took d at once with the
// others (so it has its own time, and the run's total is its wall time,
// not the sum of its phases), with the round trips it made (counted
// apart from the others': see rpcs.With).
func (r *Report) Beside(name string, began time.Time, d time.Duration, rpcs int64, counts map[string]int) {
	r.span(name, began, began.Add(d))
	r.phase(name).RPCs += rpcs
	r.AddPhase(name, d, counts)
}

// span extends the phase called name to cover from..to.
func (r *Report) span(name string, from, to time.Time) {
	p := r.phase(name)
	if p.began.IsZero() || from.Before(p.began) {
		p.began = from
	}
	if to.After(p.ended) {
		p.ended = to
	}
}

// StartClock starts the run's clock at now (the system's clock if nil).
// Run starts it as it begins; a report lapped without it starts at its
// first lap.
func (r *Report) StartClock(now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	r.now = now
	r.lapped = now()
	r.origin = r.lapped
	r.rpcLapped = r.rpcs.Load()
}

// AddPhase adds d and counts to the phase called name (appended if new),
// and makes the totals again.
func (r *Report) AddPhase(name string, d time.Duration, counts map[string]int) {
	p := r.phase(name)
	p.took += d
	p.Ms = p.took.Milliseconds()
	if len(counts) > 0 && p.Counts == nil {
		p.Counts = map[string]int{}
	}
	for k, n := range counts {
		p.Counts[k] += n
	}
	r.total()
}

func (r *Report) phase(name string) *Phase {
	for i := range r.Phases {
		if r.Phases[i].Name == name {
			return &r.Phases[i]
		}
	}
	r.Phases = append(r.Phases, Phase{Name: name})
	return &r.Phases[len(r.Phases)-1]
}

// total makes the run's totals and rates those of its phases.
func (r *Report) total() {
	var took time.Duration
	var end time.Time
	r.RPCs = 0
	for i, p := range r.Phases {
		took += p.took
		r.RPCs += p.RPCs
		if p.ended.After(end) {
			end = p.ended
		}
		if !p.began.IsZero() {
			r.Phases[i].StartMs = p.began.Sub(r.origin).Milliseconds()
		}
	}
	wall := took // phases one after the other, without gaps
	if !end.IsZero() {
		wall = end.Sub(r.origin)
	}
	r.DurationMs, r.OverlapMs = wall.Milliseconds(), max(took-wall, 0).Milliseconds()
	r.PurgeMs = r.Took(PhasePurge).Milliseconds() + r.Took(PhaseResumePurges).Milliseconds() // as the phases say
	r.SoftDeleteMs = r.Took(PhaseSoftDelete).Milliseconds()
	r.TrimMs = r.Took(PhaseTrim).Milliseconds()
	r.DocumentsPerSec, r.SessionsPerSec = 0, 0
	if s := wall.Seconds(); s > 0 {
		r.DocumentsPerSec = float64(r.DocumentsDeleted) / s
		r.SessionsPerSec = float64(r.SoftDeleted+r.Purged+r.ResumedPurges) / s
	}
}

// Took is the time of the phase called name so far.
func (r *Report) Took(name string) time.Duration {
	for _, p := range r.Phases {
		if p.Name == name {
			return p.took
		}
	}
	return 0
}

// since is what r counted after before, under the names keys gives
// (zeros included: a phase that did nothing says so).
func (r *Report) since(before counters, keys ...string) map[string]int {
	now := r.counters()
	all := map[string]int{
		"sessionsSoftDeleted": now.softDeleted - before.softDeleted,
		"sessionsPurged":      now.purged - before.purged,
		"purgesResumed":       now.resumed - before.resumed,
		"documentsDeleted":    now.documents - before.documents,
		"skipped":             now.skipped - before.skipped,
		"purgesBusy":          now.busy - before.busy,
		"failed":              now.failed - before.failed,
		"sessionsTrimmed":     now.trimmed - before.trimmed,
		"messagesDeleted":     now.messages - before.messages,
		"planned":             now.planned - before.planned,
	}
	out := make(map[string]int, len(keys))
	for _, k := range keys {
		out[k] = all[k]
	}
	return out
}

// counters are the report's counts, to count a phase's share of them.
type counters struct {
	softDeleted, purged, resumed, documents, skipped, busy, failed, trimmed, messages, planned int
}

func (r *Report) counters() counters {
	return counters{r.SoftDeleted, r.Purged, r.ResumedPurges, r.DocumentsDeleted, r.Skipped, r.PurgesBusy, r.Failed,
		r.SessionsTrimmed, r.MessagesDeleted, len(r.Planned) + len(r.PlannedTrims)}
}

// counts are b's counts by name; none for no backlog counted (a dry run,
// or a count that failed).
func (b *Backlog) counts() map[string]int {
	if b == nil {
		return nil
	}
	return map[string]int{"toSoftDelete": b.ToSoftDelete, "toPurge": b.ToPurge, "purgesPending": b.PurgesPending, "toTrim": b.ToTrim}
}
