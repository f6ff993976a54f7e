package prompts

import "strings"

// MonthNote asks for one line on what the user did in a month, from the
// sessions of that month (their titles and summaries, never their
// messages). Added in version 2.
const MonthNote = "You keep a short history of what a user did with an assistant, month by month. " +
	"From the sessions of one month listed below (each a title and, if there is one, a summary), write one line of at most 200 characters " +
	"saying what the user worked on or asked about that month, most important first. " +
	"Write in the third person (\"Worked on…\"), leave out anything trivial, and answer with the line only."

// Background asks for the background of a user's history from the notes
// of older months. Added in version 2.
const Background = "You keep the background of a user's long history with an assistant. " +
	"From the monthly notes below, newest first, write at most 600 characters of background: lasting interests and projects " +
	"with when they began (\"has been building RAG systems since early 2025\"), not single events. " +
	"Write in the third person and answer with the text only."

// Episode is one session as a month note request lists it.
type Episode struct {
	Date    string // 2026-09-14
	Title   string
	Summary string // "" if the session has none
}

// MonthNoteRequest is the user text of a month note request.
func MonthNoteRequest(month string, eps []Episode) string {
	var b strings.Builder
	b.WriteString("Month: " + month + "\nSessions:\n")
	for _, e := range eps {
		b.WriteString("- " + e.Date + " " + oneLine(e.Title))
		if s := oneLine(e.Summary); s != "" {
			b.WriteString(": " + s)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// BackgroundRequest is the user text of a background request: the month
// notes, newest first.
func BackgroundRequest(notes [][2]string) string {
	var b strings.Builder
	b.WriteString("Monthly notes:\n")
	for _, n := range notes {
		b.WriteString("- " + n[0] + ": " + oneLine(n[1]) + "\n")
	}
	return b.String()
}

// HistoryLabels name the tiers of the history in the memory block.
var HistoryLabels = [3]string{"In the last 30 days", "1 to 6 months ago", "Earlier"}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
