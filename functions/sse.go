package functions

import (
	"encoding/json"
	"net/http"
)

// sseWriter writes a response of server-sent events, the one writer of
// /chat's stream, the AI SDK's stream and the streaming callables: its
// first write starts the response (200, text/event-stream, neither cached
// nor buffered by proxies, with the headers given besides), each write is
// flushed at once, and once a write fails (the client went away) it
// writes nothing more.
type sseWriter struct {
	w       http.ResponseWriter
	header  []string // name, value, … set when the response starts
	started bool
	gone    bool
}

func newSSE(w http.ResponseWriter, header ...string) *sseWriter {
	return &sseWriter{w: w, header: header}
}

// event writes v as one event's JSON data, named name (unnamed: "").
func (s *sseWriter) event(name string, v any) {
	data, _ := json.Marshal(v)
	if name == "" {
		s.write("data: " + string(data) + "\n\n")
		return
	}
	s.write("event: " + name + "\ndata: " + string(data) + "\n\n")
}

// write writes text as it is (a whole event, or "data: [DONE]").
func (s *sseWriter) write(text string) {
	if s.gone {
		return
	}
	if !s.started {
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		for i := 0; i+1 < len(s.header); i += 2 {
			h.Set(s.header[i], s.header[i+1])
		}
		s.w.WriteHeader(http.StatusOK)
		s.started = true
	}
	if _, err := s.w.Write([]byte(text)); err != nil {
		s.gone = true
		return
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}
