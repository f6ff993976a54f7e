package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// offlineModel is the model name of the server's offline stand-in.
const offlineModel = "offline-stand-in"

type toolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// turnResult is how a streamed turn ended: the calls its reply asks for,
// or stopped by Ctrl-C.
type turnResult struct {
	calls   []toolCall
	stopped bool
}

// event is one server-sent event of POST /chat's stream.
type event struct {
	name string
	data struct {
		SessionID string     `json:"sessionId"`
		ReplyID   string     `json:"replyId"`
		Text      string     `json:"text"`
		ToolCalls []toolCall `json:"toolCalls"`
		Reply     struct {
			Metadata struct {
				Model string `json:"model"`
			} `json:"metadata"`
		} `json:"reply"`
		Error struct{ Code, Message string }
	}
	err error // the stream failed (io.EOF: it ended)
}

// turn runs one streamed turn (body is /chat's request) and prints the
// reply as it comes; Ctrl-C stops the reply on the server and returns at
// once.
func (t *terminal) turn(body map[string]any) (turnResult, error) {
	body["stream"] = true
	ctx, cancel := context.WithCancel(t.ctx)
	defer cancel()
	events := make(chan event)
	go t.stream(ctx, body, events)
	var res turnResult
	replyID, started := "", false
	for {
		select {
		case <-t.in.intr:
			cancel()
			return turnResult{stopped: true}, t.stop(replyID)
		case ev := <-events:
			if ev.err == io.EOF {
				return res, nil
			}
			if ev.err != nil {
				return res, ev.err
			}
			if !started && (ev.name == "delta" || ev.name == "tool_calls") {
				fmt.Fprint(t.out, "assistant> ")
				started = true
			}
			switch ev.name {
			case "session":
				t.noteSession(ev.data.SessionID)
				replyID = ev.data.ReplyID
			case "delta":
				fmt.Fprint(t.out, ev.data.Text)
			case "tool_calls":
				res.calls = ev.data.ToolCalls
				t.showCalls(ev.data.ToolCalls)
			case "done":
				t.noteSession(ev.data.SessionID)
				t.noteModel(ev.data.Reply.Metadata.Model)
			case "error":
				return res, &apiError{status: http.StatusBadGateway, code: ev.data.Error.Code, message: ev.data.Error.Message}
			}
		}
	}
}

// stream posts body to /chat and sends its events, then io.EOF or the
// error that ended it, until ctx ends.
func (t *terminal) stream(ctx context.Context, body map[string]any, events chan<- event) {
	emit := func(ev event) bool {
		select {
		case events <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	resp, err := t.api.call(ctx, http.MethodPost, "/chat", body)
	if err != nil {
		emit(event{err: err})
		return
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	ev := event{}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			emit(event{err: err})
			return
		}
		line = strings.TrimRight(line, "\r\n")
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			ev = event{name: name}
		} else if data, ok := strings.CutPrefix(line, "data: "); ok {
			json.Unmarshal([]byte(data), &ev.data)
			if !emit(ev) {
				return
			}
		}
	}
}

// stop asks the server to stop reply replyID of the session (the turn
// stores what was said, marked stopped); before the reply has an id,
// closing the stream stops it.
func (t *terminal) stop(replyID string) error {
	fmt.Fprint(t.out, " [stopped]")
	if replyID == "" || t.session == "" {
		return nil
	}
	return t.api.callJSON(t.ctx, http.MethodPost, "/sessions/"+t.session+"/replies/"+replyID+"/stop", nil, nil)
}

// showCalls prints the calls a reply asks for, by name and arguments.
func (t *terminal) showCalls(calls []toolCall) {
	for i, c := range calls {
		if i > 0 {
			fmt.Fprint(t.out, "\n           ")
		}
		fmt.Fprintf(t.out, "(calls %s %s)", c.Function.Name, c.Function.Arguments)
	}
}

// noteSession follows the session a turn ran in (a new one, the first time).
func (t *terminal) noteSession(id string) {
	if id != "" {
		t.session = id
	}
}

// noteModel says, once per session, that the offline stand-in answered.
func (t *terminal) noteModel(model string) {
	if model != offlineModel || t.noted[t.session] {
		return
	}
	if t.noted == nil {
		t.noted = map[string]bool{}
	}
	t.noted[t.session] = true
	fmt.Fprint(t.out, "\n(replies come from the server's offline stand-in model: set OPENAI_API_KEY or OPENAI_BASE_URL on the server for a real one)")
}
