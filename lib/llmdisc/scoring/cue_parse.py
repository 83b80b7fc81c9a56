"""Read the claims of one cue string: :func:`parse_claims` turns sentences into :class:`~.cue_claims.Claim`.

Each segment (bullet line or sentence) is read for attributes (:func:`attributes`), row numbers and quantifier
words (category values masked): a quantity ("only one", "most", "several", "3 rows"), presence or absence ("there
is a", "no row", "absent"), rows selected by attributes ("every Husband is Male", "Bachelors always maps to 13",
"whenever ..., ..."), or a fact of a column or table. Conservative: what it cannot tie to a column and a value is
no claim, nor is a statement about data in general ("in real data ... typically").
"""

from __future__ import annotations

import re
from typing import Any

from llmdisc.scoring.cue_claims import Claim, TableVocabulary

_NUMBER = r"-?\d+(?:\.\d+)?"
_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
          "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")
_COUNT_WORD = rf"(\d+|{'|'.join(_WORDS)})"
_NUMBER_OF = {"twice": 2, "thrice": 3, **{w: i for i, w in enumerate(_WORDS)}}
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
             "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth",
             "eighteenth", "nineteenth", "twentieth")
_ROWS = re.compile(r"\b(?:rows?|records?|entry|entries)\s*#?\s*((?:\d+\s*(?:,|and|&|-)?\s*)+)", re.I)
_ORDINAL_ROW = re.compile(rf"\b(?:(\d{{1,3}})(?:st|nd|rd|th)|({'|'.join(_ORDINALS)}))\s+(?:row|record|entry)\b",
                          re.I)
_ROW_NOUN = r"(?:row|record|entry|person|individual|respondent)"
_PEOPLE = r"(?:rows|records|entries|people|individuals|persons|respondents|cases)"
_NEGATION = re.compile(r"\b(no|not|never|none|without|absence|absent|lack|lacks|cannot|free of)\b", re.I)
_INCONSISTENT = re.compile(r"inconsisten|mismatch|incorrect|violat|not making sense|n[o']t make sense|breakdown|"
                           r"broken|problem|wrong|does not match|failure", re.I)
_CONSISTENT = re.compile(r"consisten|perfect|one-to-one|well-maintained|always map|maintain", re.I)
_LINK = re.compile(r"\b(with|but|paired|combination|combined|together|contradict\w*)\b", re.I)
_DUPLICATES = re.compile(r"duplicat|\b(?:rows?|records?)\b[^.]{0,40}\b(?:are|is)\s+identical|"
                         r"identical\s+(?:rows|records)|repeated\s+(?:rows|records)", re.I)
_SINGLE = re.compile(r"uniformly|only (a )?single|single unique|consistent value of|all \d+ (displayed |provided |"
                     r"sample )?rows|same value|(?:has|have|takes?|shows?) (?:only )?(?:a|one) single value|"
                     r"(?:has|have|takes?|shows?) (?:only|just) (?:one|a single) (?:unique |distinct )?value")
# quantifier words, read with the category values masked as '#'
_NOT_ALL = re.compile(r"\bnot\s+(?:every|all|each|most|only)\b", re.I)
_ONE = re.compile(rf"\b(?:only|just|exactly)\s+(?:one|1|a\s+single)\s+(?:{_ROW_NOUN}\b|#)|\ba\s+single\s+{_ROW_NOUN}\b|"
                  rf"\bthe\s+only\s+{_ROW_NOUN}\b|\b(?:only|exactly|just)\s+once\b|"
                  r"\b(?:appears?|occurs?|shows?\s+up)\s+once\b", re.I)
_EVERY = re.compile(rf"\b(?:every|each)\s+(?:single\s+)?{_ROW_NOUN}\b|\ball\s+(?:of\s+)?(?:the\s+)?(?:\d+\s+)?"
                    rf"(?:shown\s+|displayed\s+|sample\s+|provided\s+)?{_PEOPLE}\b", re.I)
_MOST = re.compile(r"\b(?:most|the\s+majority\s+of|a\s+majority\s+of|the\s+bulk\s+of|more\s+than\s+half\s+of|"
                   r"over\s+half\s+of)\s+(?:of\s+)?(?:the\s+)?(?:\w+s|people|sample|table|data)\b|\bmostly\b|"
                   r"\bpredominantly\b", re.I)
