package sqs

import "encoding/json"

// Message is the body of a job message, {"job_id": "..."}, declared here
// once: the queue's Send and SendAfter write it, and every reader (the
// worker, replay from the dead letter queue, the chaos harness) reads it
// with ParseMessage. It carries only the id, because the record is the
// truth.
type Message struct {
	JobID string `json:"job_id"`
}

// Body is the message as SQS carries it.
func (m Message) Body() string {
	b, _ := json.Marshal(m) // a struct of one string always encodes
	return string(b)
}

// ParseMessage reads a message body. ok is false when it is not a JSON
// object naming a job id; whether the id is well formed is the reader's
// question (job.ValidID), since a malformed one is a poison message with a
// reason of its own.
func ParseMessage(body string) (m Message, ok bool) {
	if json.Unmarshal([]byte(body), &m) != nil || m.JobID == "" {
		return Message{}, false
	}
	return m, true
}
