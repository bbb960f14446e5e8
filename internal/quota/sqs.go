package quota

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"
)

// sqsTarget starts the X-Amz-Target of every SQS action in the JSON
// protocol the SDK speaks.
const sqsTarget = "AmazonSQS."

// receive holds a ReceiveMessage to the queue's in-flight quota
// (Limits.InFlight), as SQS does
// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-queues.html):
// at the quota a short poll is refused with OverLimit and a long poll
// answers no messages and no error, after its wait; below it a receive
// takes no more than the room left. The count is the emulator's own
// ApproximateNumberOfMessagesNotVisible, asked before each receive (one
// more request a receive).
func (f *Front) receive(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	c := &call{f: f, r: r, service: sqsTarget, action: "ReceiveMessage", body: body}
	c.receive().write(w)
}

func (c *call) receive() answer {
	var in map[string]any
	if json.Unmarshal(c.body, &in) != nil {
		return c.pass()
	}
	a, err := c.ask("GetQueueAttributes", map[string]any{"QueueUrl": in["QueueUrl"],
		"AttributeNames": []string{"ApproximateNumberOfMessagesNotVisible", "ReceiveMessageWaitTimeSeconds"}})
	if err != nil || a.status != http.StatusOK {
		return c.pass() // a queue the emulator does not know: it answers
	}
	var attrs struct{ Attributes map[string]string }
	_ = json.Unmarshal(a.body, &attrs)
	inFlight, _ := strconv.Atoi(attrs.Attributes["ApproximateNumberOfMessagesNotVisible"])
	wait, _ := strconv.Atoi(attrs.Attributes["ReceiveMessageWaitTimeSeconds"])
	if v, ok := in["WaitTimeSeconds"].(float64); ok {
		wait = int(v)
	}
	room := c.f.limits.InFlight - inFlight
	if room <= 0 {
		if wait == 0 {
			return sqsRefusal(http.StatusForbidden, "OverLimit", "Too many messages in flight on the queue (the quota front's in-flight cap)")
		}
		select {
		case <-time.After(time.Duration(wait) * time.Second):
		case <-c.r.Context().Done():
		}
		return sqsEmpty()
	}
	most := 1
	if v, ok := in["MaxNumberOfMessages"].(float64); ok {
		most = int(v)
	}
	in["MaxNumberOfMessages"] = min(most, room)
	c.body, _ = json.Marshal(in)
	return c.pass()
}

// sqsRefusal is an SQS error in the JSON protocol, with the query error
// header the SDK reads a code from.
func sqsRefusal(status int, code, message string) answer {
	b, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.sqs#" + code, "message": message})
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amzn-Query-Error", code+";Sender")
	return answer{status: status, header: h, body: b}
}

// sqsEmpty is a receive that found no message.
func sqsEmpty() answer {
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	return answer{status: http.StatusOK, header: h, body: []byte("{}")}
}
