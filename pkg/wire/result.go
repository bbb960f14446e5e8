package wire

// Result is a succeeded job's result as the API publishes it (the view's
// result member) and as the worker stores it. It is declared here, apart
// from pkg/model's Response, so that a provider seam's change cannot
// reshape what clients read, and its members and their order are the ones
// records were written with before it existed, so every stored result
// reads the same.
type Result struct {
	Output string `json:"output"`
	// Model is the provider's model id that produced it.
	Model        string `json:"model"`
	FinishReason string `json:"finish_reason,omitempty"`
	Usage        Usage  `json:"usage"`
}

// Usage is the tokens the result was billed for, as the provider reported
// them.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// CachedInputTokens and CacheWriteTokens are the part of InputTokens
	// the provider read from and wrote to its prompt cache, billed at
	// their own rates; ReasoningTokens the part of OutputTokens the model
	// reasoned with. Absent when none.
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
	CacheWriteTokens  int64 `json:"cache_write_tokens,omitempty"`
	ReasoningTokens   int64 `json:"reasoning_tokens,omitempty"`
	// Estimated marks counts the provider never reported: an upper
	// estimate of what it may bill.
	Estimated bool `json:"estimated,omitempty"`
}
