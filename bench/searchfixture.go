package bench

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
)

// The search fixture: a user's sessions of everyday conversation in which
// some exchanges state a fact, and questions that look for them, labeled
// with the exchange that answers. The questions were written with the
// facts, before any retrieval was run on them, in four kinds:
//
//   - word: the question repeats a rare word of the answer (a code, a
//     made-up name) among common ones;
//   - entity: it names the people and places of the answer, in other words;
//   - paraphrase: it shares (almost) no word with the answer, only meaning;
//   - temporal: it asks when, naming what happened.
//
// Two parts are built from different templates and different slot values:
// dev, which any change may be tried on, and held-out, which is only
// measured (its templates were written at the same time, never tuned on).

// fact is an exchange that states something, with the questions that look
// for it, by kind. Slots in braces are filled from the part's values.
type fact struct {
	q, a    string
	queries map[string]string // kind → question
}

// part is one part of the fixture: its facts, its filler exchanges, and the
// values its slots take.
type part struct {
	facts   []fact
	fillers [][2]string
	values  map[string][]string
}

var devPart = part{
	facts: []fact{
		{"What's the wifi password at the cabin?", "The cabin router password is {code}, printed under the shelf.",
			map[string]string{"word": "cabin wifi {code}", "paraphrase": "how do I get online at our mountain hut?"}},
		{"Remind me what {name} is allergic to.", "{name} is allergic to peanuts and shellfish.",
			map[string]string{"entity": "what can't {name} eat?", "paraphrase": "which foods give our friend a reaction?"}},
		{"Where did we book for the anniversary dinner?", "You booked {restaurant} for eight o'clock on Friday.",
			map[string]string{"word": "{restaurant} booking", "paraphrase": "which place is our celebration meal at?"}},
		{"When is {name}'s flight to {city}?", "{name} flies to {city} on {date} at noon.",
			map[string]string{"temporal": "when does {name} leave for {city}?", "entity": "{name} trip to {city}"}},
		{"What did the mechanic say about the car?", "The mechanic said the {part} needs replacing before winter.",
			map[string]string{"word": "{part} replacement", "paraphrase": "what repair does the vehicle need soon?"}},
		{"Which book did {name} recommend?", "{name} recommended {book}, a novel about lighthouse keepers.",
			map[string]string{"entity": "{name}'s book recommendation", "word": "{book}"}},
		{"What is the project codename for the new app?", "The new app is codenamed {codename} until launch.",
			map[string]string{"word": "{codename} app", "paraphrase": "what do we secretly call the product before release?"}},
		{"When did I start the sourdough starter?", "You started the sourdough starter on {date}.",
			map[string]string{"temporal": "when did the sourdough starter begin?", "paraphrase": "how old is my bread yeast culture?"}},
		{"Which hotel are we staying at in {city}?", "You are staying at the {hotel} near the harbour in {city}.",
			map[string]string{"entity": "hotel in {city}", "word": "{hotel} harbour"}},
		{"What's my locker number at the gym?", "Your gym locker is number {number}, top row.",
			map[string]string{"word": "locker {number}", "paraphrase": "where do I keep my things at the fitness club?"}},
		{"Who is the landlord's contact at the agency?", "Your landlord's agent is {name} at {agency}.",
			map[string]string{"entity": "who handles the flat at {agency}?", "word": "{agency}"}},
		{"When is the dentist appointment?", "The dentist appointment is on {date} at 9:30 with Dr. {surname}.",
			map[string]string{"temporal": "when do I see the dentist?", "entity": "Dr. {surname} appointment"}},
		{"What did {name} name the new puppy?", "{name} named the puppy {pet}, after a jazz singer.",
			map[string]string{"entity": "{name}'s puppy name", "word": "{pet}"}},
		{"When is the quarterly tax payment due?", "The next quarterly tax payment is due on {date}.",
			map[string]string{"temporal": "when must I pay the quarterly tax?", "paraphrase": "deadline for the government installment?"}},
		{"Which school did {name} choose for their son?", "{name} chose {school} for their son, close to the park.",
			map[string]string{"entity": "{name} son school", "word": "{school}"}},
		{"What's the door code for the office?", "The office door code is {number}{number2}, changed monthly.",
			map[string]string{"word": "office door code", "paraphrase": "how do I get into the workplace building?"}},
		{"Where did {name} move to?", "{name} moved to {city} last spring for a teaching job.",
			map[string]string{"entity": "{name} moved {city}", "temporal": "when did {name} relocate?"}},
		{"What's the tracking number of the parcel?", "The parcel's tracking number is {tracking}.",
			map[string]string{"word": "{tracking}", "paraphrase": "how can I follow the package delivery?"}},
	},
	fillers: [][2]string{
		{"Can you suggest something quick for dinner tonight?", "A vegetable stir fry with rice takes about twenty minutes."},
		{"How do I keep basil alive on the windowsill?", "Water it when the soil is dry and pinch the tops often."},
		{"What's a good stretch after running?", "Try a standing quad stretch and a calf stretch against a wall."},
		{"Any tips for sleeping better?", "Keep a regular bedtime and avoid screens for an hour before."},
		{"How long should I boil an egg?", "About seven minutes for a jammy yolk, ten for hard boiled."},
		{"What should I pack for a weekend trip?", "Layers, a rain jacket, chargers and comfortable shoes."},
		{"How do I clean a cast iron pan?", "Rinse with hot water, scrub, dry on the stove and oil lightly."},
		{"Can you help me plan my week?", "List your fixed appointments first, then block time for focus work."},
		{"What's an easy houseplant?", "A snake plant or pothos tolerates low light and missed waterings."},
		{"How do I write a polite reminder email?", "Keep it short, restate the request and suggest a date."},
		{"What's a good board game for four people?", "Ticket to Ride is easy to learn and plays in about an hour."},
		{"How can I save money on groceries?", "Plan meals ahead, buy seasonal produce and use a list."},
	},
	values: map[string][]string{
		"code":       {"TANGERINE-42", "MOSSBERRY-7", "QUILLPOND-19", "BRASSKITE-3", "OWLFERN-88"},
		"name":       {"Priya", "Marcus", "Ingrid", "Tomasz", "Aiko", "Dele"},
		"restaurant": {"Kaspersens Bistro", "Villa Ombra", "Saltkjeller", "The Copper Hen"},
		"city":       {"Lisbon", "Bergen", "Kraków", "Ghent", "Porto"},
		"date":       {"March 3rd", "June 14th", "September 9th", "November 21st", "January 30th"},
		"part":       {"timing belt", "alternator", "brake caliper", "water pump"},
		"book":       {"The Salt Lantern", "Glasswater Keep", "North of Marrow"},
		"codename":   {"Bluefinch", "Driftwood", "Kestrel Nine", "Ambergate"},
		"hotel":      {"Hotel Sjøhuset", "Casa Lume", "Grand Veerman"},
		"number":     {"117", "342", "58", "209"},
		"agency":     {"Nordhus Lettings", "Brightkey Homes", "Linden & Roe"},
		"surname":    {"Okonkwo", "Haraldsen", "Villanueva", "Petrakis"},
		"pet":        {"Ellafitz", "Bessiemae", "Nina Blue"},
		"school":     {"Eastbrook Academy", "Skovly Skole", "St. Brigid's"},
		"number2":    {"#", "*"},
		"tracking":   {"JD0142778NO", "LX-88231-PQ", "UPS1Z77R4"},
	},
}

