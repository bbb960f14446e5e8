package job

import (
	"bytes"
	"compress/zlib"
	"io"
	"regexp"
)

// pageObject matches a PDF's page objects ("/Type /Page", not "/Pages").
var pageObject = regexp.MustCompile(`/Type\s*/Page[^s]`)

// streamStart matches the start of a PDF stream's data, after its
// dictionary.
var streamStart = regexp.MustCompile(`stream\r?\n`)

// maxInflated bounds what pdfPages inflates of one PDF's object streams,
// so that a small compressed part cannot make create inflate gigabytes.
const maxInflated = 64 << 20

// pdfPages counts the page objects of a PDF: in its plain objects and in
// its object streams (PDF 1.5 compresses objects, page dictionaries
// among them, into Flate-encoded /ObjStm streams). A PDF whose object
// streams cannot be read (another filter, corrupt data, more than
// maxInflated) or that shows no page at all counts MaxPDFPages, the most
// a provider takes: the count bounds a hold, which must never be low.
func pdfPages(b []byte) int64 {
	pages := int64(len(pageObject.FindAllIndex(b, -1)))
	budget := int64(maxInflated)
	for _, loc := range streamStart.FindAllIndex(b, -1) {
		dict := b[max(0, loc[0]-512):loc[0]]
		if open := bytes.LastIndex(dict, []byte("<<")); open >= 0 {
			dict = dict[open:]
		}
		if !bytes.Contains(dict, []byte("/ObjStm")) {
			continue
		}
		end := bytes.Index(b[loc[1]:], []byte("endstream"))
		if !bytes.Contains(dict, []byte("/FlateDecode")) || end < 0 {
			return MaxPDFPages
		}
		r, err := zlib.NewReader(bytes.NewReader(b[loc[1] : loc[1]+end]))
		if err != nil {
			return MaxPDFPages
		}
		objects, err := io.ReadAll(io.LimitReader(r, budget+1))
		if budget -= int64(len(objects)); (err != nil && len(objects) == 0) || budget < 0 {
			return MaxPDFPages
		}
		pages += int64(len(pageObject.FindAllIndex(objects, -1)))
	}
	if pages == 0 {
		return MaxPDFPages
	}
	return pages
}
