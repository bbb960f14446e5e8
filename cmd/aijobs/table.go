package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"
)

// table writes aligned columns, every cell escaped (cell). What a table
// shows comes from records: a tenant an authorizer passed on before the
// API refused control characters in one, metadata and results as a
// caller or a model wrote them. Printed raw, an escape sequence in one
// would rewrite the operator's screen, title or clipboard.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer) table { return table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)} }

// row writes one line of cells.
func (t table) row(cells ...string) {
	for i, c := range cells {
		if i > 0 {
			_, _ = io.WriteString(t.tw, "\t")
		}
		_, _ = io.WriteString(t.tw, cell(c))
	}
	_, _ = io.WriteString(t.tw, "\n")
}

func (t table) flush() error { return t.tw.Flush() }

// cell is s with each rune a terminal would obey or not show written as
// its Go escape (\x1b, \t, \u202e), and each byte that is not UTF-8 as
// \xNN: category Cc (C0, DEL, C1; a tab or newline would also break the
// columns), Cf (bidi overrides reorder the line, zero-width characters
// hide a difference), Zl and Zp. The same set the API refuses in a
// tenant (pkg/api, displayable). A backslash is left alone, so a cell
// that shows an escape may have held it literally: --format json says
// which.
func cell(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, hidden) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case hidden(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func hidden(r rune) bool { return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) }
