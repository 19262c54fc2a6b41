"""Full-text ranking of a bounded window of matches, by Okapi BM25, without a pass over every match.

SQLite's FTS5 ranks with bm25 too, but to weigh a word it first counts every row that holds it: for a word in every
row of a million that walk is ~100 ms on each query, whatever the number of rows ranked. Here the store reads the
newest RANK_WINDOW matches with FTS5's `highlight()` (the query's phrases marked as FTS5 itself matched them: its
tokenizer and stemmer, nothing guessed), and this module scores them:

- a phrase's frequency in a row is the count of its marked instances (a marked instance is assigned to the query
  phrase it spells, or else to the phrase sharing its longest prefix: a stemmer's match shares the stem);
- a row's length is its count of words as whitespace separates them (FTS5 counts tokens: proportional, and a tenth
  of the cost of splitting as its tokenizer does), the average length the window's;
- a phrase's weight (its inverse document frequency) comes from `TermStats`: counted exactly when a phrase matches
  fewer than STATS_CAP rows, estimated from the density of its newest STATS_CAP matches otherwise (a bounded count:
  ~1 ms a phrase at a million rows).

Scores are BM25's with FTS5's constants (k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5)), at least 1e-6),
bigger is better. The snippet is the window of SNIPPET_WORDS words holding the most marked instances.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

K1 = 1.2
B = 0.75
STATS_CAP = 2000  # a phrase's matches counted exactly up to this many; beyond, estimated from their density
SNIPPET_WORDS = 16
# highlight()'s markers: private-use characters, which no tokenizer makes part of a word
OPEN, CLOSE = "\ue000", "\ue001"
_MARKED = re.compile(f"{OPEN}([^{CLOSE}]*){CLOSE}")


@dataclass(frozen=True)
class TermStats:
    """How many rows the table holds (`rows`) and, per query phrase, how many hold it (`holding`)."""

    rows: int
    holding: dict[str, int]

    def idf(self, phrase: str) -> float:
        n = min(self.holding.get(phrase, 0), self.rows)
        return max(1e-6, math.log((self.rows - n + 0.5) / (n + 0.5)))


def estimate_holding(count: int, span: int, rows: int) -> int:
    """Rows holding a phrase, from its newest `count` matches spread over `span` rows (all of its matches when
    `count` is below STATS_CAP: then exact)."""
    if count < STATS_CAP or span <= 0:
        return count
    return min(rows, max(count, round(count * rows / span)))


def phrase_counts(marked: str, phrases: Sequence[str]) -> dict[str, int]:
    """Marked instances per query phrase (see the module's note on how an instance finds its phrase)."""
    return _Matcher(phrases).counts(marked)


class _Matcher:
    """Assigns marked instances to a query's phrases (built once per query, used on every row of the window)."""

    def __init__(self, phrases: Sequence[str]) -> None:
        self.phrases = list(phrases)
        self.assigned = {p.lower(): p for p in phrases}  # an instance as marked, lower-cased -> its phrase

    def counts(self, marked: str) -> dict[str, int]:
        if len(self.phrases) == 1:  # every instance is the one phrase's
            return {self.phrases[0]: marked.count(OPEN)}
        counts = dict.fromkeys(self.phrases, 0)
        for instance in _MARKED.findall(marked):
            key = instance.lower()
            phrase = self.assigned.get(key)
            if phrase is None:  # a stemmed form: the phrase sharing its longest prefix (the first of those)
                phrase = max(self.phrases, key=lambda p: len(_common_prefix(key, p.lower())))
                self.assigned[key] = phrase
            counts[phrase] += 1
        return counts


def _common_prefix(a: str, b: str) -> str:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return a[:n]


def score(marked_texts: Sequence[str], phrases: Sequence[str], stats: TermStats) -> list[float]:
    """BM25 of each row of the window (its text as highlight() marked it), bigger is better."""
    lengths = [len(text.split()) for text in marked_texts]
    average = (sum(lengths) / len(lengths)) if lengths else 1.0
    weights = {p: stats.idf(p) for p in phrases}
    matcher = _Matcher(phrases)
    scores = []
    for text, length in zip(marked_texts, lengths):
        norm = K1 * (1 - B + B * length / max(average, 1e-9))
        total = 0.0
        for phrase, tf in matcher.counts(text).items():
            if tf:
                total += weights[phrase] * tf * (K1 + 1) / (tf + norm)
        scores.append(total)
    return scores


def snippet(marked: str, words: int = SNIPPET_WORDS) -> str:
    """The `words`-word stretch of a marked text holding the most marked instances, marks shown as « », cut ends
    shown as …"""
    parts = marked.split()
    if not parts:
        return ""
    reach = [0]
    for part in parts:  # reach[i]: marked words among the first i
        reach.append(reach[-1] + (OPEN in part or CLOSE in part))
    starts = range(max(1, len(parts) - words + 1))
    best = max(starts, key=lambda s: (reach[min(s + words, len(parts))] - reach[s], -s))
    chosen = " ".join(parts[best:best + words])
    if chosen.count(OPEN) > chosen.count(CLOSE):  # a mark cut at the end: close it
        chosen += CLOSE
    if chosen.count(CLOSE) > chosen.count(OPEN):  # a mark cut at the start: open it
        chosen = OPEN + chosen
    text = chosen.replace(OPEN, "«").replace(CLOSE, "»")
    return ("…" if best > 0 else "") + text + ("…" if best + words < len(parts) else "")