var heldOutPart = part{
	facts: []fact{
		{"Do you remember the name of the vet clinic?", "Your cat goes to {clinic} on Birch Lane.",
			map[string]string{"word": "{clinic}", "paraphrase": "where do we take the kitten for checkups?"}},
		{"What time does {name}'s choir rehearse?", "{name}'s choir rehearses on Thursdays at seven in {venue}.",
			map[string]string{"entity": "{name} choir {venue}", "temporal": "which evening does {name} sing?"}},
		{"What serial number did the warranty form ask for?", "The serial number on the dishwasher is {serial}.",
			map[string]string{"word": "{serial}", "paraphrase": "which identifier does the kitchen appliance have?"}},
		{"When does the lease end?", "The lease ends on {date}; notice is due two months before.",
			map[string]string{"temporal": "when is the rental contract over?", "word": "lease end notice"}},
		{"Who did {name} say would cater the wedding?", "{name} said {caterer} will cater the wedding.",
			map[string]string{"entity": "{caterer} wedding", "paraphrase": "who is doing the food for the marriage party?"}},
		{"Which trail did we hike in {region}?", "You hiked the {trail} loop in {region}, about fourteen kilometres.",
			map[string]string{"entity": "hike in {region}", "word": "{trail}"}},
		{"What was the plumber's quote?", "The plumber, {name}, quoted {amount} for the new boiler.",
			map[string]string{"word": "{amount} boiler", "paraphrase": "how much will heating the water cost to fix?"}},
		{"When did the kids start swimming lessons?", "The kids started swimming lessons at {pool} on {date}.",
			map[string]string{"temporal": "since when are the children learning to swim?", "entity": "{pool} lessons"}},
		{"What's the name of the podcast {name} hosts?", "{name} hosts a podcast called {podcast}.",
			map[string]string{"word": "{podcast}", "entity": "{name}'s show"}},
		{"Which insurance policy covers the bike?", "The bike is covered by policy {policy} with {insurer}.",
			map[string]string{"word": "policy {policy}", "entity": "{insurer} bicycle"}},
		{"What colour did we paint the hallway?", "You painted the hallway {paint}, two coats.",
			map[string]string{"word": "{paint} hallway", "paraphrase": "which shade are the entrance walls?"}},
		{"When is {name}'s birthday party?", "{name}'s birthday party is on {date} at {venue}.",
			map[string]string{"temporal": "when do we celebrate {name}?", "entity": "{name} party {venue}"}},
		{"What's the router's admin login?", "The router admin user is {adminuser}, password on the box.",
			map[string]string{"word": "{adminuser}", "paraphrase": "how do I configure the internet box?"}},
		{"Which language course did {name} sign up for?", "{name} signed up for {course} on Tuesday evenings.",
			map[string]string{"entity": "{name} course", "word": "{course}"}},
		{"When does the library book need returning?", "Return the library book by {date} or pay a fine.",
			map[string]string{"temporal": "library book due date", "paraphrase": "when must the borrowed novel go back?"}},
		{"What's the name of the band at the festival?", "The headliner at the festival is {band}.",
			map[string]string{"word": "{band}", "paraphrase": "who plays last at the summer music event?"}},
	},
	fillers: [][2]string{
		{"What's a quick breakfast with oats?", "Overnight oats with yogurt and berries, ready in the morning."},
		{"How do I fold a fitted sheet?", "Tuck the corners into each other, then fold into a rectangle."},
		{"Any idea for a rainy afternoon?", "Bake cookies, start a puzzle or visit a small museum."},
		{"How often should I water tomatoes?", "Deeply two or three times a week, more in a heatwave."},
		{"What's a good warm-up before lifting?", "Five minutes of light cardio and a few lighter sets."},
		{"How do I make my coffee less bitter?", "Use a coarser grind and water just off the boil."},
		{"What should I read next?", "Pick something short after a long book, maybe essays."},
		{"How can I focus at home?", "Set a timer for focused blocks and keep the phone in another room."},
		{"What's good to bring to a potluck?", "A big salad or a tray of roasted vegetables travels well."},
		{"How do I remove a wine stain?", "Blot it, add salt or baking soda, then wash in cold water."},
	},
	values: map[string][]string{
		"clinic":    {"Paws & Whiskers Clinic", "Ferncliff Veterinary", "Tallow Street Vets"},
		"name":      {"Lucía", "Bjørn", "Hannah", "Kofi", "Mirela"},
		"venue":     {"St. Olav's hall", "the Lindgren school", "Harbour chapel"},
		"serial":    {"DW-5520-KX", "SN77Q-310", "BX-90-MELT"},
		"date":      {"April 2nd", "July 19th", "October 5th", "December 12th"},
		"caterer":   {"Fennel & Fig", "Nordlys Catering", "Olive Branch Kitchen"},
		"trail":     {"Granite Spur", "Otter Falls", "Heather Ridge"},
		"region":    {"Jotunheimen", "the Dolomites", "Snowdonia"},
		"amount":    {"2,450 euros", "1,980 pounds", "31,000 kroner"},
		"pool":      {"Vestbad", "Riverside Leisure Centre", "Aquarena"},
		"podcast":   {"Slow Kettle", "Maps & Margins", "The Quiet Orbit"},
		"policy":    {"HX-44817", "RB-20931", "TQ-55102"},
		"insurer":   {"Fjordsikring", "Harbourline Insurance", "Alder Mutual"},
		"paint":     {"Sage Whisper", "Oyster Grey", "Nordic Clay"},
		"adminuser": {"fjordadmin", "netkeeper22", "hearthroot"},
		"course":    {"Italian A2", "Conversational Japanese", "Dutch for beginners"},
		"band":      {"The Velvet Anchors", "Moss & Moth", "Kitewire"},
	},
}

