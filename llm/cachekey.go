package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// go-openai's chat completion request has no prompt_cache_key (its
// Responses API types have one): cacheKeys adds the key a request's
// context carries to the JSON body of a chat completion, so that a
// session's requests reach the same prompt cache.

type cacheKeyCtx struct{}

// withCacheKey returns ctx carrying key ("" for none).
func withCacheKey(ctx context.Context, key string) context.Context {
	if key == "" {
		return ctx
	}
	return context.WithValue(ctx, cacheKeyCtx{}, key)
}

// cacheKeys is a transport that sets prompt_cache_key in chat completions
// whose context carries one.
type cacheKeys struct{ base http.RoundTripper }

func (t cacheKeys) RoundTrip(r *http.Request) (*http.Response, error) {
	key, _ := r.Context().Value(cacheKeyCtx{}).(string)
	if key == "" || r.Body == nil || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		return t.base.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	body = withKey(body, key)
	r = r.Clone(r.Context())
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.base.RoundTrip(r)
}

// withKey is the JSON object body with prompt_cache_key set to key (body
// as it was if it is not an object).
func withKey(body []byte, key string) []byte {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil || obj == nil {
		return body
	}
	k, _ := json.Marshal(key)
	obj["prompt_cache_key"] = k
	out, err := json.Marshal(obj)
	if err != nil {
		return body
	}
	return out
}
