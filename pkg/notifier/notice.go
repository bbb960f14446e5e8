package notifier

import "encoding/json"

// Notice is the callback queue's message: the job, the version of the
// write that moved it into State. Deliver reads the record for the view
// it sends; Version names the delivery (its webhook-id) through every
// retry, and tells whether a newer one already reached the receiver.
type Notice struct {
	JobID   string `json:"job_id"`
	Version int64  `json:"version"`
	State   string `json:"state"`
}

func (n Notice) body() string {
	b, _ := json.Marshal(n) // strings and an integer always encode
	return string(b)
}

func parseNotice(body string) (Notice, bool) {
	var n Notice
	if json.Unmarshal([]byte(body), &n) != nil || n.JobID == "" || n.Version < 1 {
		return Notice{}, false
	}
	return n, true
}