_AT_LEAST = re.compile(rf"\b(?:several|multiple|more\s+than\s+one)\s+(?:of\s+the\s+)?(?:(?:\S+\s+)?{_PEOPLE}\b|#)|"
                       rf"\bat\s+least\s+{_COUNT_WORD}\b|\bmore\s+than\s+once\b|"
                       r"\b(?:appears?|occurs?)\s+(?:several|multiple)\s+times\b", re.I)
_APPEARS = re.compile(r"\b(?:appears?|appeared|appearing|occurs?|occurred|occurring|shows?\s+up|is\s+present|"
                      r"are\s+present)\b(?=\s*(?:$|[.,;:)]|in\b|\d|once|twice|only|exactly|just|at least|several|"
                      r"multiple|times|\w+\s+times))", re.I)
# some shown row has the attributes: "there is a 63-year-old ...", "the sample contains a ...", "a Husband ..."
_EXISTS = re.compile(r"^(?:there\s+(?:is|are)\s+)?(?:a|an|one|someone|somebody)\b|\bthere\s+(?:is|are|was|were)\s+"
                     r"(?:a|an|one|some)\b|\b(?:contains?|includes?)\s+(?:a|an|one|some|someone|somebody)\b|"
                     r"\b(?:sample|table|data)\s+(?:has|have|shows?|lists?)\s+(?:a|an|one|some)\b|"
                     r"\bone\s+of\s+the\s+(?:rows|records|people|individuals)\b|\bpresent\s+in\b", re.I)
_NO_VALUE = r"\s+(?:any\s+)?(?:\S+\s+)?(?:#|\d)"  # right before a (masked) value or a number
_NONE = re.compile(rf"^no{_NO_VALUE}|\bno\s+(?:\S+\s+)?{_ROW_NOUN}s?\b|\bnobody\b|\bno\s+one\b|\bnone\s+of\s+the\b|"
                   r"\bnever\s+(?:appears?|occurs?)\b|\bdo(?:es)?(?:n't|\s+not)\s+(?:appear|occur|contain|include|"
                   r"show)\b|\bnot\s+(?:present|among)\b|\b(?:is|are)\s+absent\b|\babsent\s+from\b|"
                   rf"\black(?:s|ing)?{_NO_VALUE}|\b(?:there\s+(?:is|are|were|was)|has|have|contains?|includes?|"
                   rf"shows?)\s+no{_NO_VALUE}", re.I)
_COUNT = re.compile(rf"\b{_COUNT_WORD}\s+times\b|\b(twice|thrice)\b|\bin\s+{_COUNT_WORD}\s+{_PEOPLE}\b|"
                    rf"\b(?!one\s+of\b){_COUNT_WORD}\s+(?:of\s+the\s+(?:\d+\s+)?)?{_PEOPLE}\s+(?:have|has|with|are|"
                    r"is|were|show|contain|list|earn|work|hold|report)\b", re.I)
# the rows shown ("the sample has 20 rows"), not the source table's ("a dataset of 32561 rows")
_ROW_COUNT = re.compile(rf"\b(?:sample|there)\b[^.\d]{{0,25}}?\b(?:has|have|contains?|consists\s+of|of|are|is|with|"
                        rf"shows?|includes?)\s+{_COUNT_WORD}\s+(?:rows|records|entries)\b", re.I)
# quantifier words in the order they are tried: (pattern, kind, quantifier, count; a number read wins)
_QUANTITIES = ((_ONE, "one_row", "exactly", 1), (_EVERY, "every_row", "every", None),
               (_MOST, "most_rows", "most", None), (_AT_LEAST, "appears", "at_least", 2),
               (_NONE, "appears", "none", None), (_COUNT, "appears", "exactly", None))
# quantifier words before the attributes that select the rows a claim is about: "every Husband", "only one Wife"
_SELECTORS = ((re.compile(r"\b(?:every|each|all)\s+(?:of\s+the\s+)?", re.I), "conditional", "every", None),
              (re.compile(r"\b(?:most|the\s+majority\s+of|more\s+than\s+half\s+of)\s+(?:the\s+)?", re.I), "most_rows",
               "most", None),
              (re.compile(r"\b(?:only|just|exactly)\s+(?:one|a\s+single)\s+", re.I), "one_row", "exactly", 1),
              (re.compile(r"\b(?:several|multiple)\s+", re.I), "appears", "at_least", 2))
