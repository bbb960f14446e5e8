package api

import (
	"encoding/base64"
	"mime"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/wire"
)

// header is the value of the named request header, matched without regard
// to case (API Gateway lower-cases names; other callers may not).
func header(ev events.APIGatewayV2HTTPRequest, name string) (string, bool) {
	if v, ok := ev.Headers[strings.ToLower(name)]; ok {
		return v, true
	}
	for k, v := range ev.Headers {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// body is the request body, decoded from base64 when API Gateway encoded
// it. Its size is checked before anything is decoded: on the encoded length
// first, then on the decoded one.
func body(ev events.APIGatewayV2HTTPRequest) ([]byte, *Error) {
	if !ev.IsBase64Encoded {
		if len(ev.Body) > MaxBodyBytes {
			return nil, bodyTooLarge()
		}
		return []byte(ev.Body), nil
	}
	if len(ev.Body) > base64.StdEncoding.EncodedLen(MaxBodyBytes) {
		return nil, bodyTooLarge()
	}
	b, err := base64.StdEncoding.DecodeString(ev.Body)
	if err != nil {
		return nil, invalid("", "the body is not valid base64")
	}
	if len(b) > MaxBodyBytes {
		return nil, bodyTooLarge()
	}
	return b, nil
}

// checkContentType refuses a Content-Type that is present and not
// application/json; parameters such as charset are allowed.
func checkContentType(ev events.APIGatewayV2HTTPRequest) *Error {
	ct, ok := header(ev, "Content-Type")
	if !ok || strings.TrimSpace(ct) == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return refuse(wire.CodeUnsupportedMediaType, "Content-Type", "the body must be application/json")
	}
	return nil
}
