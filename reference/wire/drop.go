package wire

import (
	"net/http"
)

// dropWriter is the ResponseWriter the SDK writes to. Once its request is
// marked to drop (by the middleware, in the SDK's goroutine, before the
// response is written), every write is discarded but reported as done, so
// the SDK's session stays healthy; the outer handler then closes the
// connection without a byte of response.
type dropWriter struct {
	w  http.ResponseWriter
	st *requestState
}

func (d *dropWriter) Header() http.Header { return d.w.Header() }

func (d *dropWriter) WriteHeader(code int) {
	if d.st.drop.Load() {
		return
	}
	d.w.WriteHeader(code)
}

func (d *dropWriter) Write(p []byte) (int, error) {
	if d.st.drop.Load() {
		return len(p), nil
	}
	return d.w.Write(p)
}

// FlushError lets http.ResponseController flush through the wrapper (the SDK
// flushes the headers of a standalone SSE stream).
func (d *dropWriter) FlushError() error {
	if d.st.drop.Load() {
		return nil
	}
	return http.NewResponseController(d.w).Flush()
}

// Flush implements http.Flusher for callers that type-assert it.
func (d *dropWriter) Flush() { _ = d.FlushError() }

// dropConnection closes the client's connection without answering. On
// HTTP/1.x the connection is hijacked and closed; where hijacking is not
// possible (HTTP/2), the handler aborts, which resets the stream.
func dropConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}
