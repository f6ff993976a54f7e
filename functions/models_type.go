package functions

// ChatModel is a model sessions may choose, with its context window in
// tokens.
type ChatModel struct {
	Name          string `json:"name"`
	ContextWindow int    `json:"contextWindow"`
}
