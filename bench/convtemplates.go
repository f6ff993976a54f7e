package bench

// The conversation fixture's templates: what a user tells an assistant
// about the people in their life and about themselves, over months of
// sessions, among everyday chatter that names the same people and touches
// the same topics. Each part (dev, held-out) has its own templates, names
// and values, written before any retrieval ran on them; see convfixture.go
// for how they are put together and asked about.

// convTemplates are one part's templates and values.
type convTemplates struct {
	// events say something happened to {name} (the user's {rel}): each
	// is asked about by its temporal question, and names its person for a
	// multi-hop question (desc).
	events []convEvent
	// traits say something lasting of {name}: asked by a single-fact
	// question and a paraphrase, and through an event's desc (multi-hop).
	traits []convTrait
	// own are the user's own facts.
	own     []convOwn
	chatter [][2]string // everyday exchanges; {name}, {rel} and {city} are filled
	names   []string
	values  map[string][]string
}

// convEvent is an event in someone's life, told in one exchange.
type convEvent struct {
	user, reply string
	when        string // the temporal question
	desc        string // the person named by the event ("the {rel} who …")
}

// convTrait is something lasting of someone, told in one exchange.
// ask names the person as {who}: by name (single) or by an event (multi-hop).
type convTrait struct {
	user, reply string
	ask, para   string
}

// convOwn is a fact of the user's own; when is "" if it has no temporal
// question.
type convOwn struct {
	user, reply     string
	ask, para, when string
}

