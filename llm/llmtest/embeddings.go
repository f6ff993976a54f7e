package llmtest

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
)

// embeddingCalls counts /embeddings requests, for tests.
var embeddingCalls atomic.Int64

// embeddingDelay is how long every server waits before answering an
// /embeddings request (a benchmark's stand-in for a real service's latency).
var embeddingDelay atomic.Int64

// SetEmbeddingDelay makes every server answer /embeddings after d.
func SetEmbeddingDelay(d time.Duration) { embeddingDelay.Store(int64(d)) }

// EmbeddingCalls is how many /embeddings requests all servers answered.
func EmbeddingCalls() int64 { return embeddingCalls.Load() }

// serveEmbeddings answers POST /v1/embeddings as OpenAI does: each input
// embedded as its words hashed into the requested dimensions (8 if none)
// and normalized, so texts that share words are near; usage counts words.
// An input containing "[embedding failure]" answers 500.
func (s *Server) serveEmbeddings(w http.ResponseWriter, r *http.Request) {
	embeddingCalls.Add(1)
	if !sleep(r, time.Duration(embeddingDelay.Load())) {
		return
	}
	var req struct {
		Input      []string `json:"input"`
		Model      string   `json:"model"`
		Dimensions int      `json:"dimensions"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Input) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	gate := s.embedGate
	s.mu.Unlock()
	if gate != nil {
		gate(req.Input)
	}
	dims := req.Dimensions
	if dims <= 0 {
		dims = 8
	}
	type datum struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	var data []datum
	tokens := 0
	for i, text := range req.Input {
		if strings.Contains(text, "[embedding failure]") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"error":{"message":"scripted failure","type":"server_error"}}`))
			return
		}
		words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
		tokens += len(words)
		v := make([]float64, dims)
		for _, word := range words {
			h := fnv.New32a()
			h.Write([]byte(word))
			v[h.Sum32()%uint32(dims)]++
		}
		var n float64
		for _, x := range v {
			n += x * x
		}
		e := make([]float32, dims)
		for j, x := range v {
			if n > 0 {
				e[j] = float32(x / math.Sqrt(n))
			}
		}
		data = append(data, datum{Object: "embedding", Index: i, Embedding: e})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "model": req.Model, "data": data,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens}})
}
