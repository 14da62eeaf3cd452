"""RepoFix domain: a text-statistics library (words, sentences, frequencies)."""

from __future__ import annotations

import random

from envgym.envs.terminal.repofix.spec import Bug, Domain, Fix

NAMES = {
    "pkg": ("wordsmeter", "textmetrics", "prosestats", "lexitally"),
    "U": ("tokens", "textutil", "splitting"),
    "C": ("counting", "frequency", "wordstats"),
    "R": ("profile", "digest", "report"),
    "words": ("words", "tokenize", "word_list"),
    "sentences": ("sentences", "split_sentences", "sentence_list"),
    "ratio": ("ratio", "safe_ratio", "per"),
    "counts": ("counts", "word_counts", "frequencies"),
    "top": ("top", "most_common", "top_words"),
    "longest": ("longest", "longest_word", "max_word"),
    "mean": ("mean_length", "average_length", "avg_word_length"),
    "overview": ("overview", "describe", "stats"),
    "wps": ("words_per_sentence", "sentence_length", "mean_sentence"),
    "excerpt": ("excerpt", "preview", "teaser"),
}

TOKENS = '''"""Splitting text into words and sentences for $pkg."""

import re

WORD = re.compile(r"[A-Za-z']+")
SENTENCE_END = re.compile(r"(?<=[.!?])\\s+")


def $words(text):
    """The words of text (letters and apostrophes), lower case."""
    return [w.lower() for w in WORD.findall(text)]


def $sentences(text):
    """The sentences of text, split after . ! or ?; blank pieces dropped."""
    return [p for p in SENTENCE_END.split(text.strip()) if p]


def $ratio(part, whole, places=2):
    """part / whole rounded to places decimals; 0.0 when whole is 0."""
    if not whole:
        return 0.0
    return round(part / whole, places)
'''

COUNTING = '''"""Word frequencies."""

from .$U import $ratio, $words


def $counts(text):
    """How often each word occurs, as a dict in word order."""
    found = {}
    for w in $words(text):
        found[w] = found.get(w, 0) + 1
    return dict(sorted(found.items()))


def $top(text, n=3):
    """The n most frequent words, most frequent first, ties alphabetical."""
    ranked = sorted($counts(text).items(), key=lambda kv: (-kv[1], kv[0]))
    return [w for w, _ in ranked[:n]]


def $longest(text):
    """The longest word (the first of several as long); '' when there are none."""
    best = ""
    for w in $words(text):
        if len(w) > len(best):
            best = w
    return best


def $mean(text):
    """The mean word length, to 2 decimals."""
    found = $words(text)
    return $ratio(sum(len(w) for w in found), len(found))
'''

PROFILE = '''"""Whole-text reports."""

from .$C import $counts, $top
from .$U import $ratio, $sentences, $words


def $overview(text):
    """Word, sentence and distinct-word counts and the three top words."""
    return {
        "words": len($words(text)),
        "sentences": len($sentences(text)),
        "distinct": len($counts(text)),
        "top": $top(text, 3),
    }


def $wps(text):
    """Mean words per sentence, to 1 decimal."""
    return $ratio(len($words(text)), len($sentences(text)), 1)


def $excerpt(text, limit=8):
    """The first limit words of text, with ' ...' added when there were more."""
    pieces = text.split()
    if len(pieces) <= limit:
        return " ".join(pieces)
    return " ".join(pieces[:limit]) + " ..."
'''

VOCAB = (
    "the cat sat on the mat",
    "a dog ran far",
    "rain fell all day",
    "we don't know why",
    "it's late",
    "the sun rose",
    "birds sang loudly",
    "she wrote a long letter",
    "the river is wide",
    "they can't stay",
    "green hills roll on",
    "the old map was wrong",
    "time flies",
)
ENDS = (".", ".", "!", "?")


def text(rng: random.Random, n: int | None = None, ends=ENDS) -> str:
    chosen = [rng.choice(VOCAB) for _ in range(n or rng.randint(2, 4))]
    return " ".join(s[0].upper() + s[1:] + rng.choice(ends) for s in chosen)


def visible(rng):
    return [
        f"$C.$counts({text(rng)!r})",
        f"$C.$top({text(rng)!r}, {rng.randint(2, 4)})",
        f"$C.$longest({text(rng)!r})",
        f"$C.$mean({text(rng)!r})",
        f"$R.$overview({text(rng)!r})",
        f"$R.$wps({text(rng)!r})",
        f"$R.$excerpt({text(rng)!r}, {rng.randint(3, 9)})",
        f"$U.$words({text(rng, 1)!r})",
        f"$U.$sentences({text(rng)!r})",
    ]


