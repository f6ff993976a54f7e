// Package llm connects chat turns to a model: any OpenAI-compatible service
// through go-openai, or an offline stand-in for local runs without one.
package llm

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
)

// OpenAI calls an OpenAI-compatible chat completions API.
type OpenAI struct {
	client *openai.Client
}

// NewOpenAI returns a client for apiKey at baseURL ("" for OpenAI itself).
// httpClient may be nil.
func NewOpenAI(apiKey, baseURL string, httpClient *http.Client) *OpenAI {
	cfg := openai.DefaultConfig(apiKey)
	if baseURL != "" {
		cfg.BaseURL = strings.TrimSuffix(baseURL, "/")
	}
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	hc := *httpClient
	hc.Transport = cacheKeys{cmp.Or[http.RoundTripper](hc.Transport, http.DefaultTransport)}
	cfg.HTTPClient = &hc
	return &OpenAI{client: openai.NewClientWithConfig(cfg)}
}

// Generate sends req, streaming when onDelta is set.
func (o *OpenAI) Generate(ctx context.Context, req chat.Request, onDelta func(string)) (*chat.Reply, error) {
	creq := openai.ChatCompletionRequest{Model: req.Model, Messages: Messages(req)}
	ctx = withCacheKey(ctx, req.CacheKey)
	creq.Tools, creq.ToolChoice = Tools(req)
	if onDelta == nil {
		return o.complete(ctx, creq)
	}
	return o.stream(ctx, creq, onDelta)
}

// complete asks for creq's reply whole.
func (o *OpenAI) complete(ctx context.Context, creq openai.ChatCompletionRequest) (*chat.Reply, error) {
	resp, err := o.client.CreateChatCompletion(ctx, creq)
	if err != nil {
		return nil, serviceError(err)
	}
	if len(resp.Choices) == 0 {
		return nil, errors.New("llm: the reply has no choices")
	}
	if resp.Choices[0].FinishReason == "" {
		return nil, &ServiceError{cause: errIncomplete}
	}
	return &chat.Reply{
		Content:          resp.Choices[0].Message.Content,
		ToolCalls:        toolCalls(resp.Choices[0].Message.ToolCalls),
		Model:            resp.Model,
		FinishReason:     string(resp.Choices[0].FinishReason),
		PromptTokens:     resp.Usage.PromptTokens,
		CompletionTokens: resp.Usage.CompletionTokens,
		CachedTokens:     cachedTokens(&resp.Usage),
	}, nil
}

// stream asks for creq's reply as a stream, passing each piece of its
// text to onDelta as it comes.
func (o *OpenAI) stream(ctx context.Context, creq openai.ChatCompletionRequest, onDelta func(string)) (*chat.Reply, error) {
	creq.Stream = true
	creq.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	stream, err := o.client.CreateChatCompletionStream(ctx, creq)
	if err != nil {
		return nil, serviceError(err)
	}
	defer stream.Close()
	var text strings.Builder
	var calls callDeltas
	reply := &chat.Reply{Model: creq.Model}
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, serviceError(err)
		}
		if chunk.Model != "" {
			reply.Model = chunk.Model
		}
		if chunk.Usage != nil {
			reply.PromptTokens, reply.CompletionTokens = chunk.Usage.PromptTokens, chunk.Usage.CompletionTokens
			reply.CachedTokens = cachedTokens(chunk.Usage)
		}
		for _, c := range chunk.Choices {
			if c.Delta.Content != "" {
				text.WriteString(c.Delta.Content)
				onDelta(c.Delta.Content)
			}
			calls.add(c.Delta.ToolCalls)
			if c.FinishReason != "" {
				reply.FinishReason = string(c.FinishReason)
			}
		}
	}
	if reply.FinishReason == "" {
		// The stream ended, cleanly or not, before the service said the
		// reply was complete: what arrived is a fragment, not a reply.
		return nil, &ServiceError{cause: errIncomplete}
	}
	reply.Content, reply.ToolCalls = text.String(), toolCalls(calls)
	return reply, nil
}

// cachedTokens is the part of u's prompt the provider served from its
// prompt cache, as it reported it (0 if it did not).
func cachedTokens(u *openai.Usage) int {
	if u.PromptTokensDetails == nil {
		return 0
	}
	return u.PromptTokensDetails.CachedTokens
}

// Tools converts a request's tools and tool choice to OpenAI's format.
func Tools(req chat.Request) ([]openai.Tool, any) {
	if len(req.Tools) == 0 {
		return nil, nil
	}
	out := make([]openai.Tool, len(req.Tools))
	for i, t := range req.Tools {
		def := &openai.FunctionDefinition{Name: t.Name, Description: t.Description}
		if len(t.Parameters) > 0 {
			def.Parameters = t.Parameters
		}
		out[i] = openai.Tool{Type: openai.ToolTypeFunction, Function: def}
	}
	switch req.ToolChoice {
	case "":
		return out, nil
	case chat.ToolChoiceAuto, chat.ToolChoiceNone, chat.ToolChoiceRequired:
		return out, req.ToolChoice
	}
	return out, openai.ToolChoice{Type: openai.ToolTypeFunction, Function: openai.ToolFunction{Name: req.ToolChoice}}
}

