package modeltest

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// RunHTTP runs Run's cases and the transport's against an HTTP provider.
func RunHTTP(t *testing.T, wi Wire) {
	Run(t, wi.provider())
	s := suite{secret: wi.Secret}
	for _, c := range []struct {
		name string
		run  func(*testing.T, suite, Wire)
	}{
		{"a redirect is not followed", redirect},
		{"a request never sent is billed nothing", neverSent},
		{"an answer lost is billed what the provider may have generated", lostAnswers},
		{"an answer without counts is estimated", withoutCounts},
		{"progress is live and never goes back", liveProgress},
		{"timeouts are classified", timeouts},
		{"a cancel closes the stream", cancelCloses},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s, wi) })
	}
}

// A followed 307 would re-send the POST: a second billed call behind the
// claim's back (model.NoRedirects).
func redirect(t *testing.T, s suite, wi Wire) {
	for _, stream := range []bool{false, true} {
		var followed atomic.Int32
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/elsewhere") {
				followed.Add(1)
				wi.answer(w, stream, &full)
				return
			}
			http.Redirect(w, r, "/elsewhere"+r.URL.Path, http.StatusTemporaryRedirect)
		})
		c := srv.call(wi.Client(t, srv.URL, stream, nil), Call{})
		_, _, err := s.generate(t, context.Background(), c, nil)
		if me := modelError(t, err); me.Class != job.Internal || me.Detail != "http 307" || me.Usage != (model.Usage{}) {
			t.Fatalf("stream=%v: class %q detail %q usage %+v, want internal, http 307, nothing billed", stream, me.Class, me.Detail, me.Usage)
		}
		if followed.Load() != 0 {
			t.Fatalf("stream=%v: the redirect was followed", stream)
		}
		s.once(t, c)
	}
}

// Until the request is written in full nothing can have been billed: a
// refused connection, an untrusted certificate, a context over before the
// call.
func neverSent(t *testing.T, s suite, wi Wire) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	refused := "http://" + l.Addr().String()
	_ = l.Close()
	var requests atomic.Int32
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { requests.Add(1) }))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	live := serve(t, func(w http.ResponseWriter, _ *http.Request) { wi.answer(w, false, &full) })
	cancelledCtx, cancel := context.WithCancel(context.Background())
	cancel()
	pastCtx, stop := context.WithTimeout(context.Background(), -1)
	defer stop()
	for _, stream := range []bool{false, true} {
		for _, tt := range []struct {
			name  string
			url   string
			ctx   context.Context
			class job.ErrorClass
		}{
			{"connection refused", refused, context.Background(), job.Network},
			{"TLS certificate not trusted", tlsSrv.URL, context.Background(), job.Network},
			{"context cancelled before the call", live.URL, cancelledCtx, job.Cancelled},
			{"deadline passed before the call", live.URL, pastCtx, job.Timeout},
		} {
			c := Call{Provider: wi.Client(t, tt.url, stream, nil), Request: Request()}
			_, _, err := s.generate(t, tt.ctx, c, nil)
			if me := modelError(t, err); me.Class != tt.class || me.Usage != (model.Usage{}) {
				t.Fatalf("%s, stream=%v: class %q usage %+v, want %q and nothing billed (%v)", tt.name, stream, me.Class, me.Usage, tt.class, err)
			}
		}
	}
	if n := requests.Load() + live.requests.Load(); n != 0 {
		t.Fatalf("%d requests reached a server", n)
	}
}
