package functions_test

import (
	"net/http/httptest"
	"testing"

	"github.com/chatmemory/backend/functions"
)

func httptestServer(t *testing.T, app *functions.App) string {
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}