// labeled is a question of the fixture and the exchange that answers it.
type labeled struct {
	kind, query string
	session     int // index of the session the answer is in
	fact        int // index of the fact in its session
}

// fixtureSession is a session of the fixture: its exchanges, in order.
type fixtureSession struct {
	title     string
	exchanges [][2]string
	facts     []int // indexes into exchanges of the facts, in order
}

// buildFixture fills p's templates into sessions sessions of exchanges
// exchanges each: every fact once, with its own slot values, in a session
// and at a place drawn at random (never first), the rest fillers; it
// returns them with the labeled questions. The same seed builds the same
// fixture.
func buildFixture(p part, sessions, exchanges int, seed uint64) ([]fixtureSession, []labeled) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]fixtureSession, sessions)
	type place struct{ session, at int }
	taken := map[place]int{} // → fact
	for f := range p.facts {
		for {
			pl := place{r.IntN(sessions), 1 + r.IntN(exchanges-1)}
			if _, ok := taken[pl]; !ok {
				taken[pl] = f
				break
			}
		}
	}
	var qs []labeled
	for i := range out {
		out[i].title = fmt.Sprintf("Chat %d", i+1)
		for j := range exchanges {
			f, ok := taken[place{i, j}]
			if !ok {
				out[i].exchanges = append(out[i].exchanges, p.fillers[r.IntN(len(p.fillers))])
				continue
			}
			fill := filler(r, p.values)
			out[i].facts = append(out[i].facts, j)
			out[i].exchanges = append(out[i].exchanges, [2]string{fill(p.facts[f].q), fill(p.facts[f].a)})
			for _, kind := range []string{"word", "entity", "paraphrase", "temporal"} {
				if q, ok := p.facts[f].queries[kind]; ok {
					qs = append(qs, labeled{kind: kind, query: fill(q), session: i, fact: j})
				}
			}
		}
	}
	return out, qs
}

// filler returns a function that fills a template's slots, each slot with
// one value for the whole fact.
func filler(r *rand.Rand, values map[string][]string) func(string) string {
	chosen := map[string]string{}
	for _, slot := range slices.Sorted(maps.Keys(values)) { // in order: the same seed, the same fixture
		chosen[slot] = values[slot][r.IntN(len(values[slot]))]
	}
	return func(t string) string {
		for slot, v := range chosen {
			t = strings.ReplaceAll(t, "{"+slot+"}", v)
		}
		return t
	}
}
