package app

import (
	"strings"
	"testing"

	"github.com/chatmemory/backend/sessions"
)

func TestConfigFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	local := []string{"GOOGLE_CLOUD_PROJECT", "demo-x", "FIRESTORE_EMULATOR_HOST", "127.0.0.1:8080", "FIREBASE_AUTH_EMULATOR_HOST", "127.0.0.1:9099"}
	c, err := ConfigFromEnv(env(local...))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ChatModels) != 1 || c.ChatModels[0].Name != DefaultChatModel || c.ChatModels[0].ContextSize != 128_000 {
		t.Errorf("models by default: %+v", c.ChatModels)
	}
	if m, err := ConfigFromEnv(env(append(local, "CHAT_MODELS", "gpt-4.1:1047576, tiny:8000,"+DefaultChatModel+":64000")...)); err != nil ||
		len(m.ChatModels) != 3 || m.ChatModels[0] != (ChatModel{Name: DefaultChatModel, ContextSize: 64000}) || m.ChatModels[2] != (ChatModel{Name: "tiny", ContextSize: 8000}) {
		t.Errorf("CHAT_MODELS: %+v %v", m.ChatModels, err)
	}
	if c.Backend != "firestore" || c.ChatModel != DefaultChatModel || c.TurnsPerMinute != DefaultTurnsPerMinute || !c.OfflineModel() || c.ModelTimeout != DefaultModelTimeout {
		t.Errorf("defaults: %+v", c)
	}
	c, err = ConfigFromEnv(env(append(local, "RETENTION_ACTIVE_DAYS", "7", "RETENTION_ARCHIVED_DAYS", "60")...))
	if p := c.Policy(); err != nil || p.ActiveIdle != 7*sessions.Day || p.Archived != 60*sessions.Day || p.Deleted != 30*sessions.Day {
		t.Errorf("retention: %+v %v", c.Policy(), err)
	}
	c, err = ConfigFromEnv(env(append(local, "CORS_ALLOWED_ORIGINS", " https://a.example , https://b.example", "OPENAI_BASE_URL", "http://127.0.0.1:1234/v1", "RATE_TURNS_PER_MINUTE", "0")...))
	if err != nil || len(c.AllowedOrigins) != 2 || c.OfflineModel() || c.TurnsPerMinute != 0 {
		t.Errorf("overrides: %+v %v", c, err)
	}
	// Former names are still read.
	c, err = ConfigFromEnv(env("GOOGLE_CLOUD_PROJECT", "demo-p", "FIREBASE_AUTH_EMULATOR_HOST", "h:2", "STORAGE_BACKEND", "memory", "MEMORY_STRATEGY", "window"))
	if err != nil || c.Backend != "inprocess" || c.DefaultContext().Strategy != sessions.StrategyWindow {
		t.Errorf("former names: %+v %v", c, err)
	}
	c, err = ConfigFromEnv(env("GOOGLE_CLOUD_PROJECT", "demo-p", "FIREBASE_AUTH_EMULATOR_HOST", "h:2", "STORAGE_BACKEND", "inprocess", "MEMORY_STRATEGY", "window", "CONTEXT_STRATEGY", "buffer"))
	if err != nil || c.DefaultContext().Strategy != sessions.StrategyBuffer {
		t.Errorf("CONTEXT_STRATEGY over its former name: %+v %v", c, err)
	}
	for name, tc := range map[string]struct {
		env  []string
		want string
	}{
		"NoProject":                {[]string{"FIRESTORE_EMULATOR_HOST", "h:1", "FIREBASE_AUTH_EMULATOR_HOST", "h:2"}, "GOOGLE_CLOUD_PROJECT"},
		"NoFirestore":              {[]string{"GOOGLE_CLOUD_PROJECT", "demo-p", "FIREBASE_AUTH_EMULATOR_HOST", "h:2"}, "FIRESTORE_EMULATOR_HOST"},
		"NoAuth":                   {[]string{"GOOGLE_CLOUD_PROJECT", "p", "STORAGE_BACKEND", "memory"}, "FIREBASE_AUTH_EMULATOR_HOST"},
		"BadBackend":               {append(local, "STORAGE_BACKEND", "redis"), "STORAGE_BACKEND"},
		"BadNumber":                {append(local, "RATE_TOKENS_PER_DAY", "lots"), "RATE_TOKENS_PER_DAY"},
		"BadEmulatorHost":          {[]string{"GOOGLE_CLOUD_PROJECT", "demo-p", "FIRESTORE_EMULATOR_HOST", "nohost", "FIREBASE_AUTH_EMULATOR_HOST", "h:2"}, "host:port"},
		"TinyBodyCap":              {append(local, "MAX_BODY_BYTES", "10"), "MAX_BODY_BYTES"},
		"NoWordVectors":            {append(local, "WORD_VECTORS", "/no/such/vectors.json"), "WORD_VECTORS"},
		"ZeroModelTimeout":         {append(local, "MODEL_TIMEOUT_SECONDS", "0"), "MODEL_TIMEOUT_SECONDS"},
		"MemoryNeedsNoHost":        {[]string{"GOOGLE_CLOUD_PROJECT", "demo-p", "STORAGE_BACKEND", "memory", "FIREBASE_AUTH_EMULATOR_HOST", "h:2"}, ""},
		"InProcessNoHost":          {[]string{"GOOGLE_CLOUD_PROJECT", "demo-p", "STORAGE_BACKEND", "inprocess", "FIREBASE_AUTH_EMULATOR_HOST", "h:2"}, ""},
		"OnCloudNeedsNoEmu":        {[]string{"GOOGLE_CLOUD_PROJECT", "p", "K_SERVICE", "api", "ID_SECRET", strings.Repeat("s", 32)}, ""},
		"OnCloudNeedsSecret":       {[]string{"GOOGLE_CLOUD_PROJECT", "p", "K_SERVICE", "api"}, "ID_SECRET is not set"},
		"RealFirestoreNeedsSecret": {[]string{"GOOGLE_CLOUD_PROJECT", "p", "GOOGLE_APPLICATION_CREDENTIALS", "/k.json"}, "ID_SECRET is not set: the store is a real Firestore"},
		"RealFirestoreWithSecret":  {[]string{"GOOGLE_CLOUD_PROJECT", "p", "GOOGLE_APPLICATION_CREDENTIALS", "/k.json", "ID_SECRET", strings.Repeat("s", 32)}, ""},
		"InProcessNeedsNoSecret":   {[]string{"GOOGLE_CLOUD_PROJECT", "p", "GOOGLE_APPLICATION_CREDENTIALS", "/k.json", "STORAGE_BACKEND", "inprocess"}, ""},
		"ShortSecret":              {append(local, "ID_SECRET", "short"), "ID_SECRET must have at least 32"},
		"ZeroRetention":            {append(local, "RETENTION_DELETED_DAYS", "0"), "RETENTION_"},
		"BadStrategy":              {append(local, "CONTEXT_STRATEGY", "everything"), "CONTEXT_STRATEGY"},
		"BadFormerStrategy":        {append(local, "MEMORY_STRATEGY", "everything"), "MEMORY_STRATEGY"},
		"AuthEmuOnCloudRun":        {append(local, "K_SERVICE", "api"), "FIREBASE_AUTH_EMULATOR_HOST is set while K_SERVICE"},
		"FirestoreEmuOnGCF":        {[]string{"GOOGLE_CLOUD_PROJECT", "p", "FUNCTION_TARGET", "api", "FIRESTORE_EMULATOR_HOST", "h:1"}, "FIRESTORE_EMULATOR_HOST is set while FUNCTION_TARGET"},
		"AuthEmuRealProject":       {[]string{"GOOGLE_CLOUD_PROJECT", "my-prod", "STORAGE_BACKEND", "inprocess", "FIREBASE_AUTH_EMULATOR_HOST", "h:2"}, `GOOGLE_CLOUD_PROJECT="my-prod"`},
		"CredentialsWithEmu":       {append(local, "GOOGLE_APPLICATION_CREDENTIALS", "/k.json"), ""},
		"Models":                   {append(local, "CHAT_MODELS", "gpt-4.1:1047576, tiny:8000"), ""},
		"ModelBadWindow":           {append(local, "CHAT_MODELS", "tiny:lots"), "CHAT_MODELS"},
		"ModelTinyWindow":          {append(local, "CHAT_MODELS", "tiny:10"), "CHAT_MODELS"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ConfigFromEnv(env(tc.env...))
			if tc.want == "" {
				if err != nil {
					t.Errorf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}

// TestExporters: traces and metrics are off by default locally and go to
// Google Cloud's services there; stdout works anywhere; anything else is
// refused at start-up.
func TestExporters(t *testing.T) {
	for _, tc := range []struct {
		env             map[string]string
		traces, metrics string
		bad             bool
	}{
		{map[string]string{}, TracesOff, MetricsOff, false},
		{map[string]string{"K_SERVICE": "api", "FIREBASE_AUTH_EMULATOR_HOST": "", "ID_SECRET": strings.Repeat("s", 32)}, TracesCloudTrace, MetricsCloudMonitoring, false},
		{map[string]string{"TRACE_EXPORTER": "stdout", "METRICS_EXPORTER": "stdout"}, TracesStdout, MetricsStdout, false},
		{map[string]string{"METRICS_EXPORTER": "cloudtrace"}, "", "", true},
		{map[string]string{"TRACE_EXPORTER": "cloudmonitoring"}, "", "", true},
	} {
		base := map[string]string{"STORAGE_BACKEND": "inprocess", "GOOGLE_CLOUD_PROJECT": "demo-p", "FIREBASE_AUTH_EMULATOR_HOST": "127.0.0.1:9099"}
		c, err := ConfigFromEnv(func(k string) string {
			if v, ok := tc.env[k]; ok {
				return v
			}
			return base[k]
		})
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), "_EXPORTER must be off, stdout or ") {
				t.Errorf("%v: %v", tc.env, err)
			}
			continue
		}
		if err != nil || c.TraceExporter != tc.traces || c.MetricsExporter != tc.metrics {
			t.Errorf("%v: traces %q, metrics %q, %v", tc.env, c.TraceExporter, c.MetricsExporter, err)
		}
	}
}
