package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// command is one of the terminal's slash commands.
type command struct {
	name, arg, about string
	needsArg         bool
	run              func(t *terminal, arg string) (stopped bool, err error)
}

// commands lists the commands in /help's order.
var commands []command

func init() {
	quiet := func(f func(t *terminal, arg string) error) func(*terminal, string) (bool, error) {
		return func(t *terminal, arg string) (bool, error) { return false, f(t, arg) }
	}
	commands = []command{
		{"/new", "", "the next message starts a new session", false, quiet(func(t *terminal, _ string) error {
			t.session = ""
			fmt.Fprintln(t.out, "(the next message starts a new session)")
			return nil
		})},
		{"/sessions", "", "your active sessions", false, quiet((*terminal).listSessions)},
		{"/resume", "ID", "continue session ID", true, quiet((*terminal).resume)},
		{"/regenerate", "", "answer your last message again", false, (*terminal).regenerate},
		{"/edit", "TEXT", "send your last message anew as TEXT", true, (*terminal).edit},
		{"/search", "WORDS", "search your conversations by words and meaning", true, quiet((*terminal).search)},
		{"/archive", "[ID]", "archive this session (or session ID)", false, quiet((*terminal).archive)},
		{"/delete", "[ID]", "delete this session (or session ID); restorable until retention purges it", false, quiet((*terminal).remove)},
		{"/memory", "[on|off|forget]", "what the model remembers about you across sessions; turn it on or off, or forget it all", false, quiet((*terminal).memory)},
		{"/export", "FILE", "write everything your account holds to FILE (JSON)", true, quiet((*terminal).export)},
		{"/tool", "NAME", "offer the model a tool NAME (again: stop offering it); when a reply calls it, you type its result", true,
			quiet(func(t *terminal, arg string) error { t.toggleTool(arg); return nil })},
		{"/usage", "", "your usage and the session's", false, quiet((*terminal).showUsage)},
		{"/help", "", "this list", false, quiet(func(t *terminal, _ string) error { fmt.Fprint(t.out, helpText()); return nil })},
		{"/quit", "", "leave (or Ctrl-C twice)", false, nil},
	}
}

// commandNamed is the command called name.
func commandNamed(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name && c.run != nil {
			return c, true
		}
	}
	return command{}, false
}

// helpText lists the commands and how to type several lines.
func helpText() string {
	var b strings.Builder
	b.WriteString("Commands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-26s %s\n", strings.TrimSpace(c.name+" "+c.arg), c.about)
	}
	b.WriteString(`A message of several lines: paste it, or type """ on a line, the lines, and """ again.
Ctrl-C while a reply streams stops it; at the prompt, twice, leaves.
`)
	return b.String()
}

// search prints the best matches for words across the user's sessions.
func (t *terminal) search(words string) error {
	var page struct {
		Results []struct {
			SessionID, SessionTitle, Role, Snippet string
		} `json:"results"`
	}
	if err := t.api.getJSON(t.ctx, "/search?q="+url.QueryEscape(words), &page); err != nil {
		return err
	}
	if len(page.Results) == 0 {
		fmt.Fprintln(t.out, "(nothing found)")
	}
	for _, r := range page.Results {
		fmt.Fprintf(t.out, "  %s  %s\n    %s: %s\n", r.SessionID, r.SessionTitle, r.Role, oneLine(r.Snippet, 160))
	}
	return nil
}

// archive archives session id (this one if "").
func (t *terminal) archive(id string) error {
	id, err := t.sessionOr(id)
	if err != nil {
		return err
	}
	if err := t.api.callJSON(t.ctx, http.MethodPost, "/sessions/"+url.PathEscape(id)+"/archive", nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(t.out, "(session %s archived: read-only until restored)\n", id)
	return t.leave(id)
}

// remove deletes session id (this one if ""), restorably.
func (t *terminal) remove(id string) error {
	id, err := t.sessionOr(id)
	if err != nil {
		return err
	}
	if err := t.api.callJSON(t.ctx, http.MethodDelete, "/sessions/"+url.PathEscape(id), nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(t.out, "(session %s deleted: restorable until retention purges it)\n", id)
	return t.leave(id)
}

// sessionOr is id, or this session's when id is "".
func (t *terminal) sessionOr(id string) (string, error) {
	if id != "" {
		return id, nil
	}
	if t.session == "" {
		return "", fmt.Errorf("no session yet: send a message first, or name one (/sessions lists them)")
	}
	return t.session, nil
}

// leave starts a new session next when id is this one.
func (t *terminal) leave(id string) error {
	if id == t.session {
		t.session = ""
		fmt.Fprintln(t.out, "(the next message starts a new session)")
	}
	return nil
}

// oneLine is s on one line, cut to n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
