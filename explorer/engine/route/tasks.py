"""A prompt's tasks, routed one by one (docs/routing.md, §9.12 "Several tasks in one prompt").

"Make a poster for the jazz night, then write the announcement" asks for two skills, and
read as one text it dilutes both: each skill's description matches half of it. A prompt's
clauses, split at sentence ends and at the words that chain tasks ("then", "after that",
"also"), are each routed on their own by the same relevance model, and a clause whose best
skill clears the model's threshold adds that skill. Context sentences around one request
("I run a jazz club. Make us a poster.") are clauses too: the request routed without its
context is the cleaner signal.

Only the first few clauses of the first few hundred characters count: a pasted log or
file is no list of tasks, and each clause costs one more routing.
"""

from __future__ import annotations

import re

MAX_TASKS = 4  # clauses routed on their own, at most
MIN_WORDS = 3  # shorter fragments ("thanks.", "and then") are no task
TASK_SPAN_CHARS = 600  # the part of a prompt read for tasks

_CLAUSE_BREAK = re.compile(
    r"(?<=[.!?])\s+|;\s+|\n+|,?\s+(?:and then|then|after that|afterwards|and also|also)\s+",
    re.IGNORECASE,
)


def task_clauses(prompt: str) -> tuple[str, ...]:
    """The prompt's clauses worth routing on their own; empty when it reads as one task."""
    clauses = [
        part.strip()
        for part in _CLAUSE_BREAK.split(prompt[:TASK_SPAN_CHARS])
        if part and len(part.split()) >= MIN_WORDS
    ]
    return tuple(clauses[:MAX_TASKS]) if len(clauses) >= 2 else ()
