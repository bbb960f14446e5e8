package api

import "unicode/utf8"

// Clip bounds a string the API or the client echoes from its input (a
// field name, a path, an error body) to n bytes and marks the cut with
// "...". It never splits a UTF-8 sequence, so a clipped value stays valid
// JSON text and a readable log line.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
