package systemtest_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"cloud.google.com/go/firestore"
	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/auth"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/functions"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/storage"
	"github.com/chatmemory/backend/storetest"
)

func httptestServer(t *testing.T, backend *app.App) string {
	srv := httptest.NewServer(backend.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// serveWith starts the API over store and v, with the offline model and no
// logs, and returns its URL.
func serveWith(t *testing.T, store storage.Store, v functions.Verifier) string {
	return httptestServer(t, app.New(testConfig(), app.Deps{
		Store: store, Model: llm.Offline{}, Tokens: storetest.Tokens(t), Auth: v,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}))
}

// firestoreAt returns a Firestore client whose connection goes to addr
// (FIRESTORE_EMULATOR_HOST would override an endpoint, not a connection).
func firestoreAt(t *testing.T, addr string) *firestore.Client {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	client, err := firestore.NewClient(context.Background(), "elsewhere", option.WithGRPCConn(conn), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// newAuthClient returns an Auth client of the test project, talking to
// FIREBASE_AUTH_EMULATOR_HOST as it is set now.
func newAuthClient(t testing.TB) *auth.Client {
	t.Helper()
	fb, err := firebase.NewApp(context.Background(), &firebase.Config{ProjectID: authProject()})
	if err != nil {
		t.Fatal(err)
	}
	ac, err := fb.Auth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ac
}
