package app

import (
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/sessions"
)

// FuzzConfigFromEnv: any environment is accepted within every bound or
// refused with a message; nothing panics.
func FuzzConfigFromEnv(f *testing.F) {
	base := "STORAGE_BACKEND=inprocess\nGOOGLE_CLOUD_PROJECT=p\nFIREBASE_AUTH_EMULATOR_HOST=127.0.0.1:9099\n"
	for _, seed := range []string{
		"", "MODEL_TIMEOUT_SECONDS=9223372036854775807", "CONTEXT_TOKEN_BUDGET=9223372036854775807",
		"RATE_TURNS_PER_MINUTE=-1", "WINDOW_EXCHANGES=0", "LONG_TERM_MEMORY=maybe", "CLIENT_SYSTEM_MESSAGES=on",
		"SWEEP_BUDGET_SECONDS=1e9", "MAX_BODY_BYTES=10", "RETENTION_DELETED_DAYS=0", "FIRESTORE_EMULATOR_HOST=nohost",
	} {
		f.Add(base + seed)
	}
	f.Fuzz(func(t *testing.T, env string) {
		vars := map[string]string{}
		for _, line := range strings.Split(env, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				vars[k] = v
			}
		}
		c, err := ConfigFromEnv(func(k string) string { return vars[k] })
		if err != nil {
			if !strings.HasPrefix(err.Error(), "configuration:") {
				t.Fatalf("error %q", err)
			}
			return
		}
		for name, ok := range map[string]bool{
			"model timeout":     c.ModelTimeout >= time.Second && c.ModelTimeout <= time.Hour,
			"firestore timeout": c.FirestoreTimeout >= time.Second && c.FirestoreTimeout <= 5*time.Minute,
			"auth timeout":      c.AuthTimeout >= time.Second && c.AuthTimeout <= time.Minute,
			"read timeout":      c.ReadTimeout >= time.Second && c.ReadTimeout <= 10*time.Minute,
			"sweep budget":      c.SweepBudget >= 10*time.Second && c.SweepBudget <= 24*time.Hour,
			"budget":            c.ContextBudget == 0 || (c.ContextBudget >= sessions.MinBudgetTokens && c.ContextBudget <= sessions.MaxBudgetTokens),
			"window":            c.WindowExchanges >= 1 && c.WindowExchanges <= sessions.MaxWindowExchanges,
			"body":              c.MaxBodyBytes >= 1024 && c.MaxBodyBytes <= 32<<20,
			"limits":            c.TurnsPerMinute >= 0 && c.MessagesPerMinute >= 0 && c.TokensPerDay >= 0 && c.MaxSessionMessages >= 0,
		} {
			if !ok {
				t.Fatalf("%s out of bounds in an accepted config: %+v", name, c)
			}
		}
		for _, d := range c.RetentionDays {
			if d < 1 || d > sessions.MaxRetentionDays {
				t.Fatalf("retention days %v", c.RetentionDays)
			}
		}
	})
}
