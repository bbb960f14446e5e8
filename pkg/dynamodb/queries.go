package dynamodb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// Failures calls each for every failed or abandoned job that ended in
// [q.Since, q.Until), class by class and shard by shard over the sparse
// failure index: one query per class and shard, paged to the end. With
// q.Saved, each query's jobs are held until their records' saved_nc is
// read (addSaved).
func (s *Store) Failures(ctx context.Context, q job.FailureQuery, each func(job.Failure) error) error {
	classes := q.Classes
	if len(classes) == 0 {
		classes = job.Classes()
	}
	// Sort keys are "<13-digit ended ms>#<id>": '~' sorts after every id.
	from := fmt.Sprintf("%013d", q.Since.UnixMilli())
	to := fmt.Sprintf("%013d#~", q.Until.UnixMilli()-1)
	for _, class := range classes {
		for n := range s.shards {
			in := &ddb.QueryInput{
				TableName: aws.String(s.table), IndexName: aws.String(s.idx.failure),
				KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :from AND :to"),
				ExpressionAttributeNames: map[string]string{"#pk": aFailPK, "#sk": aFailSK},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":pk": avS(fmt.Sprintf("%s#%d", class, n)), ":from": avS(from), ":to": avS(to),
				},
			}
			if q.InputHash != "" { // the index projects it: filtered before addSaved reads anything
				in.FilterExpression = aws.String("#ih = :ih")
				in.ExpressionAttributeNames["#ih"], in.ExpressionAttributeValues[":ih"] = aInputHash, avS(q.InputHash)
			}
			var held []job.Failure
			if err := s.pages(ctx, in, "query failures", func(it map[string]types.AttributeValue) error {
				f, err := failureFrom(it)
				switch {
				case err != nil:
					return err
				case q.Saved:
					held = append(held, f)
					return nil
				}
				return each(f)
			}); err != nil {
				return err
			}
			if err := s.addSaved(ctx, held); err != nil {
				return err
			}
			for _, f := range held {
				if err := each(f); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// savedReaders is how many records addSaved reads at once, so a long
// report waits a sixteenth as long for them as read one by one.
const savedReaders = 16

// addSaved sets each failure's Saved from its record, which the failure
// index does not project (adding it would replace the index: projections
// cannot be changed). Each read is eventually consistent, half a read
// unit per 4 KB of the item; a record gone since the index was read
// (expired) saved nothing. The first failed read stops the others: the
// report cannot be shown whole.
func (s *Store) addSaved(ctx context.Context, fs []job.Failure) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var wg sync.WaitGroup
	slots := make(chan struct{}, savedReaders)
	for i := range fs {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			var err error
			if fs[i].Saved, err = s.saved(ctx, fs[i].ID); err != nil {
				stop(err)
			}
		})
	}
	wg.Wait()
	err := context.Cause(ctx)
	var je *job.Error
	if err == nil || errors.As(err, &je) {
		return err // nil, or a read's own (already translated)
	}
	return unavailable("read saved", err) // ctx ended
}

// saved reads one record's saved_nc.
func (s *Store) saved(ctx context.Context, id string) (job.Nanocents, error) {
	out, err := s.c.GetItem(ctx, &ddb.GetItemInput{TableName: aws.String(s.table), Key: key(id), ConsistentRead: aws.Bool(false),
		ProjectionExpression: aws.String("#saved"), ExpressionAttributeNames: map[string]string{"#saved": aSaved}})
	if err != nil {
		return 0, unavailable("read saved", err)
	}
	v := attrN(out.Item, aSaved)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, unreadable(fmt.Errorf("job %s: saved: %w", id, err))
	}
	return job.Nanocents(n), nil
}

