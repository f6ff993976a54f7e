package llm

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/recall"
)

// DefaultEmbeddingModel and DefaultEmbeddingDimensions are what
// exchanges are embedded with by default: text-embedding-3-small cut to
// 512 dimensions (its vectors keep most of their quality shortened, and
// a 512-float vector is 2 KiB in Firestore).
const (
	DefaultEmbeddingModel      = "text-embedding-3-small"
	DefaultEmbeddingDimensions = 512
)

// Embeddings calls an OpenAI-compatible /embeddings endpoint.
type Embeddings struct {
	client     *openai.Client
	model      string
	dimensions int
}

// NewEmbeddings embeds with model at dimensions through client's service
// (see NewOpenAI).
func NewEmbeddings(o *OpenAI, model string, dimensions int) *Embeddings {
	return &Embeddings{client: o.client, model: model, dimensions: dimensions}
}

func (e *Embeddings) Model() string { return fmt.Sprintf("%s/%d", e.model, e.dimensions) }

// Embed embeds texts in one request; the tokens it reports are added to the
// context's meter (chat.WithMeter), as a model call's are.
func (e *Embeddings) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	resp, err := e.client.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{Input: texts,
		Model: openai.EmbeddingModel(e.model), Dimensions: e.dimensions})
	if err != nil {
		return nil, serviceError(err)
	}
	if len(resp.Data) != len(texts) {
		return nil, &ServiceError{cause: fmt.Errorf("%d embeddings for %d texts", len(resp.Data), len(texts))}
	}
	out := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(out) || len(d.Embedding) != e.dimensions {
			return nil, &ServiceError{cause: errors.New("an embedding of another length or place than asked")}
		}
		out[d.Index] = d.Embedding
	}
	chat.Charge(ctx, resp.Usage.TotalTokens)
	return out, nil
}

// LexicalDimensions is the length of the offline stand-in's vectors.
const LexicalDimensions = 256

// Lexical is the offline stand-in for an embedding model: deterministic,
// and useful for search without a service. A text is its terms (English
// stop words out, as search's lexical leg has them: a shared "when" or
// "did" says nothing) and their character trigrams, hashed into
// LexicalDimensions signed buckets (a term weighs three trigrams, so
// shared words count most and shared stems some; a longer term, usually
// rarer, weighs more), L2-normalized: texts that share words are near,
// texts that share none are not. With Words, the vector goes on with the
// rarity-weighted mean of the text's word vectors (WordVectors), so that
// texts that say the same in other words are near too: the two parts
// weigh 0.4 and 0.9 (so that their cosines add as 0.16 and 0.81: the
// words leg of search already matches words as written, the meaning leg
// is for what they say; chosen on the conversation fixture's dev part,
// see docs/search.md).
type Lexical struct {
	Words *WordVectors // nil: words and trigrams only
}

// standInVersion names how a stand-in with word vectors weighs its parts
// and its words (2: 0.4 and 0.9, names at nameWeight; before, 0.8 and 0.6
// and names as any word), so that units it embedded otherwise are
// embedded again.
const standInVersion = 2

// The weights of the two parts of a stand-in vector with word vectors.
const (
	lexicalPart = 0.4
	meaningPart = 0.9
)

func (l Lexical) Model() string {
	if l.Words == nil {
		return fmt.Sprintf("lexical-stand-in/%d", LexicalDimensions)
	}
	return fmt.Sprintf("lexical-stand-in/%d+words/%d/%d", LexicalDimensions, wordDims, standInVersion)
}

func (l Lexical) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = lexical(t)
		if l.Words != nil {
			out[i] = withMeaning(out[i], l.Words.meaning(t))
		}
	}
	return out, nil
}

// withMeaning is the lexical vector lex followed by the meaning m (nil:
// none known), weighed, as a unit vector.
func withMeaning(lex []float32, m []float64) []float32 {
	v := make([]float64, 0, len(lex)+wordDims)
	for _, x := range lex {
		v = append(v, lexicalPart*float64(x))
	}
	for d := range wordDims {
		x := 0.0
		if m != nil {
			x = meaningPart * m[d]
		}
		v = append(v, x)
	}
	out := make([]float32, len(v))
	for i, x := range unit(v) {
		out[i] = float32(x)
	}
	return out
}

func lexical(text string) []float32 {
	v := make([]float64, LexicalDimensions)
	add := func(feature string, w float64) {
		h := fnv.New64a()
		h.Write([]byte(feature))
		x := h.Sum64()
		sign := 1.0
		if x>>63 == 1 {
			sign = -1
		}
		v[x%LexicalDimensions] += sign * w
	}
	for _, w := range recall.Terms(text) {
		r := []rune("^" + w + "$")
		add("w:"+w, 2+math.Log(float64(len(r))))
		for j := 0; j+3 <= len(r); j++ {
			add("t:"+string(r[j:j+3]), 0.7)
		}
	}
	out := make([]float32, LexicalDimensions)
	for i, x := range unit(v) {
		out[i] = float32(x)
	}
	return out
}
