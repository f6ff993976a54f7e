package longterm

import "time"

// BuildBlock renders the memory block as a turn sends it: the profile
// first, then live facts by effective confidence on now, cut so that it
// never exceeds the block's cap (for the tests outside the package).
func BuildBlock(u *User, facts []Fact, now time.Time, s Settings, tok TokenCounter) (string, int) {
	text, n, _, _ := buildBlock(u, byEffective(facts, now, s.DecayPerWeek), s, tok)
	return text, n
}
