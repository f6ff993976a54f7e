package systemtest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/attachments/attachmentstest"
	"github.com/chatmemory/backend/retention"
)

// TestAttachmentLifecycle: the files go with what held them: an upload no
// message named is swept a day on; the messages message retention deletes
// take their files with them; a purged session takes the files its
// messages named. The bucket (the Cloud Storage emulator beside
// Firestore) is listed after each step. Both stores.
func TestAttachmentLifecycle(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		alice := h.signUp()
		up := func(name string, data []byte) attachments.Attachment {
			var a attachments.Attachment
			h.upload(alice.token, name, "", data, "").want(t, 201).decode(t, &a)
			return a
		}
		inPurged, inTrimmed, loose := up("cat.png", testPNG(4, 4)), up("r.pdf", attachmentstest.PDF("costs")), up("n.txt", []byte("notes"))
		var s1, s2 chatResp
		h.do("POST", "/chat", alice.token, map[string]any{"message": "see", "attachments": []string{inPurged.ID}}).want(t, 200).decode(t, &s1)
		h.do("POST", "/chat", alice.token, map[string]any{"message": "read", "attachments": []string{inTrimmed.ID}}).want(t, 200).decode(t, &s2)
		h.do("PATCH", "/sessions/"+s2.SessionID, alice.token, map[string]any{"messageRetentionDays": 1}).want(t, 200)
		h.do("DELETE", "/sessions/"+s1.SessionID, alice.token, nil).want(t, 200)
		h.idle()
		key := func(a attachments.Attachment) string { return attachments.Key(alice.uid, a.ID) }
		want := func(step string, keys ...string) {
			t.Helper()
			slices.Sort(keys)
			if got := h.objects(); !slices.Equal(got, keys) {
				t.Fatalf("%s: the bucket holds %v, want %v", step, got, keys)
			}
		}
		want("before", key(inPurged), key(inTrimmed), key(loose))

		h.clock.Advance(23 * time.Hour)
		h.app.Sweep(context.Background(), false)
		want("within a day", key(inPurged), key(inTrimmed), key(loose))

		h.clock.Advance(26 * time.Hour) // two days on: the loose upload, and s2's messages, are due
		report, err := h.app.Sweep(context.Background(), false)
		if err != nil {
			t.Fatal(err)
		}
		want("after the unreferenced sweep and the trim", key(inPurged))
		if r, _ := h.download(alice.token, loose.ID); r.StatusCode != 404 {
			t.Fatalf("the swept upload still answers %d", r.StatusCode)
		}
		if c := phaseCounts(report.Phases, "attachments"); c["deleted"] != 1 || c["failed"] != 0 {
			t.Fatalf("the sweep's attachments phase counted %v", c)
		}

		h.clock.Advance(31 * 24 * time.Hour) // past the deleted session's recovery window
		h.app.Sweep(context.Background(), false)
		want("after the purge")
		var list struct{ Attachments []attachments.Attachment }
		h.do("GET", "/attachments", alice.token, nil).want(t, 200).decode(t, &list)
		if len(list.Attachments) != 0 {
			t.Fatalf("records left: %+v", list.Attachments)
		}
	})
}

// phaseCounts are the counts of a sweep's phase called name.
func phaseCounts(phases []retention.Phase, name string) map[string]int {
	for _, p := range phases {
		if p.Name == name {
			return p.Counts
		}
	}
	return nil
}
