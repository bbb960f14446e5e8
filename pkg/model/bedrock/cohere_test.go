package bedrock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/bedrock"
	"github.com/aijobs/aijobs/pkg/model/bedrock/bedrocktest"
	apiwire "github.com/aijobs/aijobs/pkg/wire"
)

const cohere = "cohere.embed-multilingual-v3"

// cohereClient is a client of the fake over HTTP, and every InvokeModel
// body it sent, in order.
func cohereClient(t *testing.T) (*bedrock.Client, *bedrocktest.Server, func() [][]byte) {
	t.Helper()
	s := bedrocktest.New(nil)
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		s.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := bedrock.New(bedrock.Config{AWS: awsConfig(), Endpoint: srv.URL, Model: cohere})
	if err != nil {
		t.Fatal(err)
	}
	return c, s, func() [][]byte { mu.Lock(); defer mu.Unlock(); return slices.Clone(bodies) }
}

func cohereTexts(n int) []string {
	texts := make([]string, n)
	for i := range texts {
		texts[i] = fmt.Sprintf("text %d", i)
	}
	return texts
}

func cohereTokens(texts []string) int64 {
	var n int64
	for _, t := range texts {
		n += bedrocktest.CohereTokens(t)
	}
	return n
}

// Cohere Embed v3 takes 96 texts a call: 96 texts are one call, 97 two
// and 193 three, in order; the usage is the token header's counts summed,
// exact; every vector is the fake's for its text; and every body asks
// search_document, truncate NONE and float embeddings.
func TestCohereEmbedsInCallsOfNinetySix(t *testing.T) {
	for n, want := range map[int][]int{96: {96}, 97: {96, 1}, 193: {96, 96, 1}} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c, s, bodies := cohereClient(t)
			texts := cohereTexts(n)
			resp, err := c.Generate(context.Background(), model.Request{Model: cohere, Texts: texts})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.CohereCalls(), want) {
				t.Errorf("calls of %v texts, want %v", s.CohereCalls(), want)
			}
			if resp.Usage != (model.Usage{InputTokens: cohereTokens(texts)}) {
				t.Errorf("usage %+v, want exactly %d input tokens", resp.Usage, cohereTokens(texts))
			}
			got, err := apiwire.DecodeEmbeddings(resp.Output)
			if err != nil || len(got) != n {
				t.Fatalf("%d vectors (%v), want %d", len(got), err, n)
			}
			for i, text := range texts {
				if !slices.Equal(got[i], bedrocktest.CohereVector(text)) {
					t.Fatalf("vector %d is not the fake's for %q", i, text)
				}
			}
			for _, b := range bodies() {
				var body map[string]any
				if err := json.Unmarshal(b, &body); err != nil || body["input_type"] != "search_document" || body["truncate"] != "NONE" ||
					fmt.Sprint(body["embedding_types"]) != "[float]" {
					t.Errorf("body %.200s: want input_type search_document, truncate NONE, embedding_types [float]", b)
				}
			}
		})
	}
}

// An answer without its token header is billed its texts' ceiling,
// marked estimated; the calls before it stay exact in the sum.
func TestACohereAnswerWithoutItsTokenHeaderIsAnEstimate(t *testing.T) {
	c, _, _ := cohereClient(t)
	texts := cohereTexts(100)
	texts[97] = "[[bedrock:nousage]]"
	resp, err := c.Generate(context.Background(), model.Request{Model: cohere, Texts: texts})
	if err != nil {
		t.Fatal(err)
	}
	want := model.Usage{InputTokens: cohereTokens(texts[:96]) + job.TextsCeiling(texts[96:]), Estimated: true}
	if resp.Usage != want {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}
}

// A refused call ends the attempt as invalid_request, the calls already
// answered still billed, and no call after it is made.
func TestACohereRefusalKeepsWhatWasPaid(t *testing.T) {
	c, s, _ := cohereClient(t)
	texts := cohereTexts(300)
	texts[100] = "[[bedrock:error=400]]"
	_, err := c.Generate(context.Background(), model.Request{Model: cohere, Texts: texts})
	class, used := model.Classify(err)
	if want := cohereTokens(texts[:96]); class != job.InvalidRequest || used.InputTokens != want || used.Estimated {
		t.Fatalf("%v: class %s, billed %+v, want invalid_request billed exactly %d", err, class, used, want)
	}
	if !slices.Equal(s.CohereCalls(), []int{96}) {
		t.Errorf("calls answered %v, want the first 96 only", s.CohereCalls())
	}
}
