"""A small real-text vault for the chunking benchmark: 40 long notes, each with its answer in a late section.

Each note is a title, an overview written for it, four of the shared
"working notes" sections below (the kind of status, logistics and budget text
real project notes accumulate), and last the section a question asks about.
The question paraphrases that section, so a vector that reads only the
note's first 256 tokens sees the topic but not the answer. Written by hand
for this benchmark; no external data.
"""

from __future__ import annotations

FILLER = [
    ("Status", "We went through the open items again at the end of the week. Most of them are waiting on "
     "someone else: a reply to an email, a signature, or a decision that keeps getting pushed to the next "
     "meeting. I moved the two oldest ones to the top of the list so they are the first thing we look at "
     "next time, and wrote down who promised what so nobody has to remember it."),
    ("Logistics", "The shared folder is now the only place for drafts; the old copies on the laptop were "
     "deleted after checking that nothing newer lived there. Meetings stay on Tuesday mornings unless "
     "somebody is travelling, in which case we move to Wednesday and keep it short. Notes from each meeting "
     "go at the bottom of this page with the date in the heading."),
    ("Budget", "Money is tighter than planned because two invoices arrived at once. We agreed to pay the "
     "larger one first and ask for thirty days on the other, which they accepted without fuss. For the rest "
     "of the quarter every purchase above a small amount needs a second person to agree, and receipts go "
     "into the envelope in the drawer the same day."),
    ("People", "Three people are involved most weeks and a fourth helps when there is a deadline. Everyone "
     "prefers short messages over long calls, so updates go into the group chat with a sentence or two. "
     "When something is blocked for more than a week it gets raised in person rather than left to drift, "
     "which has worked better than the reminders we used to send."),
    ("Timeline", "The original plan had everything done by the end of the season, which was optimistic. "
     "The revised plan splits the work into three rounds with a review after each one, so we can stop or "
     "change direction without throwing much away. The first round is nearly finished; the second starts "
     "once the open items above are settled."),
    ("Risks", "The main risk is that the one person who knows the history of this gets busy elsewhere. "
     "To soften that, decisions and their reasons now get written down here rather than kept in "
     "someone's head. A smaller risk is the weather, which has already cost us two weekends this year and "
     "will probably cost us another."),
    ("Lessons so far", "Starting small paid off: the first attempt was cheap enough that its mistakes did "
     "not hurt. Asking for advice early saved more time than any tool did. Writing things down the same "
     "day, even badly, beat writing them up properly a week later, when half the details were already gone "
     "and nobody agreed on what had been said."),
    ("Next steps", "Before the next meeting: confirm the dates with everyone, collect the missing "
     "paperwork, and tidy this page so that the open questions are at the top. After that the plan is to "
     "go through the list item by item and close whatever can be closed, even if the answer is that we "
     "will not do it after all."),
]

