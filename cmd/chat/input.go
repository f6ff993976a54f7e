package main

import (
	"bufio"
	"io"
	"strings"
	"time"
)

// Bracketed paste: a terminal asked to (pasteOn) wraps what is pasted in
// pasteStart and pasteEnd, which arrive inside the lines read.
const (
	pasteOn    = "\x1b[?2004h"
	pasteOff   = "\x1b[?2004l"
	pasteStart = "\x1b[200~"
	pasteEnd   = "\x1b[201~"
)

// fence opens and closes a message of several lines typed by hand.
const fence = `"""`

// pasteGap is how soon after a line the next must arrive to be taken as
// the same paste, on a terminal that does not bracket pastes.
const pasteGap = 25 * time.Millisecond

// linesOf reads r's lines into a channel, closed when r ends.
func linesOf(r io.Reader) <-chan string {
	lines := make(chan string)
	go func() {
		defer close(lines)
		in := bufio.NewScanner(r)
		in.Buffer(make([]byte, 64<<10), 1<<20)
		for in.Scan() {
			lines <- strings.TrimSuffix(in.Text(), "\r")
		}
	}()
	return lines
}

// input is what the user typed: one message at a time, however many lines
// it spans, and Ctrl-C.
type input struct {
	lines <-chan string
	intr  <-chan struct{}
	// gap, when not 0, joins lines arriving within it of each other (a
	// paste); 0 when the input is not a terminal, so each line of a
	// script is a message.
	gap time.Duration
}

// message is the next message: a line; the lines of a paste (bracketed,
// or arriving within gap); or the lines between two fence lines. ok is
// false when the input ended; interrupted when Ctrl-C came first.
func (in input) message() (text string, ok, interrupted bool) {
	select {
	case <-in.intr:
		return "", true, true
	case line, open := <-in.lines:
		if !open {
			return "", false, false
		}
		if strings.TrimSpace(line) == fence {
			return in.until(func(l string) bool { return strings.TrimSpace(l) == fence }, nil)
		}
		if before, after, found := strings.Cut(line, pasteStart); found {
			return in.pasted(before + after)
		}
		return in.gathered(line), true, false
	}
}

// pasted reads a bracketed paste's lines after its first, until its end.
func (in input) pasted(first string) (string, bool, bool) {
	if before, after, found := strings.Cut(first, pasteEnd); found {
		return before + after, true, false
	}
	rest, ok, intr := in.until(func(l string) bool { return strings.Contains(l, pasteEnd) }, func(l string) string {
		before, after, _ := strings.Cut(l, pasteEnd)
		return before + after
	})
	if intr || !ok {
		return "", ok, intr
	}
	if rest == "" {
		return first, true, false
	}
	return first + "\n" + rest, true, false
}

// until reads lines up to the one last says ends them; last's own text,
// turned by keep (nil: dropped), ends the message.
func (in input) until(last func(string) bool, keep func(string) string) (string, bool, bool) {
	var lines []string
	for {
		select {
		case <-in.intr:
			return "", true, true
		case l, open := <-in.lines:
			if !open {
				return strings.Join(lines, "\n"), len(lines) > 0, false
			}
			if !last(l) {
				lines = append(lines, l)
				continue
			}
			if keep != nil && keep(l) != "" {
				lines = append(lines, keep(l))
			}
			return strings.Join(lines, "\n"), true, false
		}
	}
}

// gathered is line with the lines arriving within gap of each other after
// it.
func (in input) gathered(line string) string {
	if in.gap == 0 {
		return line
	}
	lines := []string{line}
	for {
		select {
		case l, open := <-in.lines:
			if !open {
				return strings.Join(lines, "\n")
			}
			lines = append(lines, l)
		case <-time.After(in.gap):
			return strings.Join(lines, "\n")
		}
	}
}

// line is the next line as typed (a tool's result); ok is false when the
// input ended or Ctrl-C came.
func (in input) line() (string, bool) {
	select {
	case <-in.intr:
		return "", false
	case l, open := <-in.lines:
		return l, open
	}
}
