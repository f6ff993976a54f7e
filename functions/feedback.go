package functions

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatmemory/backend/history"
)

// feedbackBody is what PUT …/feedback takes.
type feedbackBody struct {
	Rating  history.Rating `json:"rating"`
	Comment string         `json:"comment"`
}

// setFeedback answers PUT /sessions/{id}/messages/{messageId}/feedback:
// the caller rates one of their replies ("up" or "down", with an optional
// comment); the same rating again changes nothing.
func (a *App) setFeedback(w http.ResponseWriter, r *http.Request) {
	var b feedbackBody
	if err := a.decode(r, &b); err != nil {
		a.writeError(w, r, err)
		return
	}
	a.feedback(w, r, &history.Feedback{Rating: b.Rating, Comment: b.Comment})
}

// deleteFeedback answers DELETE …/feedback: the rating is withdrawn.
func (a *App) deleteFeedback(w http.ResponseWriter, r *http.Request) {
	a.feedback(w, r, nil)
}

func (a *App) feedback(w http.ResponseWriter, r *http.Request, fb *history.Feedback) {
	m, err := a.History.SetFeedback(r.Context(), UserID(r.Context()), r.PathValue("id"), r.PathValue("messageId"), fb)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	// An event a team can chart: the rating, never the comment's text.
	rating := "withdrawn"
	if m.Feedback != nil {
		rating = string(m.Feedback.Rating)
	}
	a.Metrics.rating(r.Context(), rating)
	trace.SpanFromContext(r.Context()).AddEvent("chat.feedback", trace.WithAttributes(
		attribute.String("feedback.rating", rating), attribute.Bool("feedback.comment", m.Feedback != nil && m.Feedback.Comment != "")))
	if fb == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"messageId": m.ID, "feedback": m.Feedback})
}
