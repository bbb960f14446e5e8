package sqs

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/aijobs/aijobs/pkg/settings"
)

// QueueAPI is what creating the queues needs.
type QueueAPI interface {
	CreateQueue(context.Context, *awssqs.CreateQueueInput, ...func(*awssqs.Options)) (*awssqs.CreateQueueOutput, error)
	GetQueueAttributes(context.Context, *awssqs.GetQueueAttributesInput, ...func(*awssqs.Options)) (*awssqs.GetQueueAttributesOutput, error)
	SetQueueAttributes(context.Context, *awssqs.SetQueueAttributesInput, ...func(*awssqs.Options)) (*awssqs.SetQueueAttributesOutput, error)
}

// CreateQueues makes the job queue and its dead letter queue as the CDK
// stack does (retention, visibility, redrive), for local stacks. It is
// idempotent: existing queues get their attributes set to the settings.
func CreateQueues(ctx context.Context, c QueueAPI, s settings.Settings) (url, dlqURL string, err error) {
	return createPair(ctx, c, pair{name: s.QueueName(), dlq: s.DLQName(), visibility: s.VisibilityTimeout,
		retention: s.QueueRetention, dlqRetention: s.DLQRetention, maxReceives: s.MaxReceiveCount})
}

// CreateCallbackQueues makes the callback queue and its dead letter queue
// as the CDK stack does, for local stacks (docs/webhooks.md).
func CreateCallbackQueues(ctx context.Context, c QueueAPI, s settings.Settings) (url, dlqURL string, err error) {
	return createPair(ctx, c, pair{name: s.CallbackQueueName(), dlq: s.CallbackDLQName(), visibility: s.CallbackVisibility(),
		retention: s.QueueRetention, dlqRetention: s.DLQRetention, maxReceives: s.CallbackMaxReceives()})
}

// pair is a queue and its dead letter queue.
type pair struct {
	name, dlq             string
	visibility, retention time.Duration
	dlqRetention          time.Duration
	maxReceives           int
}

func createPair(ctx context.Context, c QueueAPI, p pair) (url, dlqURL string, err error) {
	dlq, err := c.CreateQueue(ctx, &awssqs.CreateQueueInput{
		QueueName:  aws.String(p.dlq),
		Attributes: map[string]string{string(types.QueueAttributeNameMessageRetentionPeriod): seconds(p.dlqRetention)},
	})
	if err != nil {
		return "", "", fmt.Errorf("create dead letter queue %s: %w", p.dlq, err)
	}
	attrs, err := c.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", "", fmt.Errorf("read dead letter queue arn: %w", err)
	}
	redrive, _ := json.Marshal(map[string]string{
		"deadLetterTargetArn": attrs.Attributes[string(types.QueueAttributeNameQueueArn)],
		"maxReceiveCount":     strconv.Itoa(p.maxReceives),
	})
	want := map[string]string{
		string(types.QueueAttributeNameVisibilityTimeout):      seconds(p.visibility),
		string(types.QueueAttributeNameMessageRetentionPeriod): seconds(p.retention),
		string(types.QueueAttributeNameRedrivePolicy):          string(redrive),
	}
	q, err := c.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(p.name), Attributes: want})
	if err != nil {
		// An existing queue with other attributes: bring it to the settings.
		q, err = c.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(p.name)})
		if err != nil {
			return "", "", fmt.Errorf("create queue %s: %w", p.name, err)
		}
		if _, err := c.SetQueueAttributes(ctx, &awssqs.SetQueueAttributesInput{QueueUrl: q.QueueUrl, Attributes: want}); err != nil {
			return "", "", fmt.Errorf("set queue attributes of %s: %w", p.name, err)
		}
	}
	return aws.ToString(q.QueueUrl), aws.ToString(dlq.QueueUrl), nil
}

func seconds(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }

// QueueLookup is what finding the queues by name needs.
type QueueLookup interface {
	GetQueueUrl(context.Context, *awssqs.GetQueueUrlInput, ...func(*awssqs.Options)) (*awssqs.GetQueueUrlOutput, error)
}

// FindQueues answers the URLs of the queues the settings name (<prefix>-jobs
// and <prefix>-jobs-dlq), for an operator who gave only the prefix; an
// empty URL for a queue that does not exist. It creates nothing.
func FindQueues(ctx context.Context, c QueueLookup, s settings.Settings) (url, dlqURL string) {
	find := func(name string) string {
		out, err := c.GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil {
			return ""
		}
		return aws.ToString(out.QueueUrl)
	}
	return find(s.QueueName()), find(s.DLQName())
}
