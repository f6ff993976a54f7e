package bench

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
)

// The conversation fixture: long multi-session chats of one user each,
// generated deterministically from the templates in convtemplates.go.
// A conversation has convSessions sessions of convExchanges exchanges;
// convPeople people of the user's life (named from the part's names, each
// the user's sister, colleague, neighbour…) each have one event told
// (a move, a new job, a race…) and two traits (a pet, an allergy, a
// band…), and the user tells six facts of their own; every other exchange
// is everyday chatter that names the same people and touches the same
// topics (gifts, pets, allergies, trips), at random places. Questions ask
// what was said, in four kinds:
//
//   - single: one fact, the person named ("what is Priya allergic to?");
//   - temporal: when something happened ("when did Priya move to Porto?");
//   - multi-hop: a trait of a person named by their event ("what is the
//     sister who moved to Porto allergic to?"): two exchanges are its
//     evidence, either found counts (as in public long-conversation
//     benchmarks: the evidence among the first k);
//   - paraphrase: a fact asked in other words ("which ingredient must
//     stay off Priya's plate?").
//
// The dev part is built from devConv, the held-out part from heldOutConv:
// other templates, names and values; the held-out part is only measured.
// So is the fresh held-out part, from freshConv: written when the
// held-out part had been looked at five times (docs/search.md).

// Sizes of a part: conversations (as many in both: a kind's 192 questions
// tell a fusion from its better leg, where the held-out part's 64 of
// before left one or two questions between them) of sessions of
// exchanges.
const (
	devConversations  = 12
	convConversations = 12
	convSessions      = 20
	convExchanges     = 25
	convPeople        = 8
)

// Kinds of question of the conversation fixture.
const (
	kindSingle     = "single"
	kindTemporal   = "temporal"
	kindMultiHop   = "multi-hop"
	kindParaphrase = "paraphrase"
)

var convKinds = []string{kindSingle, kindTemporal, kindMultiHop, kindParaphrase}

// conversation is one user's sessions.
type conversation struct {
	user     string
	sessions []fixtureSession
}

// convQuestion is a question about a conversation and its evidence: the
// exchanges (session, place) that answer it.
type convQuestion struct {
	kind, query string
	conv        int
	evidence    [][2]int
}

// convFact is a fact's exchange, with its questions (their evidence this
// exchange and, for a multi-hop one, also) the exchange of hop.
type convFact struct {
	exchange [2]string
	asks     []convAsk
}

type convAsk struct {
	kind, query string
	hop         int // the index of the other fact of a multi-hop question; -1 if none
}

// buildConversations builds n conversations from t; the same seed builds
// the same conversations.
func buildConversations(t convTemplates, n int, seed uint64) ([]conversation, []convQuestion) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var convs []conversation
	var qs []convQuestion
	for c := range n {
		facts, cast := convFacts(r, t)
		conv, places := placeFacts(r, t, facts, cast)
		conv.user = fmt.Sprintf("user%d", c+1)
		for i, f := range facts {
			for _, a := range f.asks {
				q := convQuestion{kind: a.kind, query: a.query, conv: c, evidence: [][2]int{places[i]}}
				if a.hop >= 0 {
					q.evidence = append(q.evidence, places[a.hop])
				}
				qs = append(qs, q)
			}
		}
		convs = append(convs, conv)
	}
	return convs, qs
}

// person is someone in the user's life.
type person struct{ name, rel string }

// convFacts draws one conversation's facts: for each of convPeople people
// an event and two traits, then the user's own facts.
func convFacts(r *rand.Rand, t convTemplates) ([]convFact, []person) {
	names := slices.Clone(t.names)
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	var facts []convFact
	var cast []person
	for _, name := range names[:convPeople] {
		p := person{name, pickOne(r, t.values["rel"])}
		cast = append(cast, p)
		ev := t.events[r.IntN(len(t.events))]
		fill := slotsFor(r, t.values, p)
		event := len(facts)
		facts = append(facts, convFact{exchange: [2]string{fill(ev.user), fill(ev.reply)},
			asks: []convAsk{{kindTemporal, fill(ev.when), -1}}})
		desc := fill(ev.desc)
		for i, k := range r.Perm(len(t.traits))[:2] {
			tr, fill := t.traits[k], slotsFor(r, t.values, p)
			asks := []convAsk{{kindSingle, fill(who(tr.ask, p.name)), -1}, {kindParaphrase, fill(tr.para), -1}}
			if i == 0 {
				asks = append(asks, convAsk{kindMultiHop, fill(who(tr.ask, desc)), event})
			}
			facts = append(facts, convFact{exchange: [2]string{fill(tr.user), fill(tr.reply)}, asks: asks})
		}
	}
	for _, o := range t.own {
		fill := slotsFor(r, t.values, person{})
		asks := []convAsk{{kindSingle, fill(o.ask), -1}, {kindParaphrase, fill(o.para), -1}}
		if o.when != "" {
			asks = append(asks, convAsk{kindTemporal, fill(o.when), -1})
		}
		facts = append(facts, convFact{exchange: [2]string{fill(o.user), fill(o.reply)}, asks: asks})
	}
	return facts, cast
}

// placeFacts puts each fact at its own place drawn at random (never a
// session's first exchange), and chatter about the cast everywhere else;
// it returns the conversation and each fact's place.
func placeFacts(r *rand.Rand, t convTemplates, facts []convFact, cast []person) (conversation, [][2]int) {
	places := make([][2]int, len(facts))
	taken := map[[2]int]bool{}
	for i := range facts {
		for {
			pl := [2]int{r.IntN(convSessions), 1 + r.IntN(convExchanges-1)}
			if !taken[pl] {
				taken[pl], places[i] = true, pl
				break
			}
		}
	}
	at := map[[2]int]int{}
	for i, pl := range places {
		at[pl] = i
	}
	var conv conversation
	for s := range convSessions {
		fs := fixtureSession{title: fmt.Sprintf("Chat %d", s+1)}
		for x := range convExchanges {
			if f, ok := at[[2]int{s, x}]; ok {
				fs.exchanges = append(fs.exchanges, facts[f].exchange)
				continue
			}
			c, fill := t.chatter[r.IntN(len(t.chatter))], slotsFor(r, t.values, cast[r.IntN(len(cast))])
			fs.exchanges = append(fs.exchanges, [2]string{fill(c[0]), fill(c[1])})
		}
		conv.sessions = append(conv.sessions, fs)
	}
	return conv, places
}

// who puts the person named as ask's {who}.
func who(ask, name string) string { return strings.ReplaceAll(ask, "{who}", name) }

// slotsFor returns a function that fills a template's slots: {name} and
// {rel} with p's, every other slot with one value drawn for the fact.
func slotsFor(r *rand.Rand, values map[string][]string, p person) func(string) string {
	chosen := map[string]string{}
	for _, slot := range slices.Sorted(maps.Keys(values)) { // in order: the same seed, the same fixture
		chosen[slot] = pickOne(r, values[slot])
	}
	if p.name != "" {
		chosen["name"], chosen["rel"] = p.name, p.rel
	}
	return func(t string) string {
		for _, slot := range slices.Sorted(maps.Keys(chosen)) {
			t = strings.ReplaceAll(t, "{"+slot+"}", chosen[slot])
		}
		return t
	}
}

// The parts' seeds.
const devSeed, heldOutSeed, freshSeed = 11, 12, 13

// partFresh is the fresh held-out part's name: templates written after
// the held-out part had been looked at five times (convfresh.go).
const partFresh = "fresh held-out"

func pickOne(r *rand.Rand, xs []string) string { return xs[r.IntN(len(xs))] }
