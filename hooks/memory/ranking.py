"""How `memory/search` ranks: words (full-text), meaning (vectors), or both fused by reciprocal rank.

Reciprocal rank fusion (Cormack, Clarke and Büttcher, 2009) adds 1 / (k + rank) over the rankings a hit appears in:
it needs no calibration between a bm25 score and a cosine, and a hit that both rankings place high beats one that
only one of them likes. Each hit says why it matched (`matchedBy`, and its rank and score in each ranking).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

SNIPPET_CHARS = 160
SEARCH_MODES = ("hybrid", "text", "meaning")
FUSE_DEPTH = 50  # hybrid: how many hits of each ranking are fused
RRF_K = 60  # reciprocal rank fusion's constant (Cormack et al.): a hit's share is 1 / (RRF_K + rank)

Hits = Callable[[str, "str | None", int], list[dict[str, Any]]]


def search(query: str, project: str | None, limit: int, mode: str, text_hits: Hits,
           meaning_hits: Hits) -> list[dict[str, Any]]:
    """`memory/search` on a backend, given its two rankings (each `(query, project, depth) -> hits, best first`)."""
    if mode not in SEARCH_MODES:
        raise ValueError(f"search mode must be one of {', '.join(SEARCH_MODES)}, not {mode!r}")
    depth = max(limit, FUSE_DEPTH) if mode == "hybrid" else limit  # only fusion needs more than it returns
    if mode == "text":
        return [public(h) for h in text_hits(query, project, depth)[:limit]]
    if mode == "meaning":
        return [public({**h, "score": h["why"]["meaning"]["similarity"]})
                for h in meaning_hits(query, project, depth)[:limit]]
    by_words = _beside(text_hits, query, project, depth)
    by_meaning = meaning_hits(query, project, depth)
    return [public(h) for h in fuse(by_words(), by_meaning, limit=limit, k=RRF_K)]


def _beside(hits: Hits, query: str, project: str | None, depth: int) -> Callable[[], list[dict[str, Any]]]:
    """`hits` started in a thread of its own (both backends' rankings spend their time in the database or in numpy,
    outside the GIL, so a hybrid search costs about its slower ranking, not the sum); the result, or its error,
    when called."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["hits"] = hits(query, project, depth)
        except BaseException as exc:  # handed to the caller, raised there
            box["error"] = exc

    worker = threading.Thread(target=run, name="memory-search-words", daemon=True)
    worker.start()

    def result() -> list[dict[str, Any]]:
        worker.join()
        if "error" in box:
            raise box["error"]
        return box["hits"]

    return result


def meaning_snippet(text: str) -> str:
    """The start of a text found by meaning alone (no word of the query to mark)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[:SNIPPET_CHARS].rsplit(" ", 1)[0] + "…"


def text_why(rank: int, score: float) -> dict[str, Any]:
    return {"rank": rank, "score": round(score, 6)}


def meaning_why(rank: int, similarity: float) -> dict[str, Any]:
    return {"rank": rank, "similarity": round(similarity, 4)}


def fuse(text_hits: list[dict[str, Any]], meaning_hits: list[dict[str, Any]], *, limit: int, k: int) -> list[dict[str, Any]]:
    """Hits of both rankings (each carrying `key`, `why`), merged by reciprocal rank; `score` becomes the fused one."""
    merged: dict[Any, dict[str, Any]] = {}
    for hits in (text_hits, meaning_hits):
        for hit in hits:
            mine = merged.get(hit["key"])
            if mine is None:
                merged[hit["key"]] = {**hit, "why": dict(hit["why"])}
            else:
                mine["why"].update(hit["why"])
                if "text" in hit["why"]:
                    mine["snippet"] = hit["snippet"]  # the marked words beat the text's start
    for hit in merged.values():
        hit["score"] = round(sum(1.0 / (k + why["rank"]) for why in hit["why"].values()), 6)
    ranked = sorted(merged.values(), key=lambda h: (-h["score"], h["key"]))
    return ranked[:limit]


def public(hit: dict[str, Any]) -> dict[str, Any]:
    """The hit as `memory/search` returns it (the internal key dropped, the reasons listed)."""
    out = {name: value for name, value in hit.items() if name != "key"}
    out["matchedBy"] = [name for name in ("text", "meaning") if name in hit["why"]]
    return out
