// Package llmtest is an OpenAI-compatible chat completions server for tests
// and benchmarks: the real go-openai client talks to it over HTTP, streaming
// included. Each reply is scripted by a function of the request.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Response scripts one answer.
type Response struct {
	Content string
	// ToolCalls are calls the reply asks for (its finish reason is then
	// tool_calls); streamed, each arrives in two pieces, as OpenAI sends
	// them.
	ToolCalls []openai.ToolCall
	Status    int // non-zero and not 200: answer with this error status
	// ErrorMessage is the error's message (with Status); empty: "scripted failure".
	ErrorMessage string
	Delay        time.Duration // before answering at all
	ChunkDelay   time.Duration // between streamed chunks
	// PromptTokens and CompletionTokens are reported as usage; zero means
	// a rough count of words.
	PromptTokens, CompletionTokens int
	// Cut drops the connection half-way through the answer (a streamed
	// one after half its pieces); EndEarly ends a stream cleanly after
	// half its pieces, without a finish reason.
	Cut, EndEarly bool
}

// Server is a running fake model service.
type Server struct {
	srv   *httptest.Server
	mu    sync.Mutex
	reqs  []openai.ChatCompletionRequest
	reply func(openai.ChatCompletionRequest) Response
	// counter counts prompts for the prompt cache (nil: words); keys are
	// the requests' prompt_cache_key, recent their prompts by key.
	counter Counter
	keys    []string
	recent  map[string][]prompt
	uses    []CacheUse
	// embedGate, when set, is called with each /embeddings request's
	// inputs before it is answered (a test holds it there).
	embedGate func(inputs []string)
}

