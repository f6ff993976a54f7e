// Package functionstest checks what the HTTP edge answers against the API's
// description, docs/openapi.yaml: the handler tests in functions and the
// whole-system tests use it. No production code imports it.
package functionstest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// apiSpec is docs/openapi.yaml, loaded and validated once, with a router
// that finds each request's operation in it.
var apiSpec = sync.OnceValues(func() (routers.Router, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromFile(filepath.Join(root, "docs", "openapi.yaml"))
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	doc.Servers = nil // match paths on any host
	return gorillamux.NewRouter(doc)
})

// moduleRoot is the nearest folder up from the test's own with a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", os.ErrNotExist
		}
		dir = up
	}
}

// CheckContract fails t when a response the API sent does not match
// docs/openapi.yaml: an undocumented status, or a JSON body that is not
// what its schema says. Requests to paths the spec does not have (tests
// of unknown endpoints) and event streams are not checked.
func CheckContract(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	router, err := apiSpec()
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		return
	}
	if strings.HasPrefix(header.Get("Content-Type"), "text/event-stream") {
		return
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header,
		Body: io.NopCloser(bytes.NewReader(body)), Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s %s → %d does not match docs/openapi.yaml: %v", req.Method, req.URL.Path, status, err)
	}
}
