package chat

import (
	"testing"
	"time"

	"github.com/chatmemory/backend/sessions"
)

func TestUsageWindows(t *testing.T) {
	l := Limits{TurnsPerMinute: 2, TokensPerDay: 100}
	noon := time.Date(2026, 3, 10, 12, 0, 10, 0, time.UTC)
	var u Usage
	for i := 0; i < 2; i++ {
		if err := u.Admit(noon, l); err != nil {
			t.Fatal(err)
		}
	}
	err := u.Admit(noon.Add(49*time.Second), l)
	if sessions.ErrorCode(err) != sessions.ERATELIMITED || sessions.RetryAfter(err) != time.Second {
		t.Errorf("third turn at 12:00:59: %v (retry %s)", err, sessions.RetryAfter(err))
	}
	if err := u.Admit(noon.Add(50*time.Second), l); err != nil {
		t.Errorf("a new minute: %v", err)
	}
	u.AddTokens(noon, 100)
	err = u.Admit(noon.Add(2*time.Minute), l)
	if sessions.ErrorCode(err) != sessions.ERATELIMITED || sessions.RetryAfter(err) != 12*time.Hour-2*time.Minute-10*time.Second {
		t.Errorf("over the daily budget: %v (retry %s)", err, sessions.RetryAfter(err))
	}
	if err := u.Admit(time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC), l); err != nil {
		t.Errorf("next day: %v", err)
	}
	var free Usage
	for i := 0; i < 100; i++ {
		if err := free.Admit(noon, Limits{}); err != nil {
			t.Fatalf("no limits: %v", err)
		}
	}
}

func TestAppendedMessagesWindow(t *testing.T) {
	l := Limits{MessagesPerMinute: 5, TokensPerDay: 100}
	noon := time.Date(2026, 3, 10, 12, 0, 10, 0, time.UTC)
	var u Usage
	if err := u.AdmitMessages(noon, l, 4); err != nil {
		t.Fatal(err)
	}
	if err := u.AdmitMessages(noon, l, 2); sessions.ErrorCode(err) != sessions.ERATELIMITED || sessions.RetryAfter(err) != 50*time.Second {
		t.Errorf("a batch over the minute's messages: %v (retry %s)", err, sessions.RetryAfter(err))
	}
	if err := u.AdmitMessages(noon, l, 1); err != nil || u.MinuteMessages != 5 {
		t.Errorf("a refused batch counted: %v, %d messages", err, u.MinuteMessages)
	}
	if err := u.Admit(noon, Limits{TurnsPerMinute: 1}); err != nil {
		t.Errorf("turns have their own window: %v", err)
	}
	if err := u.AdmitMessages(noon.Add(50*time.Second), l, 5); err != nil {
		t.Errorf("a new minute: %v", err)
	}
	u.AddTokens(noon.Add(time.Minute), 100)
	if err := u.AdmitMessages(noon.Add(2*time.Minute), l, 1); sessions.ErrorCode(err) != sessions.ERATELIMITED {
		t.Errorf("over the day's tokens: %v", err)
	}
}
