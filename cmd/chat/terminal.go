package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// terminal is a signed-in chat on a terminal: lines in, replies out.
type terminal struct {
	api, token string
	in         *bufio.Scanner
	out, errs  io.Writer
	session    string           // "" until the first message
	tools      []map[string]any // offered to the model with each message
}

const help = `Commands:
  /new             the next message starts a new session
  /sessions        your active sessions
  /resume ID       continue session ID
  /regenerate      answer your last message again
  /edit TEXT       send your last message anew as TEXT
  /tool NAME       offer the model a tool NAME (again: stop offering it); when a
                   reply calls it, you type its result
  /usage           your usage and the session's
  /help            this list
  /quit            leave`

// run reads commands and messages until the input ends or /quit.
func (t *terminal) run() {
	for {
		fmt.Fprint(t.out, "\nyou> ")
		if !t.in.Scan() {
			return
		}
		line := strings.TrimSpace(t.in.Text())
		if line == "/quit" {
			return
		}
		if err := t.do(line); err != nil {
			fmt.Fprintln(t.errs, "\nchat:", err)
		}
	}
}

// do runs one line: a command, or a message.
func (t *terminal) do(line string) error {
	cmd, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch {
	case line == "":
		return nil
	case cmd == "/help":
		fmt.Fprintln(t.out, help)
	case cmd == "/new":
		t.session = ""
		fmt.Fprintln(t.out, "(the next message starts a new session)")
	case cmd == "/sessions":
		return t.listSessions()
	case cmd == "/usage":
		return t.showUsage()
	case cmd == "/regenerate":
		return t.regenerate()
	case cmd == "/edit" && arg != "":
		return t.edit(arg)
	case cmd == "/resume" && arg != "":
		return t.resume(arg)
	case cmd == "/tool" && arg != "":
		t.toggleTool(arg)
	case strings.HasPrefix(line, "/"):
		fmt.Fprintln(t.out, "(unknown command; /help lists them)")
	default:
		return t.send(map[string]any{"message": line})
	}
	return nil
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
// reply asks for none.
func (t *terminal) send(body map[string]any) error {
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
		calls, err := t.turn(body)
		if err != nil || len(calls) == 0 {
			return err
		}
		results, err := t.askResults(calls)
		if err != nil {
			return err
		}
		body = map[string]any{"toolResults": results}
	}
}

type toolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// askResults asks the user for the result of each call.
func (t *terminal) askResults(calls []toolCall) ([]map[string]string, error) {
	var out []map[string]string
	for _, c := range calls {
		fmt.Fprintf(t.out, "\n(the model calls %s(%s))\nresult> ", c.Function.Name, c.Function.Arguments)
		if !t.in.Scan() {
			return nil, errors.New("no result typed: the calls await their results (send a message to abandon them)")
		}
		out = append(out, map[string]string{"toolCallId": c.ID, "content": strings.TrimSpace(t.in.Text())})
	}
	return out, nil
}

// turn runs one streamed turn (body is /chat's request) and prints the
// reply; it returns the calls the reply asks for.
func (t *terminal) turn(body map[string]any) ([]toolCall, error) {
	body["stream"] = true
	resp, err := post(t.api+"/chat", t.token, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errorOf(resp)
	}
	fmt.Fprint(t.out, "assistant> ")
	r := bufio.NewReader(resp.Body)
	event := ""
	var calls []toolCall
	for {
		line, err := r.ReadString('\n')
		if errors.Is(err, io.EOF) {
			return calls, nil
		}
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var v struct {
				SessionID string     `json:"sessionId"`
				Text      string     `json:"text"`
				ToolCalls []toolCall `json:"toolCalls"`
				Error     struct{ Code, Message string }
			}
			json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &v)
			switch event {
			case "session", "done":
				t.noteSession(v.SessionID)
			case "delta":
				fmt.Fprint(t.out, v.Text)
			case "tool_calls":
				calls = v.ToolCalls
			case "error":
				return nil, &apiError{status: http.StatusBadGateway, code: v.Error.Code, message: v.Error.Message}
			}
		}
	}
}

// noteSession follows the session a turn ran in (a new one, the first time).
func (t *terminal) noteSession(id string) {
	if id != "" {
		t.session = id
	}
}