// callDeltas gathers a streamed reply's tool calls: each arrives in pieces
// under its index, its id and name first, then its arguments.
type callDeltas []openai.ToolCall

func (d *callDeltas) add(pieces []openai.ToolCall) {
	for _, p := range pieces {
		i := len(*d) - 1
		if p.Index != nil {
			i = *p.Index
		}
		for i >= len(*d) || i < 0 {
			*d = append(*d, openai.ToolCall{Type: openai.ToolTypeFunction})
			i = max(i, 0)
		}
		c := &(*d)[i]
		if p.ID != "" {
			c.ID = p.ID
		}
		if p.Type != "" {
			c.Type = p.Type
		}
		c.Function.Name += p.Function.Name
		c.Function.Arguments += p.Function.Arguments
	}
}

// toolCalls converts the calls a reply asks for.
func toolCalls(calls []openai.ToolCall) []history.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]history.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = history.ToolCall{ID: c.ID, Type: string(c.Type), Function: history.FunctionCall{Name: c.Function.Name, Arguments: c.Function.Arguments}}
	}
	return out
}

// errIncomplete is a reply that ended without a finish reason.
var errIncomplete = errors.New("the stream ended before the reply was complete")

// ServiceError is a failure of the model service, described by what
// identifies it (HTTP status, the service's error type and code) and never
// by the service's own message, which may quote the conversation: it is
// logged, and logs carry no content.
type ServiceError struct {
	Status int    // HTTP status; 0 if the service was not reached
	Type   string // the service's error type or code, if it gave one
	cause  error  // for errors.Is (deadlines, cancellation); not printed
}

func (e *ServiceError) Error() string {
	switch {
	case e.Status == 0 && errors.Is(e.cause, context.DeadlineExceeded):
		return "model service: no answer within the deadline"
	case e.Status == 0 && errors.Is(e.cause, context.Canceled):
		return "model service: the call was cancelled"
	case errors.Is(e.cause, errIncomplete):
		return "model service: " + errIncomplete.Error()
	case e.Status == 0:
		return "model service: not reachable"
	case e.Type != "":
		return "model service: HTTP " + strconv.Itoa(e.Status) + " (" + e.Type + ")"
	}
	return "model service: HTTP " + strconv.Itoa(e.Status)
}

func (e *ServiceError) Unwrap() error { return e.cause }

// serviceError strips a go-openai error down to a ServiceError.
func serviceError(err error) error {
	se := &ServiceError{cause: err}
	var api *openai.APIError
	var req *openai.RequestError
	switch {
	case errors.As(err, &api):
		se.Status, se.Type = api.HTTPStatusCode, api.Type
		if c, ok := api.Code.(string); ok && se.Type == "" {
			se.Type = c
		}
	case errors.As(err, &req):
		se.Status = req.HTTPStatusCode
	}
	if len(se.Type) > 64 || strings.ContainsAny(se.Type, " \n") {
		se.Type = "" // not an identifier: it could be anything
	}
	return se
}

// Messages converts a request to OpenAI's chat format: the operator's
// system prompt first, the session's instructions, the memory block's
// stable part, then the history with its tool calls and results, with
// the request's Context just before the message the turn answers.
func Messages(req chat.Request) []openai.ChatCompletionMessage {
	out := make([]openai.ChatCompletionMessage, 0, len(req.Messages)+2)
	if req.System != "" {
		out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: req.System})
	}
	if req.Instructions != "" {
		out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: req.Instructions})
	}
	if req.Memory != "" {
		out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: req.Memory})
	}
	at := contextAt(req)
	for i, m := range req.Messages {
		if i == at {
			out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: req.Context})
		}
		out = append(out, withParts(Message(m), m, req))
	}
	if at == len(req.Messages) {
		out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: req.Context})
	}
	return out
}

// contextAt is where req's Context goes among its messages: before the
// last user message (the one the turn answers, whose tool calls may
// follow it), else at the end (a context previewed for the next message,
// after a reply); -1 when there is none.
func contextAt(req chat.Request) int {
	if req.Context == "" {
		return -1
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		switch m := req.Messages[i]; {
		case m.Role == history.RoleUser:
			return i
		case m.Role == history.RoleAssistant && len(m.ToolCalls) == 0:
			return len(req.Messages)
		}
	}
	return len(req.Messages)
}

// Message converts one stored message.
func Message(m history.Message) openai.ChatCompletionMessage {
	om := openai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
	for _, c := range m.ToolCalls {
		om.ToolCalls = append(om.ToolCalls, openai.ToolCall{
			ID:       c.ID,
			Type:     openai.ToolType(c.Type),
			Function: openai.FunctionCall{Name: c.Function.Name, Arguments: c.Function.Arguments},
		})
	}
	return om
}