_SELECTED_BY_VALUE = re.compile("|".join(f"(?:{form.pattern})#" for form, *_ in _SELECTORS), re.I)
_ALWAYS = re.compile(r"\b(?:always|invariably|without\s+exception)\b", re.I)
_CONDITION = re.compile(r"^\s*(?:if|whenever|when|wherever)\b([^,]+),", re.I)
_VERB = re.compile(r"\b(?:is|are|was|were|has|have|earns?|works?|holds?|shows?|lists?|reports?|maps?\s+to|"
                   r"go(?:es)?\s+with|comes?\s+with|pairs?\s+with|corresponds?\s+to)\b", re.I)
# data in general ("in real data gains are typically 15024"): no claim about the rows shown
_GENERAL = re.compile(r"\b(?:typically|usually|commonly|in real|real-world|in the original|would be|expected|"
                      r"should|normally)\b", re.I)
_LIST = re.compile(r"(?:e\.g\.,?|like|such as|values? of|(?:values?\s+)?includ(?:e|es|ing)|values?|has|have|"
                   r"are(?: predominantly)?|exclusively)\s*:?\s*"
                   r"\(?((?:'?-?\d+(?:\.\d+)?'?\s*,\s*)*(?:and\s+|or\s+)?'?-?\d+(?:\.\d+)?'?)(?!\d|\.\d)(?!-year)"
                   r"(?!\s*(?:%|rows|hours|unique|distinct|years|out of))")
# a statistic of the C2 metadata block ("Shapiro-Wilk p=0.4529", "r=0.33"): its number is no shown value
_STATISTIC = re.compile(r"\b(max|maximum|min|minimum|mean|median|average|std|unique|distinct|count|number of|"
                        r"percentile|p\d\d|skewness|kurtosis|shapiro|p-?values?|correlat\w*)\b|\br\s*=", re.I)


def cue_segments(text: str) -> list[str]:
    """Split a cue string into bullet lines and sentences, and after each "(row N)" of a sentence."""
    out = [piece for part in re.split(r"\n+|(?<=[.!?])\s+(?=[A-Z*])|\s\*\s+", text)
           for piece in re.split(r"(?<=\(row \d\))|(?<=\(row \d\d\))", part, flags=re.I)]
    return [p.strip(" *-\t,;") for p in out if p and p.strip(" *-\t,;")]


def _number(m: re.Match) -> int:
    """The first number a match read, in digits or words ("3", "three", "twice"); -1 for anything else."""
    text = next(g for g in m.groups() if g).lower()
    return int(text) if text.isdigit() else _NUMBER_OF.get(text, -1)


def attributes(seg: str, vocab: TableVocabulary) -> list[tuple[int, str, Any]]:
    """(position, column, value) of every attribute a segment names, in order.

    Category values (unambiguous ones anywhere, any value after its column's name: "race White"), numbers after a
    numeric column's name ("age = 20"; not a range, not "age (17-90)") and the dataset's number phrases.
    """
    found = [(m.start(), *vocab.value_index[m.group(1).lower()])
             for m in (vocab.value_pattern.finditer(seg) if vocab.value_pattern is not None else ())]
    for col, values in vocab.column_values.items():
        for name in vocab.column_patterns[col].finditer(seg):
            m = re.match(r"['\"]?\s*(?:=|:|is|are|of|was)?\s*['\"]?([^\s'\",.;:()]+)", seg[name.end():])
            if m and m.group(1).lower() in values:
                found.append((name.start(), col, values[m.group(1).lower()]))
    for col in vocab.numeric:
        for name in vocab.column_patterns[col].finditer(seg):
            after = seg[name.end():name.end() + 30]
            hit = re.match(rf"['\"]?\s*(?:=|:|is|are|of|was)?\s*(?:mostly |predominantly |always )?['\"]?"
                           rf"({_NUMBER}|zero\b)(?![\d.]*\s*(?:-|to)\s*\d)", after, re.I)
            if hit and not re.match(r"\s*\(", after):
                found.append((name.start(), col, 0.0 if hit.group(1).lower() == "zero" else float(hit.group(1))))
    named = {col for _, col, _ in found}
    found += [(m.start(), col, float(m.group(1))) for col, patterns in vocab.literals.number_phrases.items()
              if col in vocab.numeric and col not in named for p in patterns for m in p.finditer(seg)]
    return sorted(found, key=lambda a: a[0])


def _as_dict(found: list[tuple[int, str, Any]]) -> dict[str, Any]:
    """``{column: value}``; a column named with two values is no one row's claim and is left out."""
    out: dict[str, Any] = {}
    for _, col, value in found:
        out[col] = value if out.get(col, value) == value else None
    return {k: v for k, v in out.items() if v is not None}


