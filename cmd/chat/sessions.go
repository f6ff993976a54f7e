package main

import (
	"fmt"
)

// listSessions prints the user's active sessions, most recent first.
func (t *terminal) listSessions(string) error {
	var page struct {
		Sessions []struct {
			ID           string `json:"id"`
			Title        string `json:"title"`
			MessageCount int    `json:"messageCount"`
		} `json:"sessions"`
	}
	if err := t.api.getJSON(t.ctx, "/sessions?status=active&limit=20", &page); err != nil {
		return err
	}
	if len(page.Sessions) == 0 {
		fmt.Fprintln(t.out, "(no sessions yet)")
	}
	for _, s := range page.Sessions {
		fmt.Fprintf(t.out, "  %s  %-40s %d messages\n", s.ID, s.Title, s.MessageCount)
	}
	return nil
}

// showUsage prints the user's standing against the limits, and the
// session's totals if there is one.
func (t *terminal) showUsage(string) error {
	type gauge struct {
		Used     int    `json:"used"`
		Limit    int    `json:"limit"`
		ResetsAt string `json:"resetsAt"`
	}
	var u struct {
		Day                     string `json:"day"`
		Tokens, Turns, Messages gauge
	}
	if err := t.api.getJSON(t.ctx, "/usage", &u); err != nil {
		return err
	}
	of := func(g gauge) string {
		if g.Limit == 0 {
			return fmt.Sprintf("%d (no limit)", g.Used)
		}
		return fmt.Sprintf("%d of %d (resets %s)", g.Used, g.Limit, g.ResetsAt)
	}
	fmt.Fprintf(t.out, "  today (%s): tokens %s\n  this minute: turns %s, appended messages %s\n", u.Day, of(u.Tokens), of(u.Turns), of(u.Messages))
	if t.session == "" {
		return nil
	}
	var s struct {
		Title string `json:"title"`
		Usage struct {
			PromptTokens, CompletionTokens, Turns int
			LastModel                             string
		} `json:"usage"`
	}
	if err := t.api.getJSON(t.ctx, "/sessions/"+t.session, &s); err != nil {
		return err
	}
	fmt.Fprintf(t.out, "  this session (%s): replies %d, %d prompt + %d completion tokens, last model %s\n",
		s.Title, s.Usage.Turns, s.Usage.PromptTokens, s.Usage.CompletionTokens, s.Usage.LastModel)
	return nil
}

// resume prints the last messages of session id and continues it.
func (t *terminal) resume(id string) error {
	var page struct {
		Messages []struct {
			Role      string     `json:"role"`
			Content   string     `json:"content"`
			ToolCalls []toolCall `json:"toolCalls"`
		} `json:"messages"`
	}
	if err := t.api.getJSON(t.ctx, "/sessions/"+id+"/messages?order=desc&limit=6", &page); err != nil {
		return err
	}
	t.session = id
	fmt.Fprintf(t.out, "(session %s)\n", id)
	for i := len(page.Messages) - 1; i >= 0; i-- {
		m := page.Messages[i]
		who := "you"
		if m.Role != "user" {
			who = m.Role
		}
		if m.Content == "" && len(m.ToolCalls) > 0 {
			t.showCalls(m.ToolCalls)
			fmt.Fprintln(t.out)
			continue
		}
		fmt.Fprintf(t.out, "%s> %s\n", who, m.Content)
	}
	return nil
}

// regenerate answers the user's last message again, streaming the new reply.
func (t *terminal) regenerate(string) (bool, error) {
	id, err := t.lastOf("user")
	if err != nil {
		return false, err
	}
	return t.send(map[string]any{"regenerate": id})
}

// edit sends the user's last message anew as text.
func (t *terminal) edit(text string) (bool, error) {
	id, err := t.lastOf("user")
	if err != nil {
		return false, err
	}
	return t.send(map[string]any{"edit": id, "message": text})
}

// lastOf returns the id of the latest message with role on the session's
// active branch.
func (t *terminal) lastOf(role string) (string, error) {
	if t.session == "" {
		return "", fmt.Errorf("no session yet: send a message first")
	}
	var page struct {
		Messages []struct {
			ID   string `json:"id"`
			Role string `json:"role"`
		} `json:"messages"`
	}
	if err := t.api.getJSON(t.ctx, "/sessions/"+t.session+"/messages?order=desc&limit=20", &page); err != nil {
		return "", err
	}
	for _, m := range page.Messages {
		if m.Role == role {
			return m.ID, nil
		}
	}
	return "", fmt.Errorf("no %s message in the latest ones", role)
}
