package bedrock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// codeClasses maps Bedrock's error codes to classes: the modelled
// exceptions of Converse and ConverseStream, then the common AWS errors of
// Amazon Bedrock's "Troubleshooting API Error Codes" page. An answer is
// classified by its code, not its HTTP status: Bedrock answers 400 both for
// a bad request and for a spent quota, 429 both for throttling and for a
// model that is still loading. A code missing here is internal (retried,
// never trusted blindly); only an answer naming no code (a proxy's page)
// falls back to its status.
var codeClasses = map[string]job.ErrorClass{
	"ThrottlingException": job.RateLimited,
	// ModelNotReadyException (429) says the model itself cannot serve yet
	// (an imported or provisioned model still loading, a model scaled to
	// zero), not that this account sends too much: Bedrock's capacity, so
	// overloaded, like ServiceUnavailableException.
	"ModelNotReadyException":      job.Overloaded,
	"ServiceUnavailableException": job.Overloaded,
	"ServiceUnavailable":          job.Overloaded,
	"ModelTimeoutException":       job.Timeout,
	"InternalServerException":     job.ProviderError,
	"InternalFailure":             job.ProviderError,
	"ModelErrorException":         job.ProviderError,
	"ModelStreamErrorException":   job.ProviderError,
	"ValidationException":         job.InvalidRequest, // or context_length_exceeded: see contextTooLong
	"ValidationError":             job.InvalidRequest,
	"ResourceNotFoundException":   job.InvalidRequest,
	"ConflictException":           job.InvalidRequest,
	"InvalidAction":               job.InvalidRequest,
	// ServiceQuotaExceededException (400) is a spent account quota:
	// retrying cannot help before someone raises it.
	"ServiceQuotaExceededException": job.QuotaExhausted,
	"AccessDeniedException":         job.Auth,
	"UnrecognizedClientException":   job.Auth,
	"ExpiredTokenException":         job.Auth,
	"InvalidClientTokenId":          job.Auth,
	"InvalidSignatureException":     job.Auth,
	"IncompleteSignature":           job.Auth,
	"SignatureDoesNotMatch":         job.Auth,
	"MissingAuthenticationToken":    job.Auth,
	"NotAuthorized":                 job.Auth,
	"RequestExpired":                job.Auth,
	"OptInRequired":                 job.Auth,
	// The account may not use the model yet: a use-case form, a Marketplace
	// subscription or an account check stands in the way.
	"FTUFormNotFilled":        job.Auth,
	"MPAgreementBeingCreated": job.Auth,
	"BadCScoreException":      job.Auth,
}

// contextTooLong matches the ValidationException messages Bedrock and the
// models behind it give for a prompt that does not fit: "Input is too long
// for requested model.", "too many input tokens", Anthropic's "prompt is too
// long" and "input length and `max_tokens` exceed context limit", Nova's
// "Input Tokens Exceeded", and a max_tokens that exceeds the window. The
// message is only matched, never kept: it may quote the prompt.
var contextTooLong = regexp.MustCompile(`(?i)input is too long|too many input tokens|prompt is too long|` +
	`input tokens exceed|too many total text bytes|context (length|limit|window)|max(imum)?[ _]?tokens.*exceed`)

// callError classifies the error of a Converse or ConverseStream call in
// lane that gave no answer. A refusal is not billed, nor a request that
// was never sent in full; lost (model.Unanswered) is billed for a request
// sent whose answer never came and for a success whose body could not be
// read.
func callError(ctx context.Context, err error, sent bool, lost model.Usage, lane job.Lane) *model.Error {
	status := 0
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var u model.Usage
	if status/100 == 2 || status == 0 && sent {
		u = lost
	}
	if ctx.Err() != nil || isTransport(err) {
		return transportError(ctx, err, u)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return inLane(apiError(ae.ErrorCode(), ae.ErrorMessage(), status, model.Usage{}), ae.ErrorCode(), lane)
	}
	// What is left never reached Bedrock, or came back unreadable: its
	// text is the SDK's, not an answer quoting the prompt.
	var ip smithy.InvalidParamsError
	switch {
	case errors.As(err, &ip):
		return &model.Error{Class: job.InvalidRequest, Detail: "bedrock: invalid parameters",
			Err: fmt.Errorf("bedrock: invalid parameters: %w", err)}
	case status/100 == 2:
		return &model.Error{Class: job.ProviderError, Detail: "bedrock: unparseable response", Usage: u,
			Err: errors.New("bedrock: decode the response failed")}
	case status != 0:
		return apiError("", "", status, u)
	}
	detail := "bedrock: call failed"
	if strings.Contains(err.Error(), "get identity") { // the SDK's only mark of a credentials failure
		// Retryable (internal), not auth: fetching role credentials can fail
		// for a moment (metadata service, STS), and no answer said no.
		detail = "bedrock: credentials unavailable"
	}
	return &model.Error{Class: job.Internal, Detail: detail, Usage: u, Err: fmt.Errorf("%s: %w", detail, err)}
}

