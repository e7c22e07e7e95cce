"""A finding read in a glance: one headline, the objects at risk, the safe step; the why apart.

The headline says what the change does to which object, under about 20 words, the objects in code
format. It is derived, not written per finding: from the code's template (`HEADLINES` in
checks/codes.py) and the finding's objects when the finding deletes, holds or loses objects (an
error or a warning); else from the message's first sentence or clause when that is short; else
from the code's one-line `meaning`. The message stays whole as the why; the sentence that says what
to do next (a safe procedure, `Next:`) is lifted out of it as the step.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from bot.checks.codes import BY_NAME, HEADLINES
from bot.model import Finding, FindingObject, at_risk

HEADLINE_WORDS = 20
"""A headline drawn from a message is at most this many words; past it the code's meaning serves."""
_SHORTEST_CLAUSE = 5  # a clause shorter than this ("cutover step 1 of 2") says too little alone
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`])")
# A clause ends at `: ` or `; `, but not inside `key: value` (`has wait: false and ...`).
_CLAUSE_END = re.compile(r"(?<=[:;])\s+(?!(?:true|false|null|disabled|Orphan|Delete|\d)\b)")
# Where a message starts saying what to do: the step, lifted out of the why.
_STEP_OPENERS = ("Safe procedure:", "Next:", "To go on:", "Or keep what it owns", "If the data must survive",
                 "Keep exactly one", "Keep the Namespace", "Put it back", "Delete it by hand")


def objects_of(findings: Sequence[Finding]) -> tuple[FindingObject, ...]:
    """Every object the findings are about, once, those whose deletion loses data first."""
    return at_risk(o for f in findings for o in f.objects)


def words(text: str) -> int:
    return len(text.split())


def _named(objects: Sequence[FindingObject]) -> str:
    first = f"`{objects[0]}`"
    if len(objects) == 1:
        return first
    if len(objects) == 2:
        return f"{first} and `{objects[1]}`"
    return f"{first} and {len(objects) - 1} more objects"


def headline(findings: Sequence[Finding], lead: str | None = None) -> str:
    """The headline of one finding, or of a group of findings about the same thing (the first leads;
    `lead`, the words the group's messages share, stands for the message when given)."""
    head = findings[0]
    objects = objects_of(findings)
    if _templated(findings):
        text = HEADLINES[head.code].format(objects=_named(objects), them="it" if len(objects) == 1 else "them",
                               path=f"`{head.path}`" if head.path else "the file",
                               wave=head.wave if head.wave is not None else "?")
        return _capital(text)
    return _capital(quoted(_short(head, lead), objects, head.path))


def _templated(findings: Sequence[Finding]) -> bool:
    head = findings[0]
    objects = objects_of(findings)
    return head.code in HEADLINES and bool(objects) and (
        head.severity != "info" or any(o.loses_data for o in objects))


def why(f: Finding) -> str:
    """The message as the why under the headline: without its first sentence when that sentence is
    the headline already (said once)."""
    text = " ".join(f.message.split())
    first, *rest = _SENTENCE_END.split(text, maxsplit=1)
    if not _templated([f]) and rest and words(first.rstrip(".")) <= HEADLINE_WORDS:
        return rest[0]
    return text


def _short(f: Finding, lead: str | None = None) -> str:
    """The message's first sentence, or its first clause, when short enough; else the code's meaning."""
    sentence = _SENTENCE_END.split(" ".join((lead or f.message).split()), maxsplit=1)[0].rstrip(".:")
    if words(sentence) <= HEADLINE_WORDS:
        return sentence
    clause = _CLAUSE_END.split(sentence, maxsplit=1)[0].rstrip(":;")
    if _SHORTEST_CLAUSE <= words(clause) <= HEADLINE_WORDS:
        return clause
    code = BY_NAME.get(f.code)
    return code.meaning if code is not None else _clip(sentence)


def _clip(text: str) -> str:
    return " ".join(text.split()[:HEADLINE_WORDS]) + " …"


def quoted(text: str, objects: Sequence[FindingObject], path: str | None) -> str:
    """`text` with the objects and the file it names in code format (where not quoted already)."""
    names = sorted({str(o) for o in objects} | ({path} if path else set()), key=len, reverse=True)
    for name in names:
        text = re.sub(rf"(?<![\w./`-]){re.escape(name)}(?![\w/`-]|\.\w)", f"`{name}`", text)
    return text


def _capital(text: str) -> str:
    """A sentence's capital, unless it opens with a name (`apps-wave-1`, `network/tunnel`, `wave-bot`)."""
    first = text.split(" ", 1)[0]
    return text[:1].upper() + text[1:] if first.isalpha() and first.islower() else text


def split_step(message: str) -> tuple[str, str]:
    """(why, step): the sentence of `message` that says what to do next, and the rest of it."""
    text = " ".join(message.split())
    sentences = _SENTENCE_END.split(text)
    for i, sentence in enumerate(sentences):
        if sentence.startswith(_STEP_OPENERS):
            step = sentence.rstrip(".")
            label = next((o for o in _STEP_OPENERS if o.endswith(":") and step.startswith(o)), "")
            step = _capital(step[len(label):].strip())  # the report labels it itself
            why = " ".join(sentences[:i] + sentences[i + 1:])
            return why, step
    return text, ""


__all__ = ["HEADLINE_WORDS", "headline", "objects_of", "quoted", "split_step", "why", "words"]