var devConv = convTemplates{
	events: []convEvent{
		{"Big news: my {rel} {name} is moving to {city} next month.", "That's a big change! Will {name} rent or buy in {city}?",
			"when is {name} moving to {city}?", "the {rel} who is moving to {city}"},
		{"{name} started a new job as a {job} this week, first day was chaos.", "First weeks are always chaotic; being a {job} suits {name} though.",
			"when did {name} start working as a {job}?", "the {rel} who became a {job}"},
		{"{name} ran the {race} half marathon on Sunday, under two hours!", "That's a great time for the {race} course, congratulations to {name}.",
			"when did {name} run the {race} half marathon?", "the {rel} who ran the {race} half marathon"},
		{"{name} got engaged last weekend during a trip to {place}.", "How romantic, {place} is a beautiful spot for a proposal.",
			"when did {name} get engaged?", "the {rel} who got engaged in {place}"},
	},
	traits: []convTrait{
		{"{name} adopted a {species} and called it {pet}.", "{pet} is a lovely name for a {species}.",
			"what did {who} call the new {species}?", "what is the name of {name}'s new animal?"},
		{"Note for the dinner: {name} is allergic to {allergen}.", "Noted, nothing with {allergen} for {name}.",
			"what is {who} allergic to?", "which ingredient must stay off {name}'s plate?"},
		{"{name} keeps talking about {band}, seen them live five times now.", "A real fan! {band} tour every year, so there will be a sixth.",
			"which band has {who} seen live five times?", "what music group is {name} obsessed with?"},
		{"For {name}'s birthday I want to get a {gift}.", "A {gift} is a thoughtful present, {name} will like it.",
			"what gift am I planning for {who}?", "what present will I buy {name}?"},
		{"{name} is training hard for a {sport} tournament in the spring.", "Good luck to {name}, {sport} tournaments are intense.",
			"which tournament is {who} training for?", "what competition is {name} getting ready for?"},
		{"{name} works night shifts at the {workplace} now.", "Night shifts at a {workplace} are tiring, {name} needs good sleep.",
			"where does {who} work night shifts?", "what is {name}'s job after dark?"},
	},
	own: []convOwn{
		{"I finally booked my flight to {city2}, it leaves early on a Friday.", "Great, remember to check in online the day before your {city2} trip.",
			"which city did I book a flight to?", "where am I travelling by plane?", "when did I book the flight to {city2}?"},
		{"The doctor put me on {medication} for my blood pressure today.", "Take {medication} at the same time each day and note any side effects.",
			"what medication am I taking for blood pressure?", "which pills did my physician prescribe?", "when did I start taking {medication}?"},
		{"My new car's registration is {plate}.", "Saved: your car's registration is {plate}.",
			"what is my car's registration number?", "what does my vehicle's license plate say?", ""},
		{"I signed up for a {course} class on Wednesday evenings.", "Wednesday evenings are a good slot for {course}, enjoy it.",
			"which class did I sign up for?", "what am I studying midweek after work?", "when did I sign up for the {course} class?"},
		{"We chose {paint} for the living room walls.", "{paint} will make the living room feel calm.",
			"what paint did we pick for the living room?", "which colour is the lounge going to be?", ""},
		{"The landlord is raising the rent to {rent} a month from spring.", "That is steep; check whether the lease allows a raise to {rent}.",
			"how much will the rent be from spring?", "what will I pay to live in my flat?", "when did the landlord say the rent goes up?"},
		{"My membership at {gym} renews on the first of {month}.", "I'll remind you before the {gym} membership renews in {month}.",
			"which gym am I a member of?", "where do I go to work out?", "when does my {gym} membership renew?"},
		{"I lent my {item} to the people upstairs last week.", "Make sure the {item} comes back before you need it.",
			"what did I lend to the people upstairs?", "which of my tools is at the upstairs flat?", "when did I lend out the {item}?"},
	},
	chatter: [][2]string{
		{"Had coffee with {name} this morning, we mostly talked about work.", "Sounds nice. Is {name} still busy with that project?"},
		{"{name} called about the weekend plans again.", "Did you two settle on anything for the weekend?"},
		{"Any ideas for a small gift for my {rel}? Nothing expensive.", "A nice notebook or a plant is usually a safe present."},
		{"I'm thinking of taking {name} to a concert.", "Check which bands are playing nearby next month."},
		{"{name} says the weather in {city} has been awful.", "Late autumn storms are common there."},
		{"What should I cook when {name} comes over?", "A simple pasta with a salad works for most guests; ask about allergies first."},
		{"My {rel} {name} might visit next month.", "Plan one day out and a relaxed dinner at home."},
		{"Remind me to text {name} back tonight.", "Noted: text {name} this evening."},
		{"Do you think I should get a pet?", "A cat suits a small flat; a dog needs daily walks."},
		{"Work was exhausting today.", "Take a walk and have an early night."},
		{"How do I keep my plants alive in winter?", "Water less, give them light and keep them away from radiators."},
		{"{name} recommended a documentary about the ocean.", "Nature documentaries are a good way to unwind."},
		{"Can you help me write a message to {name}?", "Sure, keep it short and friendly. What do you want to say?"},
		{"I need a break from my phone.", "Leave it in another room for an hour after dinner."},
		{"Should I go running tomorrow morning?", "If you slept well, yes; otherwise a walk is fine."},
		{"{name} and I argued about the trip to {city}.", "Talk it through when you are both calm."},
		{"What's a good podcast for a long drive?", "Something with short episodes, like a history or science show."},
		{"I keep forgetting to pay bills on time.", "Set up automatic payments or a monthly reminder."},
		{"{name} wants to start a book club with me.", "A book club is a nice way to see each other every month."},
		{"How do I say no to extra work politely?", "Thank them, explain your current load and offer a later date."},
		{"{name} wants to come along to the gym after work.", "Training together makes it easier to keep going."},
		{"{name} borrowed my umbrella and never gave it back.", "Ask {name} for it kindly next time you meet."},
		{"Should I take up a sport this year?", "Pick one you can play near home, like {sport}."},
	},
	names: []string{"Priya", "Marcus", "Ingrid", "Tomasz", "Aiko", "Dele", "Sofia", "Rafael", "Hanne", "Yusuf", "Clara", "Mateo",
		"Leila", "Oskar", "Nadia", "Emeka", "Greta", "Kenji", "Amara", "Luca"},
	values: map[string][]string{
		"rel":        {"sister", "brother", "cousin", "colleague", "neighbour", "friend", "aunt", "uncle"},
		"city":       {"Lisbon", "Bergen", "Kraków", "Ghent", "Porto", "Tallinn", "Seville", "Utrecht"},
		"city2":      {"Reykjavik", "Marrakesh", "Hanoi", "Montreal", "Valparaíso"},
		"job":        {"paramedic", "carpenter", "librarian", "pharmacist", "translator", "architect"},
		"race":       {"Copenhagen", "Berlin", "Amsterdam", "Vienna", "Dublin"},
		"place":      {"Santorini", "the Lofoten islands", "Lake Bled", "the Amalfi coast", "Kyoto"},
		"species":    {"beagle", "tabby cat", "rabbit", "greyhound", "parrot", "tortoise"},
		"pet":        {"Biscuit", "Juno", "Pickles", "Mochi", "Ziggy", "Pepper", "Waffles"},
		"allergen":   {"peanuts", "shellfish", "sesame", "kiwi", "mustard"},
		"band":       {"Radiohead", "Fleetwood Mac", "Arctic Monkeys", "Khruangbin", "Bon Iver"},
		"gift":       {"leather wallet", "pottery class voucher", "silk scarf", "vinyl record player", "hiking backpack"},
		"medication": {"amlodipine", "lisinopril", "losartan"},
		"plate":      {"KT-4821", "BX 77 RNL", "ZH-309-QP"},
		"course":     {"watercolour", "salsa", "Mandarin", "pottery", "woodworking"},
		"paint":      {"Sage Whisper", "Oyster Grey", "Dusky Teal"},
		"rent":       {"1,450 euros", "1,720 euros", "980 pounds"},
		"sport":      {"badminton", "squash", "table tennis", "volleyball", "fencing"},
		"workplace":  {"bakery", "hospital", "printing plant", "airport", "hotel reception"},
		"gym":        {"Ironworks", "PulseFit", "Harbour Gym"},
		"month":      {"March", "June", "September"},
		"item":       {"power drill", "camping stove", "ladder", "tent"},
	},
}