// streamError classifies an error that ended an event stream of a call in
// lane: the context, the connection, an exception Bedrock sent in the
// stream, or a frame that could not be decoded. The usage seen so far is
// billed.
func streamError(ctx context.Context, err error, u model.Usage, lane job.Lane) *model.Error {
	if ctx.Err() != nil || isTransport(err) {
		return transportError(ctx, err, u)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return inLane(apiError(ae.ErrorCode(), ae.ErrorMessage(), 0, u), ae.ErrorCode(), lane)
	}
	return &model.Error{Class: job.ProviderError, Detail: "bedrock: unreadable event stream", Usage: u,
		Err: errors.New("bedrock: decode the event stream failed")}
}

// apiError classifies an error Bedrock answered, by its code (status 0: an
// exception inside an event stream). Detail and Err name the status and
// code only: the message may quote the prompt.
func apiError(code, message string, status int, u model.Usage) *model.Error {
	if code == "UnknownError" { // the SDK's word for "the answer named no code"
		code = ""
	}
	class, known := codeClasses[code]
	switch {
	case code == "":
		class = statusClass(status)
	case !known:
		class = job.Internal
	case class == job.InvalidRequest && (code == "ValidationException" || code == "ValidationError") &&
		contextTooLong.MatchString(message):
		class = job.ContextLengthExceeded
	}
	detail := "stream"
	if status != 0 {
		detail = fmt.Sprintf("http %d", status)
	}
	if code != "" {
		detail += " " + short(code)
	}
	return &model.Error{Class: class, Detail: detail, Usage: u, Err: errors.New("bedrock: " + detail)}
}

// inLane reads e, Bedrock's answer code to a call in lane, as the lane's
// refusal where it is one: a flex call's ServiceUnavailableException is
// taken as flex capacity Bedrock does not have now, so the worker moves
// the call to a faster lane instead of retrying a pool that is full. That
// is our reading, not Bedrock's word: its documentation says only that a
// flex request may be slower, or refused when demand is high, and names
// no exception for the refusal; ServiceUnavailableException ("the service
// isn't currently available") is the answer that fits. Elsewhere the code
// keeps its class.
func inLane(e *model.Error, code string, lane job.Lane) *model.Error {
	if lane == job.Flex && code == "ServiceUnavailableException" {
		e.Class = job.CapacityUnavailable
	}
	return e
}

// statusClass classifies an error answer that named no code (a proxy's
// HTML page, an empty body) by its HTTP status alone.
func statusClass(status int) job.ErrorClass {
	switch {
	case status == 429:
		return job.RateLimited
	case status == 503 || status == 529:
		return job.Overloaded
	case status == 408 || status == 504:
		return job.Timeout
	case status == 401 || status == 403:
		return job.Auth
	case status >= 500:
		return job.ProviderError
	case status == 400 || status == 404 || status == 413 || status == 422:
		return job.InvalidRequest
	}
	return job.Internal
}

// transportError is model.TransportError for this provider, with the
// SDK's wrappers taken off the cause; u is billed.
func transportError(ctx context.Context, err error, u model.Usage) *model.Error {
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return model.TransportError(ctx, "bedrock", cause(err), u)
}

// isTransport reports whether err is the connection's fault rather than an
// answer's.
func isTransport(err error) bool {
	var se *smithyhttp.RequestSendError
	return model.IsTransport(err) || errors.As(err, &se)
}

// cause is the innermost useful error of an SDK transport error: the SDK's
// wrappers name the operation and the URL (a proxy URL may carry
// credentials), the cause is what went wrong.
func cause(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return io.ErrUnexpectedEOF
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	var se *smithyhttp.RequestSendError
	if errors.As(err, &se) && se.Err != nil {
		return se.Err
	}
	return err
}

// short bounds a server-supplied word put into a detail.
func short(s string) string {
	const max = 64
	b := []byte(s)
	for i, c := range b {
		if c < ' ' || c > '~' {
			b[i] = '?'
		}
	}
	if len(b) > max {
		b = b[:max]
	}
	return string(b)
}
