package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
)

// terminal is a signed-in chat on a terminal: messages in, replies out.
type terminal struct {
	api       *client
	in        input
	out, errs io.Writer
	session   string           // "" until the first message
	tools     []map[string]any // offered to the model with each message
	noted     map[string]bool  // sessions told that the offline stand-in answers
	ctx       context.Context
}

// run reads commands and messages until the input ends, /quit, or Ctrl-C
// twice in a row at the prompt.
func (t *terminal) run() {
	if t.ctx == nil {
		t.ctx = context.Background()
	}
	interrupted := false
	for {
		fmt.Fprint(t.out, "\nyou> ")
		text, ok, intr := t.in.message()
		switch {
		case !ok:
			return
		case intr && interrupted:
			fmt.Fprintln(t.out)
			return
		case intr:
			fmt.Fprint(t.out, "\n(Ctrl-C again, or /quit, to leave)")
			interrupted = true
			continue
		case strings.TrimSpace(text) == "/quit":
			return
		}
		stopped, err := t.do(text)
		if err != nil {
			fmt.Fprintln(t.errs, "\nchat:", err)
		}
		interrupted = stopped
	}
}

// do runs one message, or the command it is; stopped is true when Ctrl-C
// stopped a reply.
func (t *terminal) do(text string) (stopped bool, err error) {
	line := strings.TrimSpace(text)
	if line == "" {
		return false, nil
	}
	if !strings.HasPrefix(line, "/") || strings.Contains(line, "\n") {
		return t.send(map[string]any{"message": text})
	}
	name, arg, _ := strings.Cut(line, " ")
	c, ok := commandNamed(name)
	if !ok {
		fmt.Fprintln(t.out, "(unknown command; /help lists them)")
		return false, nil
	}
	arg = strings.TrimSpace(arg)
	if arg == "" && c.needsArg {
		fmt.Fprintf(t.out, "usage: %s %s  (%s)\n", c.name, c.arg, c.about)
		return false, nil
	}
	return c.run(t, arg)
}

// toggleTool offers the model a tool, or stops offering it.
func (t *terminal) toggleTool(name string) {
	i := slices.IndexFunc(t.tools, func(x map[string]any) bool { return x["name"] == name })
	if i >= 0 {
		t.tools = slices.Delete(t.tools, i, i+1)
		fmt.Fprintf(t.out, "(tool %s is no longer offered)\n", name)
		return
	}
	t.tools = append(t.tools, map[string]any{"name": name, "description": "A tool the user runs by hand: " + name,
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}})
	fmt.Fprintf(t.out, "(tool %s is offered with each message; when the model calls it, type its result)\n", name)
}

// send runs a turn of the session with body, and then a turn with the
// results of each call its reply asks for, typed by the user, until a
// reply asks for none or Ctrl-C stops one.
func (t *terminal) send(body map[string]any) (bool, error) {
	before := t.session
	defer func() {
		if t.session != before {
			fmt.Fprintf(t.out, "\n(session %s)", t.session)
		}
	}()
	for {
		body["sessionId"] = t.session
		if len(t.tools) > 0 {
			body["tools"] = t.tools
		}
		r, err := t.turn(body)
		if err != nil || r.stopped || len(r.calls) == 0 {
			return r.stopped, err
		}
		results, err := t.askResults(r.calls)
		if err != nil {
			return false, err
		}
		body = map[string]any{"toolResults": results}
	}
}

// askResults asks the user for the result of each call.
func (t *terminal) askResults(calls []toolCall) ([]map[string]string, error) {
	var out []map[string]string
	for _, c := range calls {
		fmt.Fprintf(t.out, "\nresult of %s> ", c.Function.Name)
		line, ok := t.in.line()
		if !ok {
			return nil, fmt.Errorf("no result typed: the calls await their results (send a message to abandon them)")
		}
		out = append(out, map[string]string{"toolCallId": c.ID, "content": strings.TrimSpace(line)})
	}
	return out, nil
}
