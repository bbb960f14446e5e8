package job

import "encoding/json"

// QueueMessage is the body of a job's queue message, {"job_id": "..."},
// declared here once: the queue (pkg/sqs) writes it for the API, the
// reconciler and the worker, and every reader (the worker, replay from the
// dead letter queue, the chaos harness) reads it with ParseQueueMessage.
// It carries only the id: the record is the truth, the message only a
// reminder that the job may need work.
type QueueMessage struct {
	JobID string `json:"job_id"`
}

// Body is the message as the queue carries it.
func (m QueueMessage) Body() string {
	b, _ := json.Marshal(m) // a struct of one string always encodes
	return string(b)
}

// ParseQueueMessage reads a message body. ok is false when it is not a
// JSON object naming a job id; whether the id is well formed is the
// reader's question (ValidID), since a malformed one is a poison message
// with a reason of its own.
func ParseQueueMessage(body string) (m QueueMessage, ok bool) {
	if json.Unmarshal([]byte(body), &m) != nil || m.JobID == "" {
		return QueueMessage{}, false
	}
	return m, true
}
