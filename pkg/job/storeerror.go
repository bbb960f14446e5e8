package job

// Conflict is a store's refusal of a transition whose precondition the
// record does not meet. It carries current, the record as the store found
// it, so the caller decides from the record and not from a second read
// (ConflictJob reads it back). Every store answers with it, so a handler
// tested against the memory store sees what DynamoDB would send.
func Conflict(current Job) *Error {
	return &Error{Code: CodeConflict, Message: "the job is not in a state that allows this", Job: &current}
}

// NotFound is a store's answer for an absent record, and for another
// tenant's: the two must look alike to a caller.
func NotFound() *Error { return &Error{Code: CodeNotFound, Message: "no such job"} }
