package openai_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/openai"
)

func TestPerModelPrices(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"model":"served","choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":100}}`)
	}))
	defer srv.Close()
	def, _ := job.PricePerMillion("1", "2")
	big, _ := job.PricePerMillion("250", "1000")
	c, err := openai.New(openai.Config{BaseURL: srv.URL, Model: "small", Price: def, Prices: map[string]job.Price{"big": big}})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]job.Nanocents{"": def.Cost(1000, 100), "small": def.Cost(1000, 100), "big": big.Cost(1000, 100)} {
		resp, err := c.Generate(context.Background(), model.Request{Model: name, Messages: []job.Message{{Role: "user", Content: "x"}}})
		if err != nil || resp.Cost != want {
			t.Errorf("model %q: cost %s (%v), want %s", name, resp.Cost, err, want)
		}
	}
}