var heldOutConv = convTemplates{
	events: []convEvent{
		{"{name} just bought an old farmhouse near {city}.", "A farmhouse near {city}! Does it need much renovation?",
			"when did {name} buy the farmhouse?", "the {rel} who bought a farmhouse near {city}"},
		{"My {rel} {name} finally finished the {degree} degree yesterday.", "Congratulations to {name}, a {degree} degree takes real persistence.",
			"when did {name} finish the {degree} degree?", "the {rel} who finished a {degree} degree"},
		{"{name} opened a little {shop} in the old town on Saturday.", "Exciting! An old-town {shop} should get plenty of visitors.",
			"when did {name} open the {shop}?", "the {rel} who opened a {shop}"},
		{"{name} is back from three months of volunteering in {country}.", "Welcome back to {name}; {country} must have been quite an experience.",
			"when did {name} come back from {country}?", "the {rel} who volunteered in {country}"},
	},
	traits: []convTrait{
		{"{name} still drives that old {car} that keeps breaking down.", "An old {car} is charming until the repair bills arrive.",
			"what car does {who} drive?", "which vehicle does {name} own?"},
		{"{name} is learning to play the {instrument} at weekends.", "The {instrument} is a rewarding instrument once the basics click.",
			"which instrument is {who} learning?", "what is {name} practising musically?"},
		{"{name} cooks {dish} every Sunday, it's a family ritual.", "{dish} every Sunday sounds like a lovely tradition.",
			"what dish does {who} cook every Sunday?", "which meal does {name} prepare at the end of each week?"},
		{"{name} supports {team} and never misses a match.", "Loyal! {team} fans are a passionate crowd.",
			"which team does {who} support?", "what club is {name} a fan of?"},
	},
	own: []convOwn{
		{"I lost my passport last week; the replacement's number is {passport}.", "Keep {passport} somewhere safe, and a photo of the page.",
			"what is my new passport number?", "what's the id on my replacement travel document?", "when did I lose my passport?"},
		{"I've started physiotherapy for my {injury}, twice a week.", "Twice a week is a good rhythm for a {injury}; do the home exercises too.",
			"what am I having physiotherapy for?", "which body part is being treated by the therapist?", "when did I start physiotherapy?"},
		{"I switched our electricity supplier to {supplier}.", "{supplier} has good reviews; keep the final meter reading.",
			"which electricity supplier did I switch to?", "who provides power to my home now?", "when did I change the electricity supplier?"},
		{"Our wifi password is now {wifi}.", "Noted: the wifi password is {wifi}.",
			"what is the wifi password?", "how do guests get on the internet at my place?", ""},
		{"I adopted a rescue {species2} called {pet2} today.", "Welcome home, {pet2}! Rescue animals need a few calm weeks.",
			"what is my rescue {species2} called?", "what is the name of the animal I took in from the shelter?", "when did I adopt {pet2}?"},
		{"I'm reading {book} for the book club.", "{book} is a great pick for a discussion.",
			"which book am I reading for the book club?", "what novel is our reading group on?", ""},
	},
	chatter: [][2]string{
		{"{name} dropped by with cake this afternoon.", "That's kind of {name}. What kind of cake?"},
		{"I haven't heard from my {rel} in a while.", "A short message is enough to reconnect."},
		{"{name} asked me to help move some furniture.", "Lift with your legs and take breaks."},
		{"Should I visit {city} in the summer or the autumn?", "Autumn is quieter and cheaper in most places."},
		{"{name} thinks I work too much.", "Maybe take one evening a week fully off."},
		{"What's a good game to play with friends?", "Codenames works with any group size."},
		{"{name} and I are planning a picnic.", "Bring a blanket, fruit and something cold to drink."},
		{"My back hurts after sitting all day.", "Stand up every hour and stretch your shoulders."},
		{"I want to learn something new this year.", "Pick one skill and give it twenty minutes a day."},
		{"{name} sent me photos from {city}.", "Sounds like a good trip."},
		{"How do I make a weekly budget?", "Track a month of spending, then set limits per category."},
		{"Is it too late to plant bulbs?", "Before the ground freezes is usually fine."},
		{"{name} can't decide between two apartments.", "Compare the commute, the light and the rent."},
		{"I'm bored of my usual recipes.", "Try one new cuisine a week, starting with a simple curry."},
		{"How do I get better at remembering names?", "Repeat the name when you meet someone and link it to an image."},
		{"My {rel} {name} is coming for dinner.", "A one-pot dish leaves you time to talk."},
		{"What should I watch tonight?", "A short comedy if you are tired, a documentary if you are curious."},
		{"The neighbours were loud again.", "A friendly word in person often works best."},
		{"{name} lent me a great jacket.", "Return it clean and with a thank-you."},
		{"How do I wake up earlier?", "Move your bedtime fifteen minutes earlier each week."},
	},
	names: []string{"Lucía", "Bjørn", "Hannah", "Kofi", "Mirela", "Anders", "Fatima", "Jonas", "Elif", "Pavel", "Chiara", "Diego",
		"Saoirse", "Tariq", "Wen", "Olga", "Nikolai", "Ayla", "Bruno", "Zara"},
	values: map[string][]string{
		"rel":        {"sister", "brother", "cousin", "colleague", "neighbour", "friend", "aunt", "uncle"},
		"city":       {"Aarhus", "Bologna", "Ljubljana", "Nantes", "Gdańsk", "Salzburg", "Cork", "Tartu"},
		"degree":     {"nursing", "law", "engineering", "history", "marine biology"},
		"shop":       {"bookshop", "bakery", "flower shop", "bike repair shop", "tea room"},
		"country":    {"Peru", "Kenya", "Nepal", "Madagascar", "Vietnam"},
		"car":        {"Volvo 240", "Saab 900", "Fiat Panda", "Land Rover Defender", "Citroën 2CV"},
		"instrument": {"cello", "banjo", "trumpet", "accordion", "harp"},
		"dish":       {"lasagne", "paella", "goulash", "moussaka", "ramen"},
		"team":       {"Celtic", "Ajax", "Benfica", "Napoli", "Galatasaray"},
		"passport":   {"P8841207", "X1290554", "K7730018"},
		"injury":     {"sprained ankle", "frozen shoulder", "torn knee ligament", "tennis elbow"},
		"supplier":   {"Octopus Energy", "Greenfield Power", "Nordic Volt"},
		"wifi":       {"hummingbird-42", "copperkettle77", "lanternfox9"},
		"species2":   {"greyhound", "terrier", "ginger cat", "ferret"},
		"pet2":       {"Nugget", "Clementine", "Bramble", "Tofu"},
		"book":       {"The Overstory", "Piranesi", "Klara and the Sun", "The Remains of the Day"},
	},
}
