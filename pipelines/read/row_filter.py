"""``--where``: a row filter in the small SQL dialect a table scan pushes down, parsed once and applied by pyarrow.

Grammar (keywords in any case; a column is a name or a ``"quoted name"``; a literal is a ``'string'`` with ``''``
for a quote, a number, ``true``/``false``)::

    filter     := or
    or         := and ("OR" and)*
    and        := not ("AND" not)*
    not        := "NOT" not | "(" or ")" | predicate
    predicate  := column ("=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">=") literal
                | column ["NOT"] "IN" "(" literal ("," literal)* ")"
                | column "IS" ["NOT"] "NULL"
                | column ["NOT"] "BETWEEN" literal "AND" literal

:func:`parse_row_filter` gives a :class:`RowFilter`: its ``expression`` (a ``pyarrow.compute.Expression`` for
``Table.filter`` and dataset scans, which prune Parquet row groups by their statistics with it), the ``columns`` it
reads, and ``text``, the filter in one normal spelling (what a manifest records, so an incremental run can check it
is given the same filter). Comparisons with a null are not true (SQL's rule: such rows are dropped). Example::

    >>> f = parse_row_filter("lang = 'en' AND quality >= 0.5")
    >>> f.text, f.columns
    ("(lang = 'en' AND quality >= 0.5)", ('lang', 'quality'))
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tokenizer.errors import ConfigError

_TOKEN = re.compile(r"""\s*(?:(?P<string>'(?:[^']|'')*')|(?P<number>-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)
                       |(?P<quoted>"(?:[^"]|"")+")|(?P<op><=|>=|<>|!=|==|=|<|>|\(|\)|,)
                       |(?P<word>[A-Za-z_][A-Za-z0-9_.]*))""", re.VERBOSE)
_KEYWORDS = {"and", "or", "not", "in", "is", "null", "between", "true", "false"}
_COMPARE = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


@dataclass(frozen=True)
class RowFilter:
    """A parsed ``--where``: ``text`` (normal spelling), ``columns`` (sorted), ``expression`` (pyarrow)."""

    text: str
    columns: tuple[str, ...]
    expression: Any

    def apply(self, table: pa.Table) -> pa.Table:
        """The rows of ``table`` the filter keeps (a column it names must be in the table)."""
        missing = [c for c in self.columns if c not in table.column_names]
        if missing:
            raise ConfigError(f"--where {self.text}: no column {missing[0]!r} in the input (its columns: "
                              f"{', '.join(table.column_names)})")
        return table.filter(self.expression)


class _Parser:
    def __init__(self, text: str):
        self.source, self.tokens, self.at, self.columns = text, [], 0, set()
        position = 0
        while position < len(text):
            if text[position:].strip() == "":
                break
            match = _TOKEN.match(text, position)
            if not match or match.end() == position:
                self.fail(f"cannot read {text[position:].strip()[:20]!r}")
            kind = match.lastgroup
            value = match.group(kind)
            if kind == "word" and value.lower() in _KEYWORDS:
                kind, value = "keyword", value.lower()
            self.tokens.append((kind, value))
            position = match.end()

    def fail(self, why: str):
        raise ConfigError(f"--where {self.source!r}: {why}; write e.g. lang = 'en' AND quality >= 0.5 (=, !=, <, "
                          "<=, >, >=, IN (...), BETWEEN ... AND ..., IS [NOT] NULL, AND, OR, NOT, parentheses)")

    def peek(self, kind: str, value: str | None = None) -> bool:
        if self.at >= len(self.tokens):
            return False
        token_kind, token_value = self.tokens[self.at]
        return token_kind == kind and (value is None or token_value == value)

    def take(self, kind: str, value: str | None = None) -> str:
        if not self.peek(kind, value):
            found = self.tokens[self.at][1] if self.at < len(self.tokens) else "the end"
            self.fail(f"expected {value or kind} at {found!r}")
        self.at += 1
        return self.tokens[self.at - 1][1]

    def parse(self):
        if not self.tokens:
            self.fail("the filter is empty")
        node = self.or_()
        if self.at != len(self.tokens):
            self.fail(f"unexpected {self.tokens[self.at][1]!r}")
        return node

    def joined(self, keyword: str, part):
        """``part ("KEYWORD" part)*``: one node, or ``(keyword, [nodes])``."""
        parts = [part()]
        while self.peek("keyword", keyword):
            self.at += 1
            parts.append(part())
        return parts[0] if len(parts) == 1 else (keyword, parts)

    def or_(self):
        return self.joined("or", self.and_)

    def and_(self):
        return self.joined("and", self.not_)

    def not_(self):
        if self.peek("keyword", "not"):
            self.at += 1
            return ("not", self.not_())
        if self.peek("op", "("):
            self.at += 1
            node = self.or_()
            self.take("op", ")")
            return node
        return self.predicate()

    def column(self) -> str:
        if self.peek("quoted"):
            name = self.take("quoted")[1:-1].replace('""', '"')
        else:
            name = self.take("word")
        self.columns.add(name)
        return name

    def literal(self):
        if self.peek("string"):
            return self.take("string")[1:-1].replace("''", "'")
        if self.peek("number"):
            text = self.take("number")
            return float(text) if any(c in text for c in ".eE") else int(text)
        if self.peek("keyword", "true") or self.peek("keyword", "false"):
            return self.take("keyword") == "true"
        self.fail("expected a literal ('text', a number, true or false)")

    def predicate(self):
        name = self.column()
        negated = False
        if self.peek("keyword", "is"):
            self.at += 1
            negated = self.peek("keyword", "not")
            self.at += negated
            self.take("keyword", "null")
            return ("notnull" if negated else "isnull", name)
        if self.peek("keyword", "not"):
            self.at += 1
            negated = True
        if self.peek("keyword", "in"):
            self.at += 1
            self.take("op", "(")
            values = [self.literal()]
            while self.peek("op", ","):
                self.at += 1
                values.append(self.literal())
            self.take("op", ")")
            node = ("in", name, values)
        elif self.peek("keyword", "between"):
            self.at += 1
            low = self.literal()
            self.take("keyword", "and")
            node = ("between", name, low, self.literal())
        elif negated:
            self.fail("NOT after a column goes before IN or BETWEEN")
        else:
            if not self.peek("op") or self.tokens[self.at][1] not in _COMPARE:
                self.fail(f"expected a comparison after {name!r}")
            op = _COMPARE[self.take("op")]
            return ("compare", op, name, self.literal())
        return ("not", node) if negated else node


def _literal_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def _column_text(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name) and name.lower() not in _KEYWORDS \
        else '"' + name.replace('"', '""') + '"'


def _text(node) -> str:
    kind = node[0]
    if kind in ("and", "or"):
        return "(" + f" {kind.upper()} ".join(_text(part) for part in node[1]) + ")"
    if kind == "not":
        return f"NOT {_text(node[1])}"
    if kind in ("isnull", "notnull"):
        return f"{_column_text(node[1])} IS {'NOT ' if kind == 'notnull' else ''}NULL"
    if kind == "in":
        return f"{_column_text(node[1])} IN ({', '.join(_literal_text(v) for v in node[2])})"
    if kind == "between":
        return f"{_column_text(node[1])} BETWEEN {_literal_text(node[2])} AND {_literal_text(node[3])}"
    return f"{_column_text(node[2])} {node[1]} {_literal_text(node[3])}"


def _expression(node):
    kind = node[0]
    if kind == "and":
        result = _expression(node[1][0])
        for part in node[1][1:]:
            result = result & _expression(part)
        return result
    if kind == "or":
        result = _expression(node[1][0])
        for part in node[1][1:]:
            result = result | _expression(part)
        return result
    if kind == "not":  # NOT of an unknown (a null compared) stays unknown: the row is dropped, as in SQL
        return ~_expression(node[1])
    if kind == "isnull":
        return pc.field(node[1]).is_null()
    if kind == "notnull":
        return pc.field(node[1]).is_valid()
    if kind == "in":  # a null is in no list and not out of it (unknown), as in SQL
        field = pc.field(node[1])
        return pc.if_else(field.is_valid(), field.isin(node[2]), pa.scalar(None, pa.bool_()))
    if kind == "between":
        field = pc.field(node[1])
        return (field >= node[2]) & (field <= node[3])
    op, field, value = node[1], pc.field(node[2]), node[3]
    return {"=": field == value, "!=": field != value, "<": field < value, "<=": field <= value,
            ">": field > value, ">=": field >= value}[op]


def parse_row_filter(text: str | None) -> RowFilter | None:
    """The :class:`RowFilter` of ``--where TEXT`` (``None`` for no filter); a :class:`ConfigError` that shows the
    dialect for text it cannot read."""
    if text is None or not str(text).strip():
        return None
    parser = _Parser(str(text))
    node = parser.parse()
    return RowFilter(_text(node), tuple(sorted(parser.columns)), _expression(node))
