// Command sweep runs the retention sweep by hand, with the same code and
// configuration as the scheduled function. With -dry-run it changes nothing
// and prints what it would change.
//
//	sweep [-dry-run] [-budget 8m]
//	sweep -record-accounts
//
// -record-accounts records, once, every user who holds sessions, memory or
// usage stored before every first write recorded its user, so that the sweep's backstop asks Auth
// about them too (see README, "An account deleted in Firebase Auth").
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/cmd/internal/command"
)

// started is when main's package was set up; the report's total runs
// from the process's start (processStart), which is earlier.
var started = time.Now()

func main() {
	began := processStart(started)
	dry := flag.Bool("dry-run", false, "print what would change, change nothing")
	budget := flag.Duration("budget", 0, "stop cleanly after about this long (default SWEEP_BUDGET_SECONDS)")
	verbose := flag.Bool("v", false, "log as the deployed function does")
	record := flag.Bool("record-accounts", false, "record every user who holds sessions, memory or usage and has no account record, then stop")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	backend, code := command.Open(ctx, "sweep", os.Getenv, *verbose, os.Stderr)
	if backend == nil {
		os.Exit(code)
	}
	defer backend.Close()
	if *record {
		if backend.Backstop == nil {
			fmt.Fprintln(os.Stderr, "sweep: no Auth directory to ask: nothing to record accounts for")
			os.Exit(1)
		}
		n, err := backend.Backstop.RecordAll(ctx)
		fmt.Printf("looked at %d users with sessions; each now has an account record\n", n)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sweep:", err)
			os.Exit(1)
		}
		return
	}
	if *budget > 0 {
		backend.Sweeper.Budget = *budget
	}
	opened := time.Since(began)
	report, err := backend.Sweep(ctx, *dry)
	report.Before(app.PhaseOpen, opened, 0, nil)
	if *dry {
		for _, a := range report.Planned {
			fmt.Printf("would %-7s %s (%s since %s, due %s)\n", verb(a.To), a.SessionID, sinceWord(a.From), a.Since.Format(time.RFC3339), a.ExpiresAt.Format(time.RFC3339))
		}
		for _, a := range report.PlannedTrims {
			fmt.Printf("would trim   %s: %d messages older than %s (history from seq %d)\n", a.SessionID, a.Messages, a.Before.Format(time.RFC3339), a.HistoryFrom)
		}
	}
	report.Planned, report.PlannedTrims = nil, nil
	out, _ := json.MarshalIndent(report, "", "  ")
	fmt.Println(string(out))
	if err != nil {
		fmt.Fprintln(os.Stderr, "sweep:", err)
		os.Exit(1)
	}
}

// sinceWord says what the date of a status is: an active session is due
// from its last activity.
func sinceWord(from any) string {
	if fmt.Sprint(from) == "active" {
		return "idle"
	}
	return fmt.Sprint(from)
}

func verb(to any) string {
	if fmt.Sprint(to) == "purged" {
		return "purge"
	}
	return "delete"
}
