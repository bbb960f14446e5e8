package openai

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	apiwire "github.com/aijobs/aijobs/pkg/wire"
)

// answered is chunk ch's 200 line: one vector [i] a text, tokens billed.
func answered(t *testing.T, ch textChunk, tokens int) resultLine {
	t.Helper()
	var data []map[string]any
	for i := ch.from; i < ch.to; i++ {
		data = append(data, map[string]any{"index": i - ch.from, "embedding": apiwire.EncodeVector([]float32{float32(i)})})
	}
	body, _ := json.Marshal(map[string]any{"model": "text-embedding-3-small", "data": data, "usage": map[string]any{"prompt_tokens": tokens}})
	var l resultLine
	if err := json.Unmarshal(fmt.Appendf(nil, `{"custom_id":%q,"response":{"status_code":200,"body":%s}}`, ch.id(), body), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func results(j *joiner) (map[string]model.Response, map[string]error) {
	resps, errs := map[string]model.Response{}, map[string]error{}
	_ = j.each(func(id string, r model.Response, err error) error {
		resps[id], errs[id] = r, err
		return nil
	})
	return resps, errs
}

// A job's lines join in their texts' order whatever order they are read
// in, and a job settles only when every text was answered: one whose
// line never came fails provider_error billed the lines that did.
func TestAJobSettlesOnlyWhenEveryChunkAnswered(t *testing.T) {
	a := []textChunk{{"job-a", 0, 2, 5}, {"job-a", 2, 4, 5}, {"job-a", 4, 5, 5}}
	var j joiner
	for _, i := range []int{2, 0, 1} {
		j.add(a[i], answered(t, a[i], 10+i))
	}
	b := []textChunk{{"job-b", 0, 3, 6}, {"job-b", 3, 6, 6}}
	j.add(b[1], answered(t, b[1], 7)) // b[0]'s line never came
	resps, errs := results(&j)
	if errs["job-a"] != nil || resps["job-a"].Usage != (model.Usage{InputTokens: 33}) {
		t.Fatalf("job-a: %v, usage %+v; want 33 tokens", errs["job-a"], resps["job-a"].Usage)
	}
	got, err := apiwire.DecodeEmbeddings(resps["job-a"].Output)
	if err != nil || len(got) != 5 {
		t.Fatalf("%v, %v", got, err)
	}
	for i, v := range got {
		if v[0] != float32(i) {
			t.Errorf("vector %d is text %v's", i, v[0])
		}
	}
	if class, u := model.Classify(errs["job-b"]); class != job.ProviderError || u != (model.Usage{InputTokens: 7}) || resps["job-b"].Output != "" {
		t.Errorf("job-b: %s %+v, want provider_error billed its answered line's 7", class, u)
	}
}

// A custom id is a chunk's only when it reads whole: a chat line's job id
// is none.
func TestAChunksCustomIDReadsBack(t *testing.T) {
	ch := textChunk{"job_abc", 2048, 4096, 5000}
	if got, ok := parseChunk(ch.id()); !ok || got != ch {
		t.Errorf("%q read as %+v, %v", ch.id(), got, ok)
	}
	for _, id := range []string{"job_abc", "job_abc#", "job_abc#1-1/3", "job_abc#0-4/3", "job_abc#x-1/3", "job_abc#0-1"} {
		if _, ok := parseChunk(id); ok {
			t.Errorf("%q read as a chunk", id)
		}
	}
}