def _row_numbers(seg: str) -> tuple[int, ...]:
    bodies = [m.group(1) for m in _ROWS.finditer(seg)]  # "rows 3-5, 8": a span and single numbers
    rows = [r for b in bodies for lo, hi in re.findall(r"(\d+)\s*-\s*(\d+)", b) for r in range(int(lo), int(hi) + 1)]
    rows += [int(x) for b in bodies for x in re.findall(r"\d+", re.sub(r"\d+\s*-\s*\d+", " ", b))]
    rows += [int(m.group(1)) if m.group(1) else _ORDINALS.index(m.group(2).lower()) + 1
             for m in _ORDINAL_ROW.finditer(seg)]
    return tuple(sorted(set(r for r in rows if 1 <= r <= 1000)))


def parse_claims(text: Any, vocab: TableVocabulary, *, condition: str | None = None) -> list[Claim]:
    """Every checkable claim in one cue string (none for a non-string), in order of appearance.

    ``vocab`` is the vocabulary of the real table the sample came from; under ``condition`` C2 a range without
    the word "sample" has ``scope="unclear"``.
    """
    if not isinstance(text, str) or not text.strip():
        return []
    claims: list[Claim] = []
    whole = text.replace("`", "'").replace("**", "").replace("\u2019", "'")
    low = whole.lower()
    if re.search(r"missing values?|missing data|\bnulls?\b", low):
        present = not re.search(r"\b(no|lack|lacks|absence|absent|without|zero|none)\b[^.]{0,40}missing|"
                                r"missing[^.]{0,20}\b(none|absent)\b", low)
        claims.append(Claim("no_missing", negated=present, text=whole[:200]))
    if _DUPLICATES.search(low):
        claims.append(Claim("duplicates", negated=bool(_NEGATION.search(vocab.blank_values(low))), text=whole[:200]))
    code, number = vocab.literals.mapping or ("", "")
    pair = re.compile(rf"{re.escape(code)}'?\s*(and|vs\.?|versus|with|/|-)\s*'?{number.replace('_', '[ _-]?')}", re.I)
    for seg in cue_segments(whole):
        if code and pair.search(seg) and not any(c.kind == "mapping" for c in claims):
            broken = bool(_INCONSISTENT.search(seg)) and not re.search(r"\bno (\w+ )?inconsisten", seg, re.I)
            if broken or _CONSISTENT.search(seg):
                claims.append(Claim("mapping", values={code: number}, negated=broken, text=seg[:200]))
        claims.extend(_segment_claims(seg, vocab, condition))
    return claims


def _column_facts(seg: str, vocab: TableVocabulary, condition: str | None) -> list[Claim]:
    """Ranges, listed or invalid values and one-valued columns, tied to the column named before (not "like 'x'")."""
    out: list[Claim] = []
    cols = vocab.columns_in(seg)
    for pos, col in cols:
        window = seg[pos:pos + 140]
        m = (re.search(rf"(?:range[sd]?|spans?|spanning|from|\()\s*(?:from|of|:)?\s*\(?({_NUMBER})\s*(?:-|–|to|up to|"
                       rf"through)\s*({_NUMBER})(?!\.?\d)", window)
             or re.search(rf"between\s+({_NUMBER})\s+and\s+({_NUMBER})(?!\.?\d)", window)) if col in vocab.numeric \
            else None
        if m and not re.search(r"\d-year", window[m.start():m.end() + 6]):
            out.append(Claim("range", values={col: (float(m.group(1)), float(m.group(2)))}, text=seg[:200],
                             scope="sample" if ("sample" in window.lower() or condition != "C2") else "unclear"))
            continue
        m = _LIST.search(window)
        owners = [c for p, c in cols if p < pos + (m.start(1) if m else 0)
                  and not re.search(r"(similar to|like|as in|unlike)\s*'?$", seg[max(0, p - 14):p], re.I)]
        if m and owners and owners[-1] == col and not _STATISTIC.search(window[:m.start(1)]) \
                and not _GENERAL.search(window[:m.start(1)]):
            values = [float(v) for v in re.findall(_NUMBER, m.group(1))]
            invalid = re.search(r"not (a )?valid|invalid|do(es)? not exist|non-?existent|outside", seg, re.I)
            if col in vocab.numeric or invalid:
                out.append(Claim("invalid_values" if invalid else "listed_values", values={col: values},
                                 quantifier="some", text=seg[:200]))
        if _SINGLE.search(seg.lower()) and not any(c.kind == "single_value" for c in out):
            v = re.search(r"(?:value of|uniformly|value)\s*'?(-?\d+)'?", seg)
            value = float(v.group(1)) if v and col in vocab.numeric else None
            out.append(Claim("single_value", values={col: value}, text=seg[:200]))
    return out


