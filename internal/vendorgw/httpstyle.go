package vendorgw

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// HTTPStyle makes the gateway answer as the IETF
// draft-ietf-httpapi-idempotency-key-header asks of an HTTP API: a missing
// key is HTTP 400 (or 428, MissingKeyStatus), a key reused with other arguments 422, a duplicate of a
// running operation 409 with a Retry-After header, and every replayed
// result carries "Idempotent-Replayed: true". The JSON-RPC error stays in
// the body (a JSON-RPC client still reads data.reason), so a profile maps
// each refusal by its status and a text of its body.
type HTTPStyle struct {
	On bool
	// RetryAfter is the Retry-After of a 409, in seconds; 0 sends "0"
	// (retry at once), which keeps tests fast and is still a header.
	RetryAfter int
	// MissingKeyStatus answers a missing key: 0 or 400 is 400 Bad
	// Request, 428 Precondition Required, the draft allowing either.
	MissingKeyStatus int
	// BusyUnflagged leaves data.retryable out of a 409's JSON-RPC error:
	// no bug, its status says in progress, which the draft retries.
	BusyUnflagged bool
	// ProblemJSON answers each refusal of the mode (the missing key, the
	// key reused, the busy operation) as an RFC 9457
	// application/problem+json body with no JSON-RPC envelope, as many
	// HTTP APIs following the draft do: its type names the reason
	// (ProblemType + reason), its status the HTTP status; a 409 still
	// carries Retry-After. No bug: the status and the body's texts are
	// what a profile maps.
	ProblemJSON bool
	// Bugs of this mode, each shown caught by a test of cmd/mcpconform.
	ReplayNotMarked       bool // a replay goes out without Idempotent-Replayed
	FirstCallMarked       bool // the call the tool ran for is marked a replay too
	BusyWithoutRetryAfter bool // a 409 with no Retry-After
}

// ProblemType prefixes the type of a problem+json refusal; the reason
// follows it.
const ProblemType = "https://acme.example/problems/"

// problemTitles are the titles of the problem+json refusals.
var problemTitles = map[string]string{
	ReasonKeyMissing:  "Idempotency-Key is missing",
	ReasonKeyConflict: "Idempotency-Key reused with other arguments",
	ReasonBusy:        "A request with this Idempotency-Key is being processed",
}

// problem is the RFC 9457 body of a refusal with status.
func problem(reason string, status int) []byte {
	b, _ := json.Marshal(map[string]any{
		"type":   ProblemType + reason,
		"title":  problemTitles[reason],
		"status": status,
		"detail": "refused: " + reason,
	})
	return b
}

// ReplayedHeader is the draft's replay marker.
const ReplayedHeader = "Idempotent-Replayed"

// tagHeader carries a request's tag from the HTTP layer to the tool
// handler (which sees the request's headers), so the handler can say the
// answer it gave was a replay; any copy a client sent is removed first.
const tagHeader = "X-Acme-Request-Tag"

// replays notes which tagged requests the handler answered from a record.
type replays struct {
	mu   sync.Mutex
	next int
	seen map[string]bool
}

func (r *replays) tag() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	return strconv.Itoa(r.next)
}

func (r *replays) mark(tag string) {
	if tag == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	r.seen[tag] = true
}

// take says whether tag was answered as a replay, and forgets it.
func (r *replays) take(tag string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := r.seen[tag]
	delete(r.seen, tag)
	return was
}

// statusOf is the HTTP status of a refusal reason in this mode; 0 keeps
// go-sdk's 200.
func (hs HTTPStyle) statusOf(reason string) int {
	switch reason {
	case ReasonKeyMissing:
		if hs.MissingKeyStatus != 0 {
			return hs.MissingKeyStatus
		}
		return http.StatusBadRequest
	case ReasonKeyConflict:
		return http.StatusUnprocessableEntity
	case ReasonBusy:
		return http.StatusConflict
	}
	return 0
}

// httpStyle holds each POST's answer until go-sdk has written it whole,
// then sends it with the status and headers the draft asks for. Buffering
// is fine here: a tools/call's event stream ends with its one response.
func (g *Gateway) httpStyle(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(tagHeader)
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		tag := g.replays.tag()
		r.Header.Set(tagHeader, tag)
		buf := &heldWriter{header: http.Header{}, status: http.StatusOK}
		next.ServeHTTP(buf, r)
		replayed := g.replays.take(tag)
		for k, vs := range buf.header {
			w.Header()[k] = vs
		}
		status := buf.status
		body := buf.body.Bytes()
		reason, isResult := answerOf(body)
		hs := g.o.HTTPStyle
		if s := hs.statusOf(reason); s != 0 && status == http.StatusOK {
			status = s
			if s == http.StatusConflict && !hs.BusyWithoutRetryAfter { // BUG BusyWithoutRetryAfter
				w.Header().Set("Retry-After", strconv.Itoa(hs.RetryAfter))
			}
			if hs.ProblemJSON {
				body = problem(reason, s)
				w.Header().Del("Content-Length")
				w.Header().Set("Content-Type", "application/problem+json")
			}
		}
		if isResult && ((replayed && !hs.ReplayNotMarked) || hs.FirstCallMarked) { // BUG ReplayNotMarked, FirstCallMarked
			w.Header().Set(ReplayedHeader, "true")
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
}

// answerOf reads the JSON-RPC response in a body, plain JSON or an event
// stream: its error's data.reason, or whether it is a result.
func answerOf(body []byte) (reason string, isResult bool) {
	msgs := [][]byte{bytes.TrimSpace(body)}
	if len(msgs[0]) > 0 && msgs[0][0] != '{' {
		msgs = nil
		for _, line := range strings.Split(string(body), "\n") {
			if d, ok := strings.CutPrefix(strings.TrimSuffix(line, "\r"), "data:"); ok {
				msgs = append(msgs, []byte(strings.TrimSpace(d)))
			}
		}
	}
	for _, m := range msgs {
		var resp struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Data errData `json:"data"`
			} `json:"error"`
		}
		if json.Unmarshal(m, &resp) != nil {
			continue
		}
		if resp.Error != nil {
			return resp.Error.Data.Reason, false
		}
		if len(resp.Result) > 0 {
			isResult = true
		}
	}
	return "", isResult
}

// heldWriter keeps what go-sdk writes; Flush does nothing, as nothing has
// been sent yet.
type heldWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func (h *heldWriter) Header() http.Header { return h.header }

func (h *heldWriter) WriteHeader(status int) {
	if !h.wrote {
		h.status, h.wrote = status, true
	}
}

func (h *heldWriter) Write(b []byte) (int, error) {
	h.wrote = true
	return h.body.Write(b)
}

func (h *heldWriter) Flush() {}