# (title, overview, late heading, late section, question)
NOTES = [
    ("Kitchen renovation", "We are redoing the kitchen this year: new cabinets, a different layout, and finally "
     "fixing the floor that slopes towards the window.", "Worktop decision",
     "After comparing samples for weeks we chose oiled oak for the worktop instead of quartz, because it can "
     "be sanded when it gets scratched and it was half the price.",
     "what material did we pick for the counter surface and why"),
    ("Allotment plot", "Notes on the allotment we took over in spring: soil, beds, what grows and what does not.",
     "Slugs", "The lettuces were eaten by slugs every night until we put copper tape around the raised beds "
     "and started collecting them by torchlight after rain.",
     "how did we stop the pests eating the salad leaves"),
    ("Marathon training", "Plan and log for the autumn marathon: weekly mileage, long runs and how the body "
     "copes.", "Injury",
     "In week nine a sharp pain on the outside of the knee turned out to be iliotibial band syndrome; the "
     "physio prescribed hip strengthening and two weeks of cycling instead of running.",
     "what was wrong with my leg during the race preparation"),
    ("Moving to Lisbon", "Everything about the move to Lisbon: paperwork, flats, schools and the boxes.",
     "Residence permit", "The residence permit appointment at the immigration office was finally given for "
     "the eleventh of March, and we must bring proof of address and six months of bank statements.",
     "when is the appointment for the visa paperwork and what documents are needed"),
    ("Home network", "How the home network is set up: the router, the access points, the cabling in the "
     "walls.", "Dead spot in the bedroom",
     "The bedroom never had signal because the chimney blocks it; a second access point on the landing, "
     "wired back to the switch, fixed it for good.",
     "why was there no wifi upstairs and how was it solved"),
    ("Book club", "Our monthly book club: who hosts, what we read, and the arguments afterwards.",
     "Next year's theme", "For next year everyone voted to read only novels translated from other languages, "
     "starting with a Korean family saga in January.",
     "what kind of books will the reading group choose from next year"),
    ("Grandmother's recipes", "Recipes copied from grandmother's notebook before the pages fade any further.",
     "Plum dumplings", "The secret of her plum dumplings is a spoon of cinnamon sugar inside each plum and "
     "potato dough rested for an hour in the cold.",
     "what is the trick for the fruit dumplings from the old family notebook"),
    ("Car maintenance", "Service history and repairs for the old estate car.", "Inspection failure",
     "It failed the annual inspection on corroded brake lines at the rear; the garage replaced both lines "
     "and it passed on the second attempt a week later.",
     "why did the vehicle not pass its yearly safety check"),
    ("Learning the cello", "Practice notes from the first year of cello lessons.", "Bow hold",
     "My teacher noticed that my thumb was locked straight on the bow; bending it slightly and letting the "
     "fingers hang loose made the sound much less scratchy.",
     "what did the music teacher change about how I hold the stick"),
    ("Wedding planning", "Planning the wedding in the hills: venue, guests, food and music.", "Catering",
     "We booked the catering from the family restaurant in the village; they will serve a lamb stew, a "
     "vegetarian risotto, and honey cake instead of a wedding cake.",
     "what food will be served to the guests at the celebration"),
    ("Beekeeping", "First season with two hives at the bottom of the garden.", "Swarm",
     "In June the stronger hive swarmed into the neighbour's apple tree; we caught the cluster in a "
     "cardboard box at dusk and housed it in a spare hive.",
     "what happened when the colony left and where did they end up"),
    ("Sleep problems", "Tracking the months of bad sleep and what was tried.", "What finally helped",
     "What finally helped was getting up at the same time every day, even at weekends, and no screens in "
     "the hour before bed; after three weeks I slept through most nights.",
     "which change made me stop waking up at night"),
    ("Tax return", "Collecting everything for this year's tax return.", "Home office deduction",
     "The accountant said the home office deduction only applies to the room used exclusively for work, "
     "so we can claim twelve percent of the rent but not the electricity.",
     "what part of the flat costs can be deducted for working from home"),
    ("Dog adoption", "Notes from adopting a rescue dog from the shelter.", "Separation anxiety",
     "She howled whenever we left, so the trainer had us leave for thirty seconds at first and build up "
     "slowly; a frozen food toy keeps her busy while we are out.",
     "how are we dealing with the puppy crying when left alone"),
    ("Solar panels", "Researching solar panels for the south-facing roof.", "Chosen installer",
     "We went with the smaller local installer because they offered a twelve-year workmanship warranty "
     "and could fit a battery later without replacing the inverter.",
     "which company will put the panels on the roof and what made them the choice"),
    ("Learning Japanese", "Study log for Japanese: kana, kanji, grammar and listening.", "Study method",
     "Flashcards alone stopped working around five hundred kanji; reading graded readers aloud for twenty "
     "minutes a day is what got me past that plateau.",
     "how did I get unstuck when memorising characters stopped working"),
    ("Bathroom leak", "The leak from the upstairs bathroom into the living room ceiling.", "Cause found",
     "The plumber found that the seal under the bath had perished; water ran along a joist and came out "
     "two metres away, which is why we looked in the wrong place for so long.",
     "what was actually causing the water damage downstairs"),
    ("Cycling holiday", "Planning two weeks of cycling along the Danube.", "Bike transport",
     "The train company does not take bikes on the night train, so we will box them and send them ahead "
     "with a courier to the first hotel in Passau.",
     "how are we getting the bicycles to the start of the tour"),
    ("Podcast project", "Starting a small podcast about local history.", "Microphones",
     "Two cheap dynamic microphones sounded far better in our echoing kitchen than the expensive condenser "
     "one, because they pick up much less of the room.",
     "which recording equipment worked best in the noisy room"),
    ("Father's hip operation", "Keeping track of appointments and care around Dad's hip replacement.",
     "Recovery plan", "The surgeon wants him walking with crutches the day after surgery and doing the "
     "exercises three times a day; driving is allowed again after six weeks.",
     "when can he drive again after the joint surgery"),
    ("Sourdough baking", "Experiments with sourdough bread and the starter called Gus.", "Dense loaves",
     "The loaves were dense because the starter was used too early; feeding it the night before and "
     "waiting until it doubled gave a much more open crumb.",
     "why was the bread coming out heavy and how was it fixed"),
    ("Garden shed", "Building a shed at the end of the garden from a kit.", "Foundation",
     "Instead of pouring concrete we set the shed on a grid of treated timber bearers resting on paving "
     "slabs, levelled with sand, which took one afternoon.",
     "what did we put the outbuilding on instead of a concrete base"),
    ("Choir concert", "Rehearsals and organisation for the winter choir concert.", "Venue change",
     "The church hall flooded in November, so the concert moved to the school auditorium, which has better "
     "heating and a piano that is actually in tune.",
     "where will the singing performance take place now and why did it move"),
    ("Job search", "Applications, interviews and notes for finding a new job.", "Offer accepted",
     "I accepted the offer from the logistics company: four days a week, remote on Fridays, and a start "
     "date at the beginning of February.",
     "which position did I take and what are the working arrangements"),
    ("Freezer inventory", "What is in the chest freezer in the garage and when it went in.", "Power cut",
     "During the two-day power cut in January the freezer stayed below minus ten because we kept the lid "
     "shut and covered it with blankets; nothing had to be thrown away.",
     "did the frozen food survive when the electricity went off"),
    ("Piano restoration", "Restoring the old upright piano from the house clearance.", "Tuning",
     "The tuner said the pin block is too worn to hold concert pitch, so it will be tuned half a tone low "
     "permanently, which is fine for playing at home.",
     "why can the old instrument not be tuned to the normal pitch"),
    ("Photography course", "Notes from the evening photography course.", "Night shots",
     "For the night shots of the bridge the teacher had us use a tripod, a two-second timer to avoid shake, "
     "and exposures of around fifteen seconds at low ISO.",
     "what camera settings did we use for photos after dark"),
    ("Neighbour dispute", "The long argument with the neighbours about the boundary hedge.", "Agreement",
     "In the end we agreed to split the cost of cutting the hedge down to two metres every autumn and "
     "wrote it in a short letter that both households signed.",
     "how was the disagreement about the plants between the gardens settled"),
    ("Allergies", "Tracking the hay fever and what the doctor suggested.", "Test results",
     "The skin prick test showed the allergy is to birch pollen, not grass, which explains why it is worst "
     "in April; the doctor suggested starting the nasal spray in March.",
     "what turned out to be the cause of the seasonal sneezing"),
    ("Camper van conversion", "Turning an old delivery van into a small camper.", "Insulation",
     "We insulated the walls with sheep's wool rather than foam, because it handles condensation better and "
     "did not need masks to install.",
     "what did we line the inside of the van with to keep it warm"),
    ("Family reunion", "Organising the big family reunion at the lake.", "Accommodation",
     "Everyone will stay at the youth hostel by the lake, which we booked out entirely for three nights; "
     "the older relatives get the rooms on the ground floor.",
     "where will the relatives sleep during the gathering"),
    ("Retirement savings", "Thinking through pensions and savings for later.", "Decision",
     "We decided to move the old workplace pensions into one low-cost index fund and to raise monthly "
     "contributions by two percent every year until fifty-five.",
     "what did we decide to do with the old pension pots"),
    ("Chess improvement", "Trying to improve at chess after years of casual games.", "Openings",
     "My coach said to stop memorising long opening lines and to play the same two solid openings with "
     "white and black until the middlegame plans feel familiar.",
     "what advice did I get about the first moves of the game"),
    ("School choice", "Choosing a secondary school for our daughter.", "Final choice",
     "We chose the school across the river, mostly because of its music department and the fact that she "
     "can cycle there safely along the canal path.",
     "which school did we go for and why"),
    ("Roof repair", "The storm damage to the roof and the repairs.", "Insurance",
     "The insurer paid for the broken tiles but not the old felt underneath, which they called wear and "
     "tear, so we paid for the new membrane ourselves.",
     "what did the insurance cover after the storm and what did it refuse"),
    ("Volunteering at the food bank", "Notes from Saturday shifts at the food bank.", "New system",
     "We replaced the paper sign-up sheets with numbered tickets handed out at the door, which ended the "
     "queue arguments and made the mornings much calmer.",
     "how did we fix the problems with people waiting in line"),
    ("Knitting projects", "Patterns, yarn and progress on knitting projects.", "The jumper",
     "The first jumper came out far too wide because I knitted the gauge swatch too loosely; going down "
     "one needle size fixed it for the second attempt.",
     "why was the sweater the wrong size"),
    ("Eye test", "The eye appointments and glasses.", "Prescription",
     "The optometrist found I need reading glasses for close work only; my distance vision is still fine, "
     "so no need for varifocals yet.",
     "what did the eye doctor say about needing spectacles"),
    ("Coffee roasting", "Home roasting green coffee beans in a popcorn machine.", "Roast level",
     "Stopping the roast about thirty seconds after the first crack gave the fruity light roast we like; "
     "going past the second crack made everything taste burnt.",
     "when should I stop heating the beans to get a light taste"),
    ("Basement damp", "The damp in the basement and what we tried.", "Solution",
     "The damp came from the soil outside, so a drainage channel along the wall and regrading the garden "
     "away from the house dried it out; the dehumidifier is now off.",
     "what stopped the moisture coming into the cellar"),
]


def note_text(index: int) -> tuple[str, str]:
    """(file name, markdown) of note ``index``: overview, four filler sections, then the late section."""
    title, overview, heading, late, _ = NOTES[index]
    sections = [("Overview", overview)] + [FILLER[(index + k * 3) % len(FILLER)] for k in range(4)]
    sections.append((heading, late))
    body = "\n\n".join(f"## {h}\n\n{text}" for h, text in sections)
    return f"{title}.md", f"# {title}\n\n{body}\n"


def questions() -> list[tuple[str, str]]:
    """(question, the file name of the note that answers it)."""
    return [(q, f"{title}.md") for title, _, _, _, q in NOTES]
