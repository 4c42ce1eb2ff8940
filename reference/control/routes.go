package control

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// handlerFunc answers one endpoint; an error becomes the error answer.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// route is one endpoint: its method and its path pattern after /control/.
type route struct {
	method, path string
	h            handlerFunc
}

// routes is every endpoint of docs/control-api.md.
func (a *api) routes() []route {
	return []route{
		{"GET", "capabilities", a.capabilities},
		{"POST", "wallets", a.createWallet},
		{"GET", "wallets/{id}", a.wallet},
		{"POST", "wallets/{id}/credit", a.credit},
		{"GET", "wallets/{id}/ledger", a.ledger},
		{"POST", "keys", a.createKey},
		{"POST", "keys/{id}/revoke", a.revokeKey},
		{"POST", "trust", a.putTrust},
		{"POST", "principals", a.createPrincipal},
		{"POST", "principals/{id}/revoke", a.revokePrincipal},
		{"POST", "tools", a.putTool},
		{"DELETE", "tools/{name}", a.removeTool},
		{"POST", "servers", a.putServer},
		{"DELETE", "servers/{name}", a.removeServer},
		{"POST", "permits", a.createPermit},
		{"GET", "dispatches", a.dispatches},
		{"GET", "locks", a.locks},
		{"GET", "operations", a.operations},
		{"POST", "operations/{key}/settle", a.settle},
		{"GET", "clock", a.getClock},
		{"PUT", "clock", a.setClock},
		{"DELETE", "clock", a.resetClock},
		{"POST", "clock/advance", a.advanceClock},
		{"GET", "settings", a.getSettings},
		{"PUT", "settings", a.putSettings},
		{"DELETE", "settings", a.resetSettings},
		{"GET", "faults", a.listFaults},
		{"POST", "faults", a.armFault},
		{"DELETE", "faults", a.resetFaults},
		{"GET", "faults/{id}", a.getFault},
		{"POST", "faults/{id}/await", a.awaitFault},
		{"POST", "faults/{id}/release", a.releaseFault},
	}
}

// unroutedPattern catches every request no endpoint takes, so a wrong
// method or an unknown path gets the API's JSON error, not the ServeMux's
// plain-text one.
const unroutedPattern = "/control/"

// methods are the methods the API has, in the order an Allow header lists
// them.
var methods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete}

func (a *api) newMux() *http.ServeMux {
	mux := http.NewServeMux()
	for _, rt := range a.routes() {
		mux.Handle(rt.method+" /control/"+rt.path, a.endpoint(rt))
	}
	mux.HandleFunc(unroutedPattern, a.unrouted)
	return mux
}

func (a *api) endpoint(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != rt.method {
			// A GET pattern also takes HEAD; the API answers HEAD as
			// a method it does not have.
			a.unrouted(w, r)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		if err := rt.h(w, r); err != nil {
			a.answerErr(w, r, err)
		}
	})
}

// unrouted answers 405 with the methods the path has, or 404.
func (a *api) unrouted(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range methods {
		probe := r.WithContext(r.Context())
		probe.Method = m
		if _, pattern := a.mux.Handler(probe); pattern != unroutedPattern {
			allowed = append(allowed, m)
		}
	}
	path := requestPath(r)
	if len(allowed) == 0 {
		writeErr(w, notFound(path))
		return
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	writeErr(w, fail(http.StatusMethodNotAllowed, "method_not_allowed", "%s is not allowed on %s (allowed: %s)", r.Method, path, strings.Join(allowed, ", ")))
}

func notFound(path string) *apiError {
	return fail(http.StatusNotFound, "not_found", "no such control endpoint %s", path)
}

// segments splits the path after /control/, unescaping each segment (a tool
// name may hold an escaped '/').
func segments(u *url.URL) ([]string, bool) {
	p, ok := strings.CutPrefix(u.EscapedPath(), "/control/")
	if !ok {
		return nil, false
	}
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return nil, false
	}
	parts := strings.Split(p, "/")
	for i, s := range parts {
		v, err := url.PathUnescape(s)
		if err != nil || v == "" {
			return nil, false
		}
		parts[i] = v
	}
	return parts, true
}

type requestPathKey struct{}

// routable is r with its path spelled the one way the ServeMux matches:
// the API has always ignored a trailing slash and taken "." and ".." as
// names (a tool may be called ".."), where a ServeMux would redirect. The
// path as sent stays for the error sentences.
func routable(r *http.Request, segs []string) *http.Request {
	escaped := make([]string, len(segs))
	for i, s := range segs {
		escaped[i] = url.PathEscape(s)
		if s == "." || s == ".." {
			escaped[i] = strings.ReplaceAll(s, ".", "%2E")
		}
	}
	u := *r.URL
	u.Path = "/control/" + strings.Join(segs, "/")
	u.RawPath = "/control/" + strings.Join(escaped, "/")
	out := r.WithContext(context.WithValue(r.Context(), requestPathKey{}, r.URL.Path))
	out.URL = &u
	return out
}

// requestPath is the path r was sent with.
func requestPath(r *http.Request) string {
	if p, ok := r.Context().Value(requestPathKey{}).(string); ok {
		return p
	}
	return r.URL.Path
}
