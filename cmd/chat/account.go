package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
)

// memoryView is GET /memory's answer, as far as the terminal shows it.
type memoryView struct {
	Enabled bool `json:"enabled"`
	Profile map[string]struct {
		Text string `json:"text"`
	} `json:"profile"`
	Facts []struct {
		ID, Content, Category string
	} `json:"facts"`
}

// memory shows the user's long-term memory, or (with "on", "off" or
// "forget") changes it first.
func (t *terminal) memory(arg string) error {
	var m memoryView
	var err error
	switch arg {
	case "":
		err = t.api.getJSON(t.ctx, "/memory", &m)
	case "on", "off":
		err = t.api.callJSON(t.ctx, http.MethodPatch, "/memory", map[string]bool{"enabled": arg == "on"}, &m)
	case "forget":
		if err = t.api.callJSON(t.ctx, http.MethodDelete, "/memory", nil, nil); err == nil {
			err = t.api.getJSON(t.ctx, "/memory", &m)
		}
	default:
		fmt.Fprintln(t.out, "usage: /memory [on|off|forget]")
		return nil
	}
	if err != nil {
		return err
	}
	t.showMemory(m)
	return nil
}

func (t *terminal) showMemory(m memoryView) {
	state := "on: the model learns from your conversations"
	if !m.Enabled {
		state = "off: nothing new is learned"
	}
	fmt.Fprintf(t.out, "  memory is %s\n", state)
	for _, field := range []string{"work", "personal", "focus"} {
		if text := m.Profile[field].Text; text != "" {
			fmt.Fprintf(t.out, "  %s: %s\n", field, oneLine(text, 200))
		}
	}
	for _, f := range m.Facts {
		fmt.Fprintf(t.out, "  - %s (%s)\n", oneLine(f.Content, 200), f.Category)
	}
	if len(m.Facts) == 0 {
		fmt.Fprintln(t.out, "  (no facts remembered)")
	}
}

// export writes the account's export to the file named path.
func (t *terminal) export(path string) error {
	resp, err := t.api.call(t.ctx, http.MethodGet, "/account/export", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("export cut off: %w", err)
	}
	fmt.Fprintf(t.out, "(wrote %d bytes to %s)\n", n, path)
	return nil
}
