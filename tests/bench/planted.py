"""Query/answer pairs planted among random unit vectors: the rows a benchmark's semantic queries should find.

The answers are ten topic sentences in numbered variants, to be embedded by
the real model; the queries are paraphrases of the topics, so their true
nearest neighbours are the planted rows, whatever fills the rest of the store.
"""

from __future__ import annotations

TOPICS = (
    "The user prefers metric units|Deploys happen on Tuesdays after the standup|The printer on floor two jams"
    "|Coffee is brewed with a French press|The laptop battery drains overnight|Invoices go out on the first"
    "|The garden needs watering twice a week|Backups run at midnight to the NAS|The team lunch is on Fridays"
    "|Release tickets need two reviewers"
).split("|")


def answer(i: int) -> str:
    """The ``i``-th planted row: a topic sentence, numbered so no two rows are the same text."""
    return f"{TOPICS[i % len(TOPICS)]} (variant {i})"


def paraphrases(count: int) -> list[str]:
    """``count`` queries that ask about the topics in other words."""
    return [f"what does the team say about: {TOPICS[i % len(TOPICS)].lower()}" for i in range(count)]
