"""``--where``: the parsed filter keeps exactly the rows SQL's three-valued logic keeps (checked against a plain
Python evaluator on random tables with nulls), its normal spelling parses back to itself, and text outside the
dialect is refused with the dialect shown."""

from __future__ import annotations

import random
import re

import pyarrow as pa
import pytest

from pipelines.read.row_filter import parse_row_filter
from tokenizer.errors import ConfigError

LANGS = ["en", "zh", "ja", "it's", None]


def unknown_and(a, b):
    return False if a is False or b is False else (None if a is None or b is None else True)


def unknown_or(a, b):
    return True if a is True or b is True else (None if a is None or b is None else False)


def evaluate(node, row):
    """SQL's three-valued logic over a row, written plainly: True, False or None (unknown)."""
    kind = node[0]
    if kind == "and":
        result = True
        for part in node[1]:
            result = unknown_and(result, evaluate(part, row))
        return result
    if kind == "or":
        result = False
        for part in node[1]:
            result = unknown_or(result, evaluate(part, row))
        return result
    if kind == "not":
        value = evaluate(node[1], row)
        return None if value is None else not value
    if kind == "isnull":
        return row[node[1]] is None
    if kind == "notnull":
        return row[node[1]] is not None
    value = row[node[1] if kind in ("in", "between") else node[2]]
    if value is None:
        return None
    if kind == "in":
        return value in node[2]
    if kind == "between":
        return node[2] <= value <= node[3]
    op, literal = node[1], node[3]
    return {"=": value == literal, "!=": value != literal, "<": value < literal, "<=": value <= literal,
            ">": value > literal, ">=": value >= literal}[op]


def random_node(rng, depth=0):
    if depth < 2 and rng.random() < 0.5:
        kind = rng.choice(["and", "or", "not"])
        if kind == "not":
            return ("not", random_node(rng, depth + 1))
        return (kind, [random_node(rng, depth + 1) for _ in range(rng.randint(2, 3))])
    column = rng.choice(["lang", "quality"])
    value = (lambda: rng.choice(LANGS[:4])) if column == "lang" else (lambda: round(rng.uniform(0, 1), 1))
    kind = rng.choice(["compare", "in", "between", "isnull", "notnull"])
    if kind == "compare":
        return ("compare", rng.choice(["=", "!=", "<", "<=", ">", ">="]), column, value())
    if kind == "in":
        return ("in", column, [value() for _ in range(rng.randint(1, 3))])
    if kind == "between":
        low, high = sorted([value(), value()])
        return ("between", column, low, high)
    return (kind, column)


def test_random_filters_keep_what_sqls_logic_keeps():
    from pipelines.read.row_filter import _text

    rng = random.Random(20261207)
    for _ in range(300):
        rows = [{"lang": rng.choice(LANGS), "quality": rng.choice([None, 0.1, 0.5, 0.7, 0.9]), "id": i}
                for i in range(20)]
        table = pa.Table.from_pylist(rows)
        node = random_node(rng)
        parsed = parse_row_filter(_text(node))
        kept = parsed.apply(table).column("id").to_pylist()
        assert kept == [row["id"] for row in rows if evaluate(node, row) is True], parsed.text
        assert parse_row_filter(parsed.text).text == parsed.text  # the normal spelling is a fixed point


def test_the_spellings_and_columns():
    parsed = parse_row_filter("LANG = 'it''s' and \"my col\" is not null OR x <> 3 AND y not between 1 and 2")
    assert parsed.text == "((LANG = 'it''s' AND \"my col\" IS NOT NULL) OR (x != 3 AND NOT y BETWEEN 1 AND 2))"
    assert parsed.columns == ("LANG", "my col", "x", "y")
    assert parse_row_filter(None) is None and parse_row_filter("  ") is None


@pytest.mark.parametrize("text, why", [("lang =", "expected a literal"), ("lang = 'en' quality", "unexpected"),
                                       ("x LIKE 'a%'", "expected a comparison"), ("(a = 1", "expected )"),
                                       ("a = 1 AND", "expected word"), ("a NOT = 1", "NOT after a column")])
def test_text_outside_the_dialect_is_refused_showing_it(text, why):
    with pytest.raises(ConfigError, match=re.escape(why)) as error:
        parse_row_filter(text)
    assert "IN (...), BETWEEN ... AND ..., IS [NOT] NULL" in str(error.value)


def test_a_missing_column_names_the_ones_there_are():
    with pytest.raises(ConfigError, match="no column 'lang' in the input \\(its columns: text\\)"):
        parse_row_filter("lang = 'en'").apply(pa.table({"text": ["a"]}))
