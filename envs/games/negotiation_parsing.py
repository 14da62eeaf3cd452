"""Reading SimpleNegotiation moves from a player's reply: the spellings of
accept, reject and pass, and offers as two bundles of resources."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from envgym.core import quote_for_feedback

__all__ = ["OFFER_FORMAT", "SIMPLE_MOVES", "Bundle", "read_offer", "resource_lookup"]

#: Units of each resource, in the game's resource order.
Bundle = tuple[int, ...]

OFFER_FORMAT = (
    "offer: give <n> <Resource>[, <n> <Resource>...] for <n> <Resource>[, <n> <Resource>...]"
)
#: Lower-case replies (spaces collapsed) -> the move they name.
SIMPLE_MOVES = {
    **dict.fromkeys(("accept", "accept offer", "accept the offer", "i accept", "deal"), "accept"),
    **dict.fromkeys(
        ("reject", "reject offer", "reject the offer", "i reject", "decline", "no deal"), "reject"
    ),
    **dict.fromkeys(("pass", "i pass", "wait"), "pass"),
}
_OFFER = re.compile(
    r"^(?:offer\s*:?\s*)?(?:i\s+)?(?:give|offer)\s*:?\s*(.+?)\s+"
    r"(?:for|in exchange for|in return for|and get|and receive|to get)\s*:?\s+(.+)$"
)
_ITEM = re.compile(r"^(\d{1,4})\s*(?:x\s*)?([a-z]+)$")
_BUNDLE_SPLIT = re.compile(r"\s*(?:,|;|\+|&|\band\b)\s*")


def resource_lookup(names: Sequence[str]) -> dict[str, int]:
    """Lower-case spellings (singular and plural) -> resource index."""
    lookup: dict[str, int] = {}
    for i, name in enumerate(names):
        low = name.lower()
        for spelling in (low, low + "s", low + "es"):
            lookup.setdefault(spelling, i)
    return lookup


def read_offer(
    value: str, resources: Sequence[str], lookup: Mapping[str, int]
) -> tuple[tuple[Bundle, Bundle] | None, str | None]:
    """(gives, gets) from a lower-case reply such as ``offer: give 2 wood for 1
    sheep``, or None and feedback that says what to fix. Whether the players
    hold those units is the game's business."""
    match = _OFFER.match(value)
    if match is None:
        return None, f"Could not read {quote_for_feedback(value, 50)} as a move."
    bundles = []
    for side in (match.group(1), match.group(2)):
        amounts = [0] * len(resources)
        for item in _BUNDLE_SPLIT.split(side):
            if not item:
                continue
            found = _ITEM.match(item)
            index = lookup.get(found.group(2)) if found is not None else None
            if found is None or index is None:
                return None, (
                    f"Could not read {quote_for_feedback(item, 30)} in your offer: each "
                    f"item is '<n> <Resource>' with a resource from {', '.join(resources)}."
                )
            amounts[index] += int(found.group(1))
        if not any(amounts):
            return None, "Both sides of an offer need at least one unit of a resource."
        bundles.append(tuple(amounts))
    gives, gets = bundles
    both = [resources[i] for i in range(len(gives)) if gives[i] and gets[i]]
    if both:
        return None, f"{both[0]} is on both sides of your offer; put each resource on one side."
    return (gives, gets), None
