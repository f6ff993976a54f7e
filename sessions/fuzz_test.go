package sessions

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/kernel/paging"
	"github.com/chatmemory/backend/kernel/strictjson"
)

// FuzzDecodeRequest: any body decodes into what the API accepts, or is an
// invalid-argument error with a short message; nothing panics, and what
// decodes validates without panicking. Seeds: f.Add below and
// testdata/fuzz/FuzzDecodeRequest.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"title":"x","metadata":{"tags":["a"],"custom":{"k":"v"}},"retentionDays":7,"memory":{"strategy":"window","windowExchanges":3,"budgetTokens":1000}}`,
		`{"memory":{"budgetTokens":9223372036854775807}}`, `{"metadata":{"custom":{"__name__":"x"}}}`,
		`{"memory":{"bogus":{"deeper":[1,2,{"x":null}]}}}`, `[`, `{"title":"x"} {}`, `{"noLearning":"yes"}`, "\x00\xff",
	} {
		f.Add([]byte(seed))
	}
	svc := &Service{ContextSize: func(string) int { return 128_000 }}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, v := range []any{&CreateInput{}, &Update{}} {
			err := strictjson.Decode(body, v)
			if err != nil {
				if errs.CodeOf(err) != errs.EINVALID {
					t.Fatalf("%q: code %s", body, errs.CodeOf(err))
				}
				if msg := errs.Message(err); len(msg) > 512 || !utf8.ValidString(msg) || strings.Contains(msg, "malformed JSON: malformed JSON") {
					t.Fatalf("%q: message %q", body, msg)
				}
				continue
			}
			switch in := v.(type) {
			case *CreateInput:
				checkCode(t, in.Metadata.Validate())
				checkCode(t, svc.checkContext(in.Context, "gpt-4o"))
			case *Update:
				if in.Metadata != nil {
					checkCode(t, in.Metadata.Validate())
				}
				if in.Context != nil {
					checkCode(t, svc.checkContext(*in.Context, "gpt-4o"))
				}
			}
		}
	})
}

func checkCode(t *testing.T, err error) {
	t.Helper()
	if err != nil && errs.CodeOf(err) != errs.EINVALID {
		t.Fatalf("validation: code %s: %v", errs.CodeOf(err), err)
	}
}

// FuzzPageToken: a page token from a caller decodes to a cursor of this
// query or is refused; a token this service made always decodes to itself.
func FuzzPageToken(f *testing.F) {
	f.Add("eyJzIjoiYWN0aXZlIiwidSI6MSwiaSI6ImFiYyJ9", "abc", int64(1))
	f.Add("", "", int64(0))
	f.Add("!!!", "x", int64(-1))
	f.Fuzz(func(t *testing.T, tok, id string, updated int64) {
		if c, err := decodeSessionToken(tok, StatusActive); err != nil {
			if errs.CodeOf(err) != errs.EINVALID {
				t.Fatalf("%q: code %s", tok, errs.CodeOf(err))
			}
		} else if !ids.Valid(c.ID) {
			t.Fatalf("%q decoded to a malformed id %q", tok, c.ID)
		}
		if !ids.Valid(id) {
			return
		}
		own := paging.Encode(sessionToken{Status: StatusActive, UpdatedAt: updated, ID: id})
		c, err := decodeSessionToken(own, StatusActive)
		if err != nil || c.ID != id || c.UpdatedAt.UnixNano() != updated {
			t.Fatalf("round trip of (%q, %d): %+v %v", id, updated, c, err)
		}
		if _, err := decodeSessionToken(own, StatusArchived); err == nil {
			t.Fatalf("a token of active sessions was accepted for archived ones")
		}
	})
}
