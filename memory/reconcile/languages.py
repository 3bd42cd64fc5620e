"""The slot patterns that ship: English and Portuguese. A new language is one more
:func:`compile_slots` call here (or anywhere) and a :func:`register_slots`."""

from __future__ import annotations

from memory import languages
from memory.reconcile.slots import SlotPatterns, compile_slots

_DIETS = (
    r"vegetarian|vegan|pescatarian|pescetarian|carnivore|omnivore|keto|paleo|gluten[- ]free|dairy[- ]free"
    r"|lactose[- ]intolerant|flexitarian|halal|kosher|plant[- ]based|meat[- ]eater"
)
_NOW = r"(?:(?:now|currently|still|just|recently|finally|actually|also|officially|already) )*"

ENGLISH = compile_slots(
    "en",
    rewrites=[
        (r"\bi'm\b", "i am"), (r"\bi've\b", "i have"), (r"\bi'll\b", "i will"), (r"\bi'd\b", "i would"),
        (r"\bwe're\b", "we are"), (r"\bwe've\b", "we have"), (r"\bthey're\b", "they are"),
        (r"\b(\w+)'s (got|been|gone)\b", r"\1 has \2"),  # "mum's got", "he's been": has, not is, nor mum's
        (r"\b(he|she|it|that|what|there)'s\b", r"\1 is"), (r"\bcan't\b", "cannot"), (r"\bwon't\b", "will not"),
        (r"\b(do|does|did|is|are|was|were|have|has|had)n't\b", r"\1 not"),
        (r"\bfavourite\b", "favorite"), (r"\bcolour\b", "color"), (r"\bany more\b", "anymore"),
        (r"\bgot promoted\b", "was promoted"),
        (r"\b(dr|mr|mrs|ms|prof|st|jr|sr)\.(?= )", r"\1"),  # "dr. patel" is one name, not two clauses
        # apposition: "sarah, my wife, lives" / "my wife, sarah, lives" → "my wife sarah lives"
        (r"^([\w-]+), (my|our) ([\w-]+),? ", r"\2 \3 \1 "),
        (r"^(my|our) ([\w-]+), ([\w-]+),? ", r"\1 \2 \3 "),
    ],
    framing=(
        r"^(?:(?:by the way|btw|oh|also|so|hey|ok(?:ay)?|fyi|actually|well|yeah|yes|update|quick update|news"
        r"|heads up|correction|just so you know|just to let you know|for the record|for your information"
        r"|please|just|and|anyway|good news|big news|small update|in case you were wondering"
        r"|sorry|oops|my bad|my mistake|(?:it )?turn(?:s|ed) out(?: that)?)\b[,:!.\s-]*)"
        r"|^(?:i meant(?: to say)?(?: that)?(?!\s+to\b)\b[,:\s]*)"  # "sorry, I meant the flight lands at 8pm"
        r"|^(?:(?:please )?(?:remember|note|keep in mind|don't forget|do not forget)(?: that)?\b[,:\s]*)"
        r"|^(?:(?:as of|since|starting|from|effective|beginning) [^,]{1,30},\s*)"
        r"|^(?:(?:these days|nowadays|lately|recently|currently|right now|at the moment|today|this week"
        r"|this month|this year|last week|last month|last year),?\s+)"
    ),
    retractions=[
        (r"^(?:it is|this is) no longer (?:true|the case) that ", ""),
        (r"^(?:it is|this is) not true anymore that ", ""),
        (r"^(?:please )?forget (?:that|about the fact that) ", ""),
        (r"[,;:-]* (?:that|this|which) is (?:not true|no longer true|not the case|no longer the case|wrong|outdated)(?: anymore)?$", ""),
        (r"[,;:-]* (?:not|no longer) true anymore$", ""),
        (r"\bno longer (?:have|own)\b", "have"),
        (r"\bno longer (?:am|is|are) ", r"am "),
        (r"\bno longer ", ""),
        (r"\b(?:do|does|did) not (\w+)(.*?) anymore\b", r"\1\2"),
        (r"\b(am|is|are) not (.*?) anymore\b", r"\1 \2"),
        (r"\b(have|has) not got (.*?) anymore\b", r"\1 \2"),
        (r"\b(?:stopped|quit) being\b", "am"),
        (r"\b(?:stopped|quit) (working|living|eating|using|dating|seeing)\b", r"\1"),
        (r"\b(?:quit|left) (?:my job|my position|my role)(?: (?:at|with))? ", "work at "),
        (r"\bgave up (?:my|our|the) ", "have "),  # "gave up yoga" is an activity, not a thing had
        (r"\b(?:sold|gave away|got rid of|lost) (?:my |our |the )?", "have "),
        (r"^(my|our) ([\w -]+?) (?:died|passed away|ran away)\b.*", r"i have \2"),
        (r"\bbroke up with ", "am dating "),
        (r"\bdivorced ", "married to "),
    ],
    clause_split=r"\s*;\s*|\s+but\s+|,?\s+and\s+(?=(?:i|we|my|our|she|he|they)\b)|\.\s+",
    facts=[
        # diet first: "i am now vegetarian" is a diet, not a job
        (r"(?:my|our) diet is (?:now )?(?P<val>.+)", "diet", False),
        (r"{S} (?:am|is|are|have been|has been|went|have gone|has gone|became|have become|turned|"
         r"have turned|decided to go|switched to being|started being|eat|eats)? ?" + _NOW + r"(?:a |an |fully |strictly |mostly |100% )?"
         r"(?P<val>" + _DIETS + r")(?: .*)?", "diet", False),
        (r"{S} (?:am|is|are) (?:on|following|doing) (?:a |an |the )?(?P<val>[\w -]+?) diet(?: .*)?", "diet", False),
        (r"{S} (?:follows?|keeps?) (?:a |an )?(?P<val>[\w -]+?) diet(?: .*)?", "diet", False),
        (r"{S} (?:have |has )?" + _NOW + r"(?:started eating|eat|eats|am eating|is eating) (?P<val>meat|fish|everything)(?: again| now)?(?: .*)?", "diet", False),
        # residence
        (r"{S} (?:(?:am|is|are|have been|has been) )?" + _NOW + r"(?:live|lives|living|am living|is living|are living|reside|resides|am residing|is residing"
         r"|am based|is based|are based|based|stay|stays|am staying|is staying|staying|residing|have been living|has been living)"
         r"(?: now| currently)? (?:in|at|near|out in|over in|on) (?P<val>.+)", "residence", False),
        (r"{S} (?:have |has |had |just |recently |finally |now |officially |already )*(?:moved|relocated|moving|am moving|"
         r"is moving|are moving|are relocating|am relocating)(?: back| over| out| house)?(?: all the way)? (?:to|into|in to) (?P<val>.+)",
         "residence", False, True),
        (r"(?:my|our) (?:home|house|place|flat|apartment|address|home address) is (?:now )?(?:in|at|near|on)? ?(?P<val>.+)", "residence", False),
        # "we're in Manchester now", "I'm still in Leeds": a place only when said as a name, and only with a
        # "now" or a "still" (without one, "I'm in Berlin" is as likely a trip)
        (r"{S} (?:am|is|are) (?:now |currently )?(?:over |out |down |up )?in (?P<val>[\w' -]+?) (?:now|these days|nowadays"
         r"|for good|permanently)", "residence", False, True, True),
        (r"{S} (?:am|is|are) still (?:over |out |down |up )?in (?P<val>[\w' -]+)", "residence", False, False, True),
        (r"{S} (?:call|calls) (?P<val>.+?) home(?: now)?", "residence", False),
        (r"(?P<val>[\w -]+?) is where (?P<subj>i|we) (?:live|am living|are living|am based|are based)(?: now)?", "residence", False),
        # work: employer, then job title
        (r"{S} (?:(?:am|is|are|have been|has been) )?" + _NOW + r"(?:work|works|working|am working|is working|are working|have been working|has been working)"
         r"(?: now| currently)? (?:at|for|with|in) (?P<val>.+)", "employer", False),
        (r"{S} (?:have |has |just |recently |now )*(?:joined|started at|started working at|started working for"
         r"|started a (?:new )?job at|started a (?:new )?job with|got a (?:new )?job at|got a (?:new )?job with"
         r"|took a (?:new )?job at|took a (?:new )?job with|accepted (?:a|an|the) (?:new )?(?:job|position|role|offer)"
         r" (?:at|with|from)|am employed (?:at|by)|is employed (?:at|by)|got hired (?:at|by)|was hired (?:at|by)"
         r"|have been hired (?:at|by)|signed with|moved to work at|went to work for) (?P<val>.+)",
         "employer", False, True),
        (r"(?:my|our) (?:employer|company|workplace) is (?:now )?(?P<val>.+)", "employer", False),
        (r"{S} " + _NOW + r"(?:work|works|am working|is working) as (?:an? |the )?(?P<val>.+)", "job", False),
        (r"{S} (?:became|have become|has become|was promoted to|have been promoted to|has been promoted to"
         r"|got a promotion to|moved into a role as|switched careers to become) (?:an? |the )?(?P<val>.+)",
         "job", False, True),
        (r"{S} (?:am|is|are) now (?:an?|the) (?P<val>.+)", "job", False, True),
        (r"(?:my|our) (?:job|job title|title|role|position|occupation|profession) is (?:now )?(?:an? |the )?(?P<val>.+)", "job", False),
        (r"{S} (?:goes|go|is going|am going|attends|attend|is attending|am attending|started at) (?:to )?"
         r"(?P<val>.*\b(?:school|university|college|academy|kindergarten|daycare|nursery)\b.*)", "school", False),
        # people
        (r"{S} " + _NOW + r"(?:reports?|am reporting|is reporting) (?:directly )?to (?P<val>.+)", "manager", False),
        (r"{S} (?:am|is|are) " + _NOW + r"(?:dating|seeing|married to|engaged to|in a relationship with|going out with)"
         r" (?P<val>.+)", "partner", False),
        (r"{S} (?:got married to|married|got engaged to) (?P<val>.+)", "partner", False, True),
        # "my X (has) changed to Y", "my X changed, it is Y"
        (r"(?:my|our) (?P<attr>[a-z](?:(?! and )[\w' -]){0,40}?) (?:has |have )?(?:changed|switched|moved|been changed|been moved"
         r"|been updated|been pushed|updated|was moved|was changed|got moved) to (?P<val>.+)", None, False, True),
        (r"(?P<subj>[\w-]+(?: [\w-]+)?)'s (?P<attr>[a-z][\w -]{0,30}?) (?:has |have )?(?:changed|switched|moved|been changed"
         r"|been moved|been updated|been pushed|updated|was moved|was changed|got moved) to (?P<val>.+)", None, False, True),
        (r"(?:my|our) (?P<attr>[a-z][\w' -]{0,40}?) (?:has |have )?changed[,:;-]* (?:it is|they are|she is|he is|now it is"
         r"|the new one is|now) (?P<val>.+)", None, False, True),
        # contact
        (r"(?:you can )?(?:reach|contact|text|call|email|e-mail|ring) (?:me|us) (?:at|on|via) (?P<val>.+@.+)", "email", False),
        (r"(?:you can )?(?:reach|contact|text|call|ring) (?:me|us) (?:at|on) (?P<val>[+\d][\d ()+.-]{5,})(?: .*)?", "phone", False),
        (r"{S} (?:(?:have|has) got|have|has|got) (?:a )?new (?P<attr>phone number|number|mobile number|email address|email|e-mail|address)"
         r"[,:]? (?:it is |which is |and it is )?(?P<val>.+)", None, False, True),
        # projects
        (r"the (?P<attr>deadline|due date|launch date|launch|release date|release|status|lead|owner|budget|demo|deliverable)"
         r" (?:for|of|on) (?P<subj>.+?) (?:is|has been|was|got) (?:now |been )?(?:moved to |pushed to |pushed back to "
         r"|changed to |set to |moved up to |brought forward to |rescheduled (?:for|to) )?(?P<val>.+)", None, False),
        (r"(?P<subj>(?:the )?(?:project )?[\w-]+(?: [\w-]+)?)(?:'s| project's)? (?P<attr>deadline|due date|launch date|launch"
         r"|release date|release|status|lead|owner|budget|demo) (?:is|has been|was|got|moved|slipped|slipped to|changed)"
         r" (?:now |been )?(?:moved to |pushed to |pushed back to |changed to |set to |to )?(?P<val>.+)", None, False),
        (r"(?P<subj>(?:the )?project [\w-]+(?: [\w-]+)?|(?:the )?[\w-]+ project) (?:is|was|has been) (?:now )?"
         r"(?:due|scheduled|planned|set) (?:on|in|for|by|to ship in|to launch in|to ship on|to ship by) (?P<val>.+)", "deadline", False),
        (r"(?P<subj>(?:the )?project [\w-]+(?: [\w-]+)?|(?:the )?[\w-]+ project) (?:is|was|has been) (?:now )?"
         r"(?:led|run|owned|managed) by (?P<val>.+)", "lead", False),
        (r"(?P<val>[\w-]+(?: [\w-]+)?) (?:now )?(?:leads|is leading|runs|owns|took over|has taken over|is taking over)"
         r"(?: leading| running)? (?P<subj>(?:the )?project [\w-]+(?: [\w-]+)?|(?:the )?[\w-]+ project)", "lead", False),
        (r"(?P<subj>(?:the )?project [\w-]+(?: [\w-]+)?|(?:the )?[\w-]+ project) (?:is|has been|was) (?:now )?"
         r"(?:in|on|at) (?P<val>(?:the )?(?:beta|alpha|production|maintenance|hold|pause|review|testing|staging|planning"
         r"|development|design|pilot)(?: .*)?)", "status", False),
        (r"(?P<subj>(?:the )?project [\w-]+(?: [\w-]+)?|(?:the )?[\w-]+ project) (?:is|has been|was|got|has) (?:now )?"
         r"(?P<val>cancelled|canceled|paused|shipped|launched|done|finished|complete|completed|live|shelved|on hold|delayed"
         r"|in progress|abandoned)(?: .*)?", "status", False),
        (r"{S} (?:am|is|are) " + _NOW + r"(?:working on|building|leading|running|managing|developing|writing)"
         r" (?P<val>.+)", "project", True),
        # things and tastes (many at once: only a retraction or an explicit change ends one)
        (r"{S} " + _NOW + r"(?:drive|drives|am driving|is driving) (?:an? |the |my )?(?P<val>.+)", "car", False),
        (r"{S} " + _NOW + r"(?:am|is|are) allergic to (?P<val>.+)", "allergy", True),
        (r"{S} (?:have|has) (?:an? |the )?(?P<val>[\w -]+?) allergy", "allergy", True),
        (r"{S} (?:have |has |just |recently )*(?:switched|changed|migrated|moved over|converted)(?: over)? "
         r"(?:from (?:.+?) )?to (?P<val>.+)", "use", True, True),
        (r"{S} " + _NOW + r"(?:use|uses|am using|is using|rely on|relies on)(?: now)? (?P<val>.+)", "use", True),
        (r"{S} (?:really |usually |always |mostly |now |still |totally |absolutely |also )*(?:prefer|prefers|like|likes"
         r"|love|loves|enjoy|enjoys|am into|is into|are into|am a fan of|is a fan of|am a big fan of)(?: now)? (?P<val>.+)",
         "likes", True),
        (r"{S} (?:really |now |still |also )*(?:hate|hates|dislike|dislikes|cannot stand|can not stand|detest)"
         r"(?: now)? (?P<val>.+)", "dislikes", True),
        (r"{S} (?:have |has |just |recently |finally )*(?:have|has|own|owns|got|bought|adopted|have got|has got|rescued)"
         r"(?! (?:changed|been|moved|gone|become|shipped|switched|started|joined|left|updated|finished|launched)\b)(?: now)? (?:an? |two |three |some |my |the |our |new )*(?P<val>.+)", "has", True),
        # generic slots: "my X is Y", "sarah's X is Y", "Y is my X"
        (r"(?P<subj>(?:my|our) [\w-]+(?: [\w-]+)?) (?:is|are) " + _NOW + r"(?:called|named) (?P<val>.+)", "name", False),
        (r"(?:my|our) (?P<attr>[a-z][\w' -]{0,40}?) (?:is|are|was|has been|has changed to|changed to|will be) " + _NOW
         + r"(?P<val>.+)", None, False),
        (r"(?P<subj>[\w-]+(?: [\w-]+)?)'s (?P<attr>[a-z][\w -]{0,30}?) (?:is|are|was|has changed to|changed to) " + _NOW
         + r"(?P<val>.+)", None, False),
        (r"(?P<val>[\w-]+(?: [\w-]+)?) is " + _NOW + r"my (?:new )?(?P<attr>[a-z][\w -]{0,30}?)(?: now)?", None, False),
        (r"(?P<subj>i|we|[\w-]+) (?:am|is|are) " + _NOW + r"(?:an?) (?P<val>.+)", "is a", True),
    ],
    self_subjects=["i", "me", "we", "myself", "user", "the user"],
    possessive=r"(?:my|our) (.+)",
    relations=[
        "wife", "husband", "partner", "spouse", "girlfriend", "boyfriend", "fiance", "fiancee", "sister", "brother",
        "mother", "mom", "mum", "father", "dad", "son", "daughter", "boss", "manager", "friend", "cousin", "aunt",
        "uncle", "colleague", "coworker", "roommate", "flatmate", "grandmother", "grandfather", "grandma", "grandpa",
        "niece", "nephew", "neighbor", "neighbour", "mentor", "dog", "cat", "kid", "child", "baby", "lead", "client",
        "parents", "grandparents", "kids", "children", "in-laws", "twins",
    ],
    attribute_aliases={
        "phone number": "phone", "number": "phone", "mobile": "phone", "mobile number": "phone", "cell": "phone",
        "cell number": "phone", "cell phone": "phone", "telephone": "phone", "telephone number": "phone",
        "phone": "phone", "email address": "email", "e-mail": "email", "e-mail address": "email", "mail": "email",
        "boss": "manager", "supervisor": "manager", "line manager": "manager", "team lead": "manager",
        "address": "residence", "home address": "residence", "home": "residence", "job title": "job",
        "title": "job", "role": "job", "position": "job", "occupation": "job", "profession": "job",
        "employer": "employer", "company": "employer", "workplace": "employer", "due date": "deadline",
        "launch date": "launch", "release date": "release", "owner": "lead", "spouse": "partner",
        "favorite colour": "favorite color", "fave color": "favorite color",
    },
    attribute_fillers=r" (?:new|current|present|updated|old|actual|real|latest|main|primary|preferred) ",
    value_fillers=(
        r"^(?:a|an|the|my|our|in|at|to|now|currently|just|actually|still|called|named|over|out|back)\s+"
        r"|\s+(?:now|these days|nowadays|currently|again|instead|anymore|for now|for good|from now on|too|as well"
        r"|since \w+(?: \w+)?|starting \w+(?: \w+)?|as of \w+(?: \w+)?|last (?:week|month|year|summer|winter|spring|fall"
        r"|autumn|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|this (?:week|month|year)"
        r"|next (?:week|month|year)|a (?:few )?(?:days?|weeks?|months?|years?) ago|recently|yesterday|today"
        r"|permanently|full[- ]time|for (?:a|the) (?:while|moment)|by the way|then)$"
        r"|\s+(?:with (?:my|our|the|a|his|her) .*|over .*|rather than .*|instead of .*|more than .*|not .*)$"
    ),
    change_markers=(
        r"\b(?:now|anymore|no longer|instead|switched|changed|moved|new|these days|nowadays|from now on"
        r"|not .* but|became|updated|any longer)\b"
    ),
    change_cues=(  # not negated or intended: "I won't quit", "I want to move" change nothing yet
        r"(?<!\bnot )(?<!\bnever )(?<!\bto )\b(?:switch|switched|switching|changed|changing|replaced|replacing|upgraded|upgrading|renamed|renaming"
        r"|moved|moving|left|leaving|quit|quitting|stopped(?! (?:by|at|in|off|over)\b)|gave up|given up|giving up|rescheduled|retired|ported"
        r"|from now on|no longer|anymore|any longer|instead|became|updated|relocated|relocating"
        # a state that ends in one step: a relationship, a job, a plan (not "closed down my branch", "rebooked me": those
        # end a visit, not a fact)
        r"|broke up|split up|got engaged|got married|passed away|went bust|resigned|handed in (?:my|his|her|their) notice"
        r"|got fired|(?:was|got|been) laid off|deferred|moved out|outgr[eo]wn|went (?:fully )?(?:vegan|vegetarian|veggie))\b"
        r"|(?<!\bam )(?<!\bis )(?<!\bare )(?<!\bget )(?<!\bgot )\bused to\b"  # "I used to X", not "I am used to X"
    ),
    ending_cues=(  # what they end is the noun phrase beside them: "cancelled the Spanish course", "the offsite was called off"
        r"(?<!\bnot )(?<!\bnever )(?<!\bto )\b(?:cancell?ed|cancell?ing|called off|calling off|scrapped|traded in|traded|sold"
        r"|swapped|swapping|ditched|dropped|cut out|kicked)\b"
    ),
    corrections=r"^\W*(?:sorry|oops|my bad|my mistake|correction)\b|\b(?:i meant|turns out|turned out|i misspoke|scratch that)\b",
    change_hints=r"\b(?:now|new|these days|nowadays)\b",
    # "too" adds only where a phrase ends ("I like jazz too", "me too, now"): before a word it is "too much".
    additive=r"\b(?:also|as well|in addition|additionally)\b|\btoo\b(?!\s+(?!(?:and|but|so|now|though|then)\b)\w)",
    unreal=(
        r"(?<!\bto )(?<!\bin )(?<!\bon )(?<!\bof )(?<!\bby )(?<!\bfrom )(?<!\buntil )\bmay\b"  # the verb, not the month
        r"|\b(?:if|unless|whether|thinking (?:about|of)|considering|might|could|would|should|planning (?:to|on)"
        r"|hoping to|tempted to|wondering|in case)\b|^(?:i|we) (?:would|might|could)\b"
    ),
    long_ago=(
        r"\b(?:back when|back in (?:the day|my \w+|the \d0s|\d{4})|when (?:i|we) (?:was|were)|years ago"
        r"|as a (?:kid|child|teenager|student)|growing up"
        r"|in (?:high school|college|university|uni|nursing school|law school|med school|grad school))\b"
    ),
    one_off=(
        r"\b(?:cancell?ed|called off|postponed|rained off|pushed back|died|broke down|ran out"
        r"|left(?: \w+){0,2}? (?:early|late))\b.*\b(?:today|tonight"  # "the nanny left early today": one day, not the job
        r"|tomorrow|this (?:morning|afternoon|evening|week|weekend|time)|last night|yesterday|halfway through|at lunch)\b"
    ),
    when=(  # a day, a date or a clock time; "may" only with a day ("on May 7"), else it is the verb
        r"\b(?:(?:mon|tues|wednes|thurs|fri|satur|sun)days?|weekends?|mornings?|afternoons?|evenings?|noon|midnight"
        r"|(?:jan|febr)uary|march|april|june|july|august|(?:septem|octo|novem|decem)ber|may \d{1,2}(?:st|nd|rd|th)?"
        r"|\d{1,2}(?:[:.]\d{2})? ?(?:am|pm)|\d{1,2}:\d{2}|\d{1,2}(?:st|nd|rd|th)"
        r"|half (?:past )?(?:\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
        # a holiday or a named day: "left the choir at Christmas" is a leaving, not the choir put somewhere
        r"|christmas|xmas|easter|thanksgiving|halloween|hanukkah|diwali|eid|passover|ramadan|hogmanay|midsummer"
        r"|new year(?:'s)?|half[- ]term|bank holiday|(?:boxing|valentine's|mother's|father's|independence|labou?r"
        r"|memorial|st\.? patrick's|new year's) day)\b"
    ),
    change_from=(
        r"\bfrom (?!now on)(?P<old>[^,;]+?) to (?P<new>[^,;]+)|\binstead of (?P<old2>[^,;]+)"
        r"|\bused to (?P<was>[^,;]+?),? but (?:now|these days|nowadays)\b|, not (?P<was2>[^,;]+)$"
    ),
    change_to=r"\s*(?:[^\s,;]+\s+){0,3}?(?:to|into|with|for) (?P<new>[^,;(]+)",
    attribute_words={
        "residence": "live lives living moved based home address",
        "employer": "work works working job joined employer company",
        "job": "work job role title promoted became",
        "manager": "manager boss report reports",
        "partner": "dating married partner wife husband girlfriend boyfriend",
        "diet": "vegetarian vegan eat meat diet",
        "phone": "phone number mobile reach call",
        "email": "email address reach",
        "car": "drive car",
        "has": "have own",
        "likes": "like prefer love favorite",
        "use": "use using switched",
        "deadline": "deadline due",
        "lead": "lead leads led",
        "status": "status",
    },
    value_shapes={"phone": r"\d{3}", "email": r"@"},
)