def regression(rng):
    return [
        *(f"$C.$counts({text(rng)!r})" for _ in range(2)),
        f"$C.$top({text(rng, 5)!r}, {rng.randint(1, 5)})",
        f"$C.$longest({text(rng)!r})",
        f"$C.$mean({text(rng, 5)!r})",
        f"$R.$overview({text(rng, 5)!r})",
        f"$R.$wps({text(rng, 5)!r})",
        f"$R.$excerpt({text(rng)!r}, {rng.randint(2, 12)})",
        f"$U.$ratio({rng.randint(0, 50)}, {rng.randint(1, 9)}, {rng.randint(0, 3)})",
        f"$U.$sentences({text(rng, 5)!r})",
    ]


def _top(rng):
    return [f"$C.$top({text(rng, 5)!r}, {rng.randint(1, 5)})"]


def _tie(rng):
    a, b = rng.sample(("maple", "cedar", "birch", "alder", "larch", "aspen"), 2)
    return [f"$C.$longest({f'The {a} and the {b} grew tall.'!r})"]


def _excerpt(rng):
    words = text(rng, 4).split()
    n = rng.randint(2, len(words) - 1)
    return [f"$R.$excerpt({' '.join(words[:n])!r}, {n})"]


def _apostrophe(rng):
    return [f"$R.$overview({text(rng, 4) + ' We don' + chr(39) + 't mind.'!r})"]


def _question(rng):
    return [f"$R.$wps({text(rng, 2, ('?',)) + ' ' + text(rng, 2)!r})"]


def _empty(rng):
    wordless = rng.choice(("", "   ", "123 456", "... !!!", "42"))
    blank = rng.choice(("", " ", "\n", "\t "))
    return [f"$C.$mean({wordless!r})", f"$R.$wps({blank!r})"]


def _top_both(rng):
    return [f"$C.$top({text(rng, 5)!r}, {rng.randint(2, 5)})", f"$R.$overview({text(rng, 5)!r})"]


BUGS = (
    Bug(
        "textstats-top",
        "easy",
        "off-by-one",
        (Fix("C", "ranked[:n]]", "ranked[:n - 1]]"),),
        "`$top` returns one word fewer than asked for",
        _top,
        lambda rng: [_top(rng)[0] for _ in range(3)],
    ),
    Bug(
        "textstats-longest",
        "easy",
        "wrong comparison",
        (Fix("C", "if len(w) > len(best):", "if len(w) >= len(best):"),),
        "`$longest` picks the wrong word when two are equally long",
        _tie,
        lambda rng: [_tie(rng)[0] for _ in range(3)],
        "The docstring says the first of several equally long words wins.",
    ),
    Bug(
        "textstats-excerpt",
        "easy",
        "off-by-one in a comparison",
        (Fix("R", "if len(pieces) <= limit:", "if len(pieces) < limit:"),),
        "`$excerpt` adds ' ...' to a text that fits exactly",
        _excerpt,
        lambda rng: [_excerpt(rng)[0] for _ in range(3)],
    ),
    Bug(
        "textstats-apostrophe",
        "medium",
        "wrong pattern in a helper",
        (Fix("U", 'WORD = re.compile(r"[A-Za-z\']+")', 'WORD = re.compile(r"[A-Za-z]+")'),),
        "`$overview` counts too many words in text with contractions",
        _apostrophe,
        lambda rng: [_apostrophe(rng)[0] for _ in range(3)],
        '"don\'t" is one word, not two.',
    ),
    Bug(
        "textstats-question",
        "medium",
        "missing case in a helper",
        (Fix("U", "(?<=[.!?])", "(?<=[.!])"),),
        "`$wps` is wrong for text with questions",
        _question,
        lambda rng: [_question(rng)[0] for _ in range(3)],
        "A question mark ends a sentence too.",
    ),
    Bug(
        "textstats-empty",
        "hard",
        "missing edge case",
        (
            Fix(
                "U", "    if not whole:\n        return 0.0\n    return round(", "    return round("
            ),
        ),
        "`$mean` crashes on text without words",
        lambda rng: [_empty(rng)[0]],
        lambda rng: _empty(rng) + _empty(rng),
        "For text with no words (or no sentences) I'd expect 0.0, as the docstrings say.",
    ),
    Bug(
        "textstats-top-default",
        "hard",
        "wrong default in two places",
        (
            Fix("C", "def $top(text, n=3):", "def $top(text, n=2):"),
            Fix("R", '"top": $top(text, 3),', '"top": $top(text, 2),'),
        ),
        "`$top` without n returns two words, and `$overview` shows only two top words",
        lambda rng: [f"$C.$top({text(rng, 5)!r})"],
        lambda rng: [f"$C.$top({text(rng, 5)!r})", _top_both(rng)[1], _top_both(rng)[1]],
        "The docs say three, both for `$top`'s default and for the overview.",
    ),
)

DOMAIN = Domain(
    "textstats",
    "text-statistics",
    NAMES,
    {"U": TOKENS, "C": COUNTING, "R": PROFILE},
    visible,
    regression,
    BUGS,
)
