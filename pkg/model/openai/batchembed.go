package openai

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	apiwire "github.com/aijobs/aijobs/pkg/wire"
)

// An embedding job in the batch lane (docs/embeddings.md, "The batch
// lane"). OpenAI's Batch API takes /v1/embeddings as a batch's endpoint,
// one endpoint for every line of a batch (the create's `endpoint`:
// "/v1/chat/completions", "/v1/embeddings", ...). Each line is one
// embeddings request, held to a call's limits, so a job's texts are split
// as a call's are (embedCalls), one line a chunk. A line's custom_id
// names the job and the texts it holds, "<job id>#<from>-<to>/<texts>":
// the results are joined from their ids alone, whatever file or order
// they come in.
const embeddingsEndpoint = "/v1/embeddings"

// endpointOf is the one endpoint of reqs' batch: embeddings when they
// ask for texts, chat completions when they ask for messages. A mix is
// refused before anything is sent: OpenAI would fail the whole batch's
// validation, and the collector never mixes them (its lanes are each of
// one kind).
func endpointOf(reqs []model.Request) (string, error) {
	endpoint := batchEndpoint
	for i, r := range reqs {
		e := batchEndpoint
		if r.Texts != nil {
			e = embeddingsEndpoint
		}
		if i > 0 && e != endpoint {
			return "", &model.Error{Class: job.Internal, Detail: "openai: a batch mixes chat and embedding requests"}
		}
		endpoint = e
	}
	return endpoint, nil
}

// textChunk is the texts [from, to) of an embedding job of texts in all, one
// line of a batch.
type textChunk struct {
	job             string
	from, to, texts int
}

func (c textChunk) id() string { return fmt.Sprintf("%s#%d-%d/%d", c.job, c.from, c.to, c.texts) }

// parseChunk reads a line's custom_id as a chunk; false for a chat line's
// (a job id has no '#').
func parseChunk(customID string) (textChunk, bool) {
	id, rest, ok := strings.Cut(customID, "#")
	if !ok {
		return textChunk{}, false
	}
	span, total, ok1 := strings.Cut(rest, "/")
	from, to, ok2 := strings.Cut(span, "-")
	c := textChunk{job: id}
	var e1, e2, e3 error
	c.from, e1 = strconv.Atoi(from)
	c.to, e2 = strconv.Atoi(to)
	c.texts, e3 = strconv.Atoi(total)
	if !ok1 || !ok2 || e1 != nil || e2 != nil || e3 != nil || c.from < 0 || c.to <= c.from || c.to > c.texts {
		return textChunk{}, false
	}
	return c, true
}

// embeddingLines are r's lines: one a call's worth of its texts, in order.
func (c *Client) embeddingLines(r model.Request) []batchLine {
	var lines []batchLine
	from := 0
	for _, texts := range embedCalls(r.Texts) {
		ch := textChunk{job: r.JobID, from: from, to: from + len(texts), texts: len(r.Texts)}
		lines = append(lines, batchLine{CustomID: ch.id(), Method: http.MethodPost, URL: embeddingsEndpoint,
			Body: embeddingRequest{Model: cmp.Or(r.Model, c.cfg.Model), Input: texts, EncodingFormat: "base64", Dimensions: r.Dimensions}})
		from = ch.to
	}
	return lines
}

// joined is one embedding job's lines read so far.
type joined struct {
	vectors []string // by text, "" until its chunk answered
	got     int      // how many texts are answered
	dims    int      // the vectors' length, set by the first chunk read
	usage   model.Usage
	model   string
	failed  *model.Error // the failed chunk's that came first in the texts
	failAt  int
}

// joiner joins embedding jobs' lines into each job's one result: a job
// settles only once the batch's every line was read.
type joiner struct {
	jobs  map[string]*joined
	order []string
}

// add reads line l of chunk ch.
func (j *joiner) add(ch textChunk, l resultLine) {
	if j.jobs == nil {
		j.jobs = map[string]*joined{}
	}
	g, ok := j.jobs[ch.job]
	if !ok {
		g = &joined{vectors: make([]string, ch.texts)}
		j.jobs[ch.job], j.order = g, append(j.order, ch.job)
	}
	if ch.texts != len(g.vectors) || g.vectors[ch.from] != "" {
		return // not a line this job's lines make, or one read already
	}
	vs, name, u, err := embeddingResult(l, ch.to-ch.from, g.dims)
	g.usage = addUsage(g.usage, u)
	if err != nil {
		if g.failed == nil || ch.from < g.failAt {
			g.failed, g.failAt = err, ch.from
		}
		return
	}
	if g.dims == 0 {
		v, _ := apiwire.DecodeVector(vs[0]) // embeddingResult checked it
		g.dims = len(v)
	}
	copy(g.vectors[ch.from:], vs)
	g.got += len(vs)
	g.model = cmp.Or(g.model, name)
}

// each calls each with every job's result, in the order its first line
// was read: its vectors when every text was answered; else the first
// failed chunk's error (its class), or a provider_error for texts no
// line answered; an error's usage is every line's that answered, so what
// was billed stays on the record.
func (j *joiner) each(each func(string, model.Response, error) error) error {
	for _, id := range j.order {
		g := j.jobs[id]
		var resp model.Response
		var err error
		switch {
		case g.failed != nil:
			e := *g.failed
			e.Usage = g.usage
			err = &e
		case g.got < len(g.vectors):
			err = &model.Error{Class: job.ProviderError, Detail: "openai: the batch ended without every text's line", Usage: g.usage}
		default:
			resp = model.Response{Model: g.model, Output: apiwire.EncodeEmbeddings(g.vectors), Usage: g.usage}
		}
		if err := each(id, resp, err); err != nil {
			return err
		}
	}
	return nil
}

// embeddingResult is line l's vectors (n of them, each of dims floats
// when dims is not 0), its model and usage, or its error: a line's own,
// or a provider_error for an answer that does not match its texts,
// billed as it reported (estimated when it reported nothing).
func embeddingResult(l resultLine, n, dims int) ([]string, string, model.Usage, *model.Error) {
	if err := lineError(l); err != nil {
		me, _ := err.(*model.Error)
		if me == nil {
			me = &model.Error{Class: job.ProviderError, Detail: "openai: batch item", Err: err}
		}
		return nil, "", me.Usage, me
	}
	var er embeddingResponse
	if err := json.Unmarshal(l.Response.Body, &er); err != nil {
		u := model.Usage{Estimated: true} // billed an answer: what it counts is not known
		return nil, "", u, &model.Error{Class: job.ProviderError, Detail: "openai: unparseable batch embeddings", Usage: u, Err: err}
	}
	u := model.Usage{Estimated: true}
	if er.Usage != nil {
		u = model.Usage{InputTokens: er.Usage.PromptTokens}
	}
	vs, err := inOrder(er, n, dims)
	if err != nil {
		return nil, "", u, &model.Error{Class: job.ProviderError, Detail: "openai: batch embeddings do not match the texts", Usage: u, Err: err}
	}
	return vs, er.Model, u, nil
}