// Unfinished calls each with the id of every job still queued or running
// that was created before before, oldest first across every shard of the
// keys-only active index (ties by id): the reconciler's worklist, whose
// bound on how long a lost message waits depends on that order. It reads
// every shard before the first call.
func (s *Store) Unfinished(ctx context.Context, before time.Time, each func(id string) error) error {
	type entry struct {
		created int64
		id      string
	}
	var all []entry
	for n := range s.idx.activeShards {
		in := &ddb.QueryInput{
			TableName: aws.String(s.table), IndexName: aws.String(s.idx.active),
			KeyConditionExpression:   aws.String("#pk = :pk AND #created_ms < :before"),
			ExpressionAttributeNames: map[string]string{"#pk": aActivePK, "#created_ms": aCreated},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": avS(fmt.Sprintf("active#%d", n)), ":before": avN(before.UnixMilli()),
			},
		}
		if err := s.pages(ctx, in, "query unfinished jobs", func(it map[string]types.AttributeValue) error {
			created, _ := strconv.ParseInt(attrN(it, aCreated), 10, 64)
			all = append(all, entry{created, attrS(it, aID)})
			return nil
		}); err != nil {
			return err
		}
	}
	slices.SortFunc(all, func(a, b entry) int {
		if a.created != b.created {
			return cmp.Compare(a.created, b.created)
		}
		return strings.Compare(a.id, b.id)
	})
	for _, e := range all {
		if err := each(e.id); err != nil {
			return err
		}
	}
	return nil
}

// Finished calls each with up to q.Limit of q's jobs, newest first: a
// sample for `aijobs advise --from-table`. It reads the created index a
// day at a time back from the day after q.Now's (every shard of a day,
// newest first within it), filtered to the route and the finished states,
// and stops once it has the sample, so it reads the route's latest jobs
// and as many others as were created among them, not the table.
func (s *Store) Finished(ctx context.Context, q job.FinishedQuery, each func(job.Job) error) error {
	if err := daysBetween(q.Since, q.Now); err != nil {
		return err
	}
	n := 0
	for day := q.Now.UTC().AddDate(0, 0, 1); n < q.Limit && createdDay(day) >= createdDay(q.Since); day = day.AddDate(0, 0, -1) {
		var found []job.Job
		for sh := range s.idx.createdShards {
			in := s.finishedInput(q, createdDay(day)+"#"+strconv.Itoa(sh))
			if err := s.pages(ctx, in, "query finished jobs", decoded(func(j job.Job) error {
				found = append(found, j)
				return nil
			})); err != nil {
				return err
			}
		}
		slices.SortFunc(found, func(a, b job.Job) int { return b.CreatedAt.Compare(a.CreatedAt) })
		for _, j := range found[:min(len(found), q.Limit-n)] {
			n++
			if err := each(j); err != nil {
				return err
			}
		}
	}
	return nil
}

// finishedInput is Finished's query of one shard of one day.
func (s *Store) finishedInput(q job.FinishedQuery, pk string) *ddb.QueryInput {
	return &ddb.QueryInput{
		TableName: aws.String(s.table), IndexName: aws.String(s.idx.created),
		KeyConditionExpression: aws.String("#pk = :pk AND #created_ms >= :since"),
		FilterExpression:       aws.String("#model = :model AND (#state = :succeeded OR #state = :failed)"),
		ProjectionExpression:   aws.String("#id, #model, #state, #attempts, #run_ms, #created_ms"),
		ExpressionAttributeNames: map[string]string{"#pk": aCreatedPK, "#created_ms": aCreated, "#id": aID, "#model": aModel,
			"#state": aState, "#attempts": aAttempts, "#run_ms": aRunMS},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": avS(pk), ":since": avN(q.Since.UnixMilli()), ":model": avS(q.Model), ":succeeded": st(job.Succeeded), ":failed": st(job.Failed),
		},
		ScanIndexForward: aws.Bool(false),
	}
}

// summaryProjection is what Recent reads of an item the created index
// does not hold (an unfinished job created before the query's window):
// the index's own projection, so both paths answer job.Summary.
var summaryProjection, summaryNames = projectionOf(append([]string{aID, aCreated}, CreatedProjection...))