def _quantifier(plain: str) -> tuple[str, str, int | None] | None:
    """(kind, quantifier, count) the words of a segment state, None if they state none."""
    if _NOT_ALL.search(plain):
        return None  # "not every row ...": no claim the checker can state
    for pattern, kind, quantifier, count in _QUANTITIES:
        if m := pattern.search(plain):
            count = _number(m) if any(m.groups()) else count
            if quantifier == "none" or count != 1 or kind == "one_row":
                return kind, quantifier, count
            return ("appears", "some", None) if quantifier == "at_least" else ("one_row", "exactly", 1)  # of 1
    if _APPEARS.search(plain) and _NEGATION.search(plain):
        return "appears", "none", None
    if _APPEARS.search(plain) or (_EXISTS.search(plain.strip()) and not _NEGATION.search(plain)
                                  and not _GENERAL.search(plain)):
        return "appears", "some", None
    return None


def _where_claim(seg: str, plain: str, found: list[tuple[int, str, Any]]) -> Claim | None:
    """A claim about the rows having some attributes: "every Husband is Male", "whenever A, B", "X always maps to Y"."""
    if _GENERAL.search(plain):
        return None
    kind, quantifier, count = "conditional", "every", None
    if m := _CONDITION.search(plain) or _ALWAYS.search(plain):
        split = m.end()
    else:
        for form, kind, quantifier, count in _SELECTORS:
            q = form.search(plain)
            verb = _VERB.search(plain, q.end()) if q else None
            if verb is not None and any(q.end() <= a[0] < verb.start() for a in found):
                found, split = [a for a in found if a[0] >= q.end()], verb.start()
                break
        else:
            return None
    where, values = _as_dict([a for a in found if a[0] < split]), _as_dict([a for a in found if a[0] >= split])
    if not where or not values or set(where) & set(values):
        return None
    return Claim(kind, values=values, where=where, quantifier=quantifier, count=count, text=seg[:200])


def _segment_claims(seg: str, vocab: TableVocabulary, condition: str | None) -> list[Claim]:
    out = _column_facts(seg, vocab, condition)
    found = attributes(seg, vocab)
    attrs, rows = _as_dict(found), _row_numbers(seg)
    if rows:
        return [*out, Claim("row_values", values=attrs, rows=rows, quantifier="every", text=seg[:200])] if attrs \
            else out
    if not attrs:
        m = _ROW_COUNT.search(seg)
        return [*out, Claim("row_count", quantifier="exactly", count=_number(m), text=seg[:200])] if m else out
    if any(c.kind in ("range", "listed_values", "invalid_values") for c in out):
        return out
    plain = vocab.blank_values(seg)
    claim = _where_claim(seg, plain, found) if len(attrs) >= 2 else None
    if claim is None and (m := _SELECTED_BY_VALUE.search(plain)) and _VERB.search(plain, m.end()):
        return out  # "most Husbands are White": the rows are selected, but not by what can be read
    stated = _quantifier(plain) if claim is None else None
    if stated is not None:
        kind, quantifier, count = stated
        if kind == "appears" and quantifier in ("some", "none") and len(attrs) >= 2:
            kind = "combination"  # some row (or none) has these values together
        claim = Claim(kind, values=attrs, quantifier=quantifier, count=count, text=seg[:200])
    cats = {c: v for c, v in attrs.items() if c not in vocab.numeric}
    if claim is None and len(cats) == 2 and _linked_pair(seg, vocab):
        claim = Claim("combination", values=cats, quantifier="none" if _NEGATION.search(plain) else "some",
                      text=seg[:200])
    if claim is None:
        return out
    # a single_value the quantified claim restates with its value
    return [*(c for c in out if not (c.kind == "single_value" and set(c.values) <= set(claim.values))), claim]


def _linked_pair(seg: str, vocab: TableVocabulary) -> bool:
    """True when the segment's two category values are written as one pair ("Female with Husband")."""
    spans = [m.span() for m in vocab.value_pattern.finditer(seg)] if vocab.value_pattern else []
    return len(spans) == 2 and (spans[1][0] - spans[0][1] <= 25 or bool(_LINK.search(seg[spans[0][1]:spans[1][0]])))