PORTUGUESE = compile_slots(
    "pt",
    rewrites=[(r"\bpra\b", "para"), (r"\bvc\b", "você")],
    framing=(
        r"^(?:(?:aliás|a propósito|por favor|ah|então|ei|olá|também|novidade|atualização|só para avisar|na verdade)"
        r"\b[,:!.\s-]*)|^(?:(?:lembre(?:-se)?|lembra|anote|não esqueça)\b(?:\s+de)?(?:\s+que\b)?[,:\s]*)"
        r"|^(?:(?:desde|a partir de|agora|hoje em dia|atualmente) [^,]{0,30},\s*)|^(?:agora|hoje em dia|atualmente)\s+"
    ),
    retractions=[
        (r"^esqueça (?:que|isso de que) ", ""),
        (r"[,;:-]* isso não é mais verdade$", ""),
        (r"\bnão (\w+)(.*?) mais\b", r"\1\2"),
        (r"\bjá não (\w+)\b", r"\1"),
        (r"\bdeixei de (?:ser|morar|trabalhar|ter|comer)\b", "sou"),
        (r"\b(?:vendi|doei|perdi) (?:o meu |a minha |meu |minha |o |a )?", "tenho "),
    ],
    clause_split=r"\s*;\s*|\s+mas\s+|,?\s+e\s+(?=(?:eu|meu|minha|nós)\b)|\.\s+",
    facts=[
        (r"(?:{S} )?(?:sou|é|somos|virei|me tornei|agora sou) (?:agora )?(?P<val>vegetarian[oa]|vegan[oa]|vegan|pescetarian[oa]"
         r"|celíac[oa]|intolerante à lactose)(?: .*)?", "diet", False),
        (r"(?:{S} )?(?:moro|mora|moramos|vivo|vive|vivemos|estou morando|está morando|resido) (?:agora )?(?:em|no|na|nos|nas)"
         r" (?P<val>.+)", "residence", False),
        (r"(?:{S} )?(?:me mudei|mudei-me|nos mudamos|mudamos|mudei|se mudou|mudou-se|vou me mudar) (?:agora )?"
         r"(?:para|pra|pro) (?:o |a )?(?P<val>.+)", "residence", False, True),
        (r"(?:{S} )?(?:trabalho|trabalha|trabalhamos|estou trabalhando|está trabalhando) (?:agora )?(?:na|no|em|para|pela|pelo)"
         r" (?P<val>.+)", "employer", False),
        (r"(?:{S} )?(?:entrei|comecei a trabalhar|fui contratad[oa]) (?:na|no|em|pela|pelo) (?P<val>.+)", "employer", False, True),
        (r"(?:{S} )?(?:tenho|tem|temos|comprei|adotei) (?:agora )?(?:um |uma |dois |duas )?(?P<val>.+)", "has", True),
        (r"(?:{S} )?(?:gosto de|gosta de|adoro|adora|prefiro|prefere) (?P<val>.+)", "likes", True),
        (r"(?:o |a )?(?:meu|minha|nosso|nossa) (?P<attr>[\w -]{1,30}?) (?:é|são|agora é|passou a ser|mudou para) (?:agora )?"
         r"(?:o |a |um |uma )?(?P<val>.+)", None, False),
    ],
    self_subjects=["eu", "nós", "a gente", "me", "nos"],
    possessive=r"(?:o |a )?(?:meu|minha|meus|minhas|nosso|nossa) (.+)",
    relations=["esposa", "marido", "mulher", "irmã", "irmão", "mãe", "pai", "filho", "filha", "chefe", "namorada", "namorado"],
    attribute_aliases={
        "telefone": "phone", "número": "phone", "celular": "phone", "número de telefone": "phone", "email": "email",
        "e-mail": "email", "endereço": "residence", "chefe": "manager", "gerente": "manager", "emprego": "employer",
        "empresa": "employer", "cargo": "job", "profissão": "job",
    },
    attribute_fillers=r" (?:novo|nova|atual) ",
    value_fillers=r"^(?:o|a|os|as|um|uma|em|no|na|agora)\s+|\s+(?:agora|de novo|hoje em dia|desde .+|a partir de .+)$",
    change_markers=r"\b(?:agora|não .* mais|já não|mudei|mudou|novo|nova|passou a)\b",
    additive=r"\b(?:também|além disso)\b",  # no change cues yet: content words are English-only so far
    attribute_words={"residence": "moro mora mudei", "employer": "trabalho trabalha", "diet": "vegetariana vegetariano"},
    value_shapes={"phone": r"\d{3}", "email": r"@"},
)



def register_slots(code: str, patterns: SlotPatterns) -> None:
    """Register (or replace) the slot patterns for ISO code ``code``."""
    languages.register("slot", code, patterns)


def get_slots(code: str) -> SlotPatterns:
    return languages.lookup("slot", code)


def slot_languages() -> list[str]:
    return languages.codes("slot")


register_slots("en", ENGLISH)
register_slots("pt", PORTUGUESE)
