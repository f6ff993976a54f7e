package functions

import "github.com/chatmemory/backend/chat"

// ChatModel is a model sessions may choose, with its context size in
// tokens and its price (dollars per million tokens of input, cached
// input and output; CHAT_MODELS's, else its list price, else none).
type ChatModel struct {
	Name        string      `json:"name"`
	ContextSize int         `json:"contextWindow"`
	Price       *chat.Price `json:"price,omitempty"`
}

// priceOf is model's price among models, else its list price.
func priceOf(models []ChatModel, model string) chat.Price {
	for _, m := range models {
		if m.Name == model && m.Price != nil {
			return *m.Price
		}
	}
	return chat.ListPrice(model)
}