// SetEmbeddingGate calls gate with the inputs of each /embeddings request
// this server answers, before answering (nil: none).
func (s *Server) SetEmbeddingGate(gate func(inputs []string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embedGate = gate
}

// New starts a server that answers with Echo until told otherwise; it stops
// when tb ends.
func New(tb testing.TB) *Server {
	s := Start()
	tb.Cleanup(s.Close)
	return s
}

// Start starts a server that answers with Echo; Close stops it.
func Start() *Server {
	s := &Server{reply: Echo}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Echo answers "echo: " and the last user message (of a message in
// content parts, its text parts and "[image_url]" for each image).
func Echo(req openai.ChatCompletionRequest) Response {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == openai.ChatMessageRoleUser {
			return Response{Content: "echo: " + Text(req.Messages[i])}
		}
	}
	return Response{Content: "echo: (nothing)"}
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Forget drops the requests recorded so far (long runs need not keep them).
func (s *Server) Forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs, s.keys = nil, nil
}

// BaseURL is what OPENAI_BASE_URL should be set to.
func (s *Server) BaseURL() string { return s.srv.URL + "/v1" }

// SetReply scripts the answers from now on.
func (s *Server) SetReply(fn func(openai.ChatCompletionRequest) Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reply = fn
}

// Requests returns the requests received so far.
func (s *Server) Requests() []openai.ChatCompletionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]openai.ChatCompletionRequest(nil), s.reqs...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/embeddings" {
		s.serveEmbeddings(w, r)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	var req openai.ChatCompletionRequest
	var key struct {
		PromptCacheKey string `json:"prompt_cache_key"`
	}
	if err != nil || json.Unmarshal(body, &req) != nil || json.Unmarshal(body, &key) != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.reqs, s.keys = append(s.reqs, req), append(s.keys, key.PromptCacheKey)
	reply := s.reply
	p, inCache, count := s.remember(req, key.PromptCacheKey)
	s.uses = append(s.uses, CacheUse{Key: key.PromptCacheKey, Prompt: p.total, Cached: inCache})
	s.mu.Unlock()
	resp := reply(req)
	if !sleep(r, resp.Delay) {
		return
	}
	if resp.Status != 0 && resp.Status != http.StatusOK {
		msg := resp.ErrorMessage
		if msg == "" {
			msg = "scripted failure"
		}
		body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "server_error", "code": fmt.Sprint(resp.Status)}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.Status)
		w.Write(body)
		return
	}
	usage := openai.Usage{PromptTokens: resp.PromptTokens, CompletionTokens: resp.CompletionTokens}
	if usage.PromptTokens == 0 && count != nil {
		usage.PromptTokens = p.total
	}
	if usage.PromptTokens == 0 {
		for _, m := range req.Messages {
			usage.PromptTokens += 4 + len(strings.Fields(Text(m)))
		}
	}
	usage.PromptTokensDetails = &openai.PromptTokensDetails{CachedTokens: min(inCache, usage.PromptTokens)}
	if usage.CompletionTokens == 0 {
		usage.CompletionTokens = len(strings.Fields(resp.Content))
	}
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		if resp.Cut {
			w.Header().Set("Content-Length", "4096")
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, `{"id":"chatcmpl-test","choices":[{"message":{"content":"`)
			cut(w)
			return
		}
		content, finish := resp.Content, finishOf(resp)
		if resp.EndEarly { // half the reply, and no finish reason
			content, finish = content[:len(content)/2], ""
		}
		json.NewEncoder(w).Encode(openai.ChatCompletionResponse{
			ID: "chatcmpl-test", Object: "chat.completion", Created: time.Now().Unix(), Model: req.Model,
			Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{
				Role: openai.ChatMessageRoleAssistant, Content: content, ToolCalls: resp.ToolCalls}, FinishReason: finish}},
			Usage: usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	chunk := func(delta string, finish openai.FinishReason) openai.ChatCompletionStreamResponse {
		return openai.ChatCompletionStreamResponse{ID: "chatcmpl-test", Object: "chat.completion.chunk", Model: req.Model,
			Choices: []openai.ChatCompletionStreamChoice{{Delta: openai.ChatCompletionStreamChoiceDelta{Content: delta}, FinishReason: finish}}}
	}
	pieces := strings.SplitAfter(resp.Content, " ")
	for i, piece := range pieces {
		if i > 0 && !sleep(r, resp.ChunkDelay) {
			return
		}
		if (resp.Cut || resp.EndEarly) && i == len(pieces)/2 {
			if resp.Cut {
				cut(w)
			}
			return
		}
		if !send(chunk(piece, "")) {
			return
		}
	}
	for i, c := range resp.ToolCalls {
		args := c.Function.Arguments
		first, rest := c, openai.ToolCall{Index: &i, Function: openai.FunctionCall{Arguments: args[len(args)/2:]}}
		first.Index, first.Function.Arguments = &i, args[:len(args)/2]
		for _, piece := range []openai.ToolCall{first, rest} {
			if !send(openai.ChatCompletionStreamResponse{ID: "chatcmpl-test", Object: "chat.completion.chunk", Model: req.Model,
				Choices: []openai.ChatCompletionStreamChoice{{Delta: openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{piece}}}}}) {
				return
			}
		}
	}
	send(chunk("", finishOf(resp)))
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		send(openai.ChatCompletionStreamResponse{ID: "chatcmpl-test", Object: "chat.completion.chunk", Model: req.Model,
			Choices: []openai.ChatCompletionStreamChoice{}, Usage: &usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// remember adds req's prompt to the recent ones under key and returns it,
// what of it the cache serves, and the counter it was counted with (nil
// when words were).
func (s *Server) remember(req openai.ChatCompletionRequest, key string) (prompt, int, func(string) int) {
	count := words
	var counter func(string) int
	if c := s.counter; c != nil {
		counter = func(text string) int { return c.Text(req.Model, text) }
		count = counter
	}
	p := promptOf(req, count)
	n := cached(p, s.recent[key], count)
	if s.recent == nil {
		s.recent = map[string][]prompt{}
	}
	s.recent[key] = append(s.recent[key], p)
	if len(s.recent[key]) > cacheDepth {
		s.recent[key] = s.recent[key][1:]
	}
	return p, n, counter
}

// finishOf is the finish reason of a complete answer.
func finishOf(resp Response) openai.FinishReason {
	if len(resp.ToolCalls) > 0 {
		return openai.FinishReasonToolCalls
	}
	return openai.FinishReasonStop
}

// cut drops the connection under w, as a failing network or service does.
func cut(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
		}
	}
}

// sleep waits d unless the client goes away first.
func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}

// Text is a message's text: its content, or its content parts' text
// joined by spaces, an image part as "[image_url]".
func Text(m openai.ChatCompletionMessage) string {
	if len(m.MultiContent) == 0 {
		return m.Content
	}
	var out []string
	for _, p := range m.MultiContent {
		if p.Type == openai.ChatMessagePartTypeImageURL {
			out = append(out, "[image_url]")
		} else {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, " ")
}
