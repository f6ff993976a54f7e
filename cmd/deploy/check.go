package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/chatmemory/backend/app"
)

// checkConfig refuses a deployment whose functions would not start or
// could not search: the environment in envFile (ENV_FILE; "" for none) is
// read as the functions will read it, and the length exchanges are
// embedded at must be the dimension of every vector index in indexes
// (firestore.indexes.json), or production's vector queries fail.
func checkConfig(project, envFile, indexes string) error {
	env := map[string]string{}
	if envFile != "" {
		var err error
		if env, err = readEnvFile(envFile); err != nil {
			return err
		}
	}
	lookup := func(k string) string {
		switch k {
		case "K_SERVICE": // as on Cloud Functions
			return "deploy"
		case "ID_SECRET": // from Secret Manager, which the plan creates
			if v := env[k]; v != "" {
				return v
			}
			return strings.Repeat("x", app.MinIDSecret)
		case "GOOGLE_CLOUD_PROJECT":
			if v := env[k]; v != "" {
				return v
			}
			return project
		}
		return env[k]
	}
	cfg, err := app.ConfigFromEnv(lookup)
	if err != nil {
		return fmt.Errorf("the functions' environment (ENV_FILE) would not start them: %w", err)
	}
	if !cfg.Embeddings {
		return nil
	}
	dims, err := vectorDimensions(indexes)
	if err != nil {
		return err
	}
	for _, d := range dims {
		if d != cfg.EmbeddingDimensions {
			return fmt.Errorf("EMBEDDING_DIMENSIONS is %d but %s declares vector indexes of %d dimensions: change one of them, or production's searches fail", cfg.EmbeddingDimensions, indexes, d)
		}
	}
	return nil
}

// readEnvFile reads a functions' environment file as gcloud does: one
// "NAME: value" a line (the value optionally quoted); blank lines and
// comments are skipped.
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ENV_FILE: %w", err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("ENV_FILE %s, line %d: want NAME: value", path, n)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		env[strings.TrimSpace(k)] = v
	}
	return env, sc.Err()
}

// vectorDimensions are the dimensions of the vector indexes declared in
// path.
func vectorDimensions(path string) ([]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cfg struct {
		Indexes []struct {
			Fields []struct {
				VectorConfig *struct {
					Dimension int `json:"dimension"`
				} `json:"vectorConfig"`
			} `json:"fields"`
		} `json:"indexes"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []int
	for _, ix := range cfg.Indexes {
		for _, f := range ix.Fields {
			if f.VectorConfig != nil {
				out = append(out, f.VectorConfig.Dimension)
			}
		}
	}
	return out, nil
}
