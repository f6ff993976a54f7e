package llm_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/llm/llmtest"
	"github.com/chatmemory/backend/recall"
)

// TestEmbeddings: the real go-openai client against an OpenAI-compatible
// server: vectors of the asked length, in the order of the texts, their
// tokens charged to the meter; a failing service is a ServiceError.
func TestEmbeddings(t *testing.T) {
	srv := llmtest.New(t)
	e := llm.NewEmbeddings(llm.NewOpenAI("test", srv.BaseURL(), nil), "text-embedding-3-small", 16)
	ctx, meter := chat.WithMeter(context.Background())
	vs, err := e.Embed(ctx, []string{"trains to Oslo", "hotels near the station", "trains to Bergen"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 || len(vs[0]) != 16 || meter.Tokens() != 10 || e.Model() != "text-embedding-3-small/16" {
		t.Fatalf("%d vectors of %d, %d tokens charged, model %q", len(vs), len(vs[0]), meter.Tokens(), e.Model())
	}
	if recall.Cosine(vs[0], vs[2]) >= recall.Cosine(vs[0], vs[1]) {
		t.Errorf("the order of the vectors is not the texts'")
	}
	_, err = e.Embed(context.Background(), []string{"[embedding failure]"})
	var se *llm.ServiceError
	if !errors.As(err, &se) {
		t.Errorf("a failing service: %v", err)
	}
}

// TestLexical: the offline stand-in is deterministic, of unit length, and
// puts texts that share words nearer than texts that do not.
func TestLexical(t *testing.T) {
	e := llm.Lexical{}
	vs, _ := e.Embed(context.Background(), []string{
		"Which Python library did you recommend for parsing PDFs?",
		"I recommend the pypdf library for parsing PDF files in Python.",
		"The best season to visit Lisbon is spring.",
		"",
		"Which Python library did you recommend for parsing PDFs?",
	})
	var n float64
	for _, x := range vs[0] {
		n += float64(x) * float64(x)
	}
	if len(vs[0]) != llm.LexicalDimensions || math.Abs(n-1) > 1e-5 {
		t.Fatalf("length %d, norm² %v", len(vs[0]), n)
	}
	for i := range vs[0] {
		if vs[0][i] != vs[4][i] {
			t.Fatal("not deterministic")
		}
	}
	if near, far := recall.Cosine(vs[0], vs[1]), recall.Cosine(vs[0], vs[2]); near >= far {
		t.Errorf("distance to the answer %.3f, to an unrelated text %.3f", near, far)
	}
	if d := recall.Cosine(vs[0], vs[3]); d != 1 {
		t.Errorf("an empty text's distance %v, want 1", d)
	}
}
