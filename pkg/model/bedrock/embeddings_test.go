package bedrock_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/bedrock"
	"github.com/aijobs/aijobs/pkg/model/bedrock/bedrocktest"
	apiwire "github.com/aijobs/aijobs/pkg/wire"
)

const titan = "amazon.titan-embed-text-v2:0"

func titanClient(t *testing.T) (*bedrock.Client, *bedrocktest.Server) {
	t.Helper()
	s := bedrocktest.New(nil)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	c, err := bedrock.New(bedrock.Config{AWS: awsConfig(), Endpoint: srv.URL, Model: titan})
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

// Titan takes one text an InvokeModel: an attempt of n texts is n calls,
// in order, its usage their inputTextTokenCount summed, its answer each
// text's vector at the dimensions asked.
func TestTitanEmbedsEachTextInItsOwnCall(t *testing.T) {
	c, s := titanClient(t)
	texts := []string{"one", "two words", "a third, longer text"}
	resp, err := c.Generate(context.Background(), model.Request{Model: titan, Texts: texts, Dimensions: 256})
	if err != nil {
		t.Fatal(err)
	}
	if s.Invocations() != len(texts) {
		t.Errorf("%d calls, want %d", s.Invocations(), len(texts))
	}
	var tokens int64
	for _, text := range texts {
		tokens += bedrocktest.TitanTokens(text)
	}
	if resp.Usage != (model.Usage{InputTokens: tokens}) {
		t.Errorf("usage %+v, want %d input tokens", resp.Usage, tokens)
	}
	got, err := apiwire.DecodeEmbeddings(resp.Output)
	if err != nil || len(got) != len(texts) {
		t.Fatalf("%d vectors (%v), want %d", len(got), err, len(texts))
	}
	for i, text := range texts {
		if !slices.Equal(got[i], bedrocktest.TitanVector(text, 256)) {
			t.Errorf("vector %d is not the fake's for %q", i, text)
		}
	}
}

// A refused call ends the attempt as invalid_request, the texts already
// embedded still billed.
func TestATitanRefusalKeepsWhatWasPaid(t *testing.T) {
	c, s := titanClient(t)
	texts := []string{"a", "bb", "[[bedrock:error=400]]", "d"}
	_, err := c.Generate(context.Background(), model.Request{Model: titan, Texts: texts})
	class, used := model.Classify(err)
	want := bedrocktest.TitanTokens("a") + bedrocktest.TitanTokens("bb")
	if class != job.InvalidRequest || used.InputTokens != want {
		t.Fatalf("%v: class %s, billed %d, want invalid_request billed %d", err, class, used.InputTokens, want)
	}
	if s.Invocations() != 2 {
		t.Errorf("%d calls answered, want 2", s.Invocations())
	}
}