// Recent calls each with the summary of every job created at or after
// q.Since and every unfinished one: the operator console's overview. It
// reads in proportion to what it shows, not to the table: the created
// index for each day from Since's to the day after Now's (one Query per
// day and shard, paged; a Query reads only the items its key condition
// selects, https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Query.html),
// then the active index for the jobs still unfinished that were created
// before Since, and one eventually consistent GetItem for each of those
// (normally none: a job outlives its deadline by a sweep at most).
// Callers cache it.
func (s *Store) Recent(ctx context.Context, q job.RecentQuery, each func(job.Job) error) error {
	now := q.Now
	if now.IsZero() {
		now = q.Since
	}
	if err := daysBetween(q.Since, now); err != nil {
		return err
	}
	last := now.UTC().AddDate(0, 0, 1)
	for day := q.Since.UTC(); createdDay(day) <= createdDay(last); day = day.AddDate(0, 0, 1) {
		for n := range s.idx.createdShards {
			in := &ddb.QueryInput{
				TableName: aws.String(s.table), IndexName: aws.String(s.idx.created),
				KeyConditionExpression: aws.String("#pk = :pk AND #created_ms >= :since"),
				// What the index holds, asked for by name: DynamoDB answers
				// no more, but kumo answers a query of any index with the
				// whole item.
				ProjectionExpression:     aws.String(summaryProjection),
				ExpressionAttributeNames: maps.Clone(summaryNames),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":pk": avS(createdDay(day) + "#" + strconv.Itoa(n)), ":since": avN(q.Since.UnixMilli()),
				},
			}
			in.ExpressionAttributeNames["#pk"], in.ExpressionAttributeNames["#created_ms"] = aCreatedPK, aCreated
			if err := s.pages(ctx, in, "query jobs by creation day", decoded(each)); err != nil {
				return err
			}
		}
	}
	return s.Unfinished(ctx, q.Since, func(id string) error {
		out, err := s.c.GetItem(ctx, &ddb.GetItemInput{TableName: aws.String(s.table), Key: key(id),
			ProjectionExpression: aws.String(summaryProjection), ExpressionAttributeNames: summaryNames})
		if err != nil {
			return unavailable("get an unfinished job", err)
		}
		if len(out.Item) == 0 { // ended, or expired, since the index was read
			return nil
		}
		return decoded(each)(out.Item)
	})
}

// maxDays bounds the days a read by creation day walks: a query one
// Query per day and shard would otherwise take a zero Since for a walk
// back to year 1. No record is kept this long (job.Retention).
const maxDays = 400

// daysBetween refuses a window by creation day with no start, or longer
// than maxDays.
func daysBetween(since, now time.Time) error {
	if since.IsZero() || now.Sub(since) > maxDays*24*time.Hour {
		return &job.Error{Code: job.CodeInvalidRequest, Field: "since",
			Message: fmt.Sprintf("a read by creation day needs a start within %d days", maxDays)}
	}
	return nil
}

// decoded turns each, a caller's function of jobs, into one of items.
func decoded(each func(job.Job) error) func(map[string]types.AttributeValue) error {
	return func(it map[string]types.AttributeValue) error {
		j, err := fromItem(it)
		if err != nil {
			return unreadable(err)
		}
		return each(j)
	}
}

// pages runs a query to its last page, calling each per item; an error
// from each stops it and is returned as is.
func (s *Store) pages(ctx context.Context, in *ddb.QueryInput, what string, each func(map[string]types.AttributeValue) error) error {
	for {
		out, err := s.c.Query(ctx, in)
		if err != nil {
			return unavailable(what, err)
		}
		for _, it := range out.Items {
			if err := each(it); err != nil {
				return err
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func failureFrom(it map[string]types.AttributeValue) (job.Failure, error) {
	num := func(k string) (int64, error) {
		v := attrN(it, k)
		if v == "" {
			return 0, nil
		}
		return strconv.ParseInt(v, 10, 64)
	}
	cost, err1 := num(aCost)
	attempts, err2 := num(aAttempts)
	endedMS, _, _ := strings.Cut(attrS(it, aFailSK), "#")
	ended, err3 := strconv.ParseInt(endedMS, 10, 64)
	if err := firstErr(err1, err2, err3); err != nil {
		return job.Failure{}, unreadable(fmt.Errorf("failure index item %s: %w", attrS(it, aID), err))
	}
	return job.Failure{ID: attrS(it, aID), Tenant: attrS(it, aTenant), Model: attrS(it, aModel), InputHash: attrS(it, aInputHash),
		State: job.State(attrS(it, aState)), Class: job.ErrorClass(attrS(it, aErrorClass)), Cost: job.Nanocents(cost),
		Attempts: int(attempts), EndedAt: time.UnixMilli(ended).UTC()}, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func attrS(it map[string]types.AttributeValue, k string) string {
	if v, ok := it[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func attrN(it map[string]types.AttributeValue, k string) string {
	if v, ok := it[k].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}
