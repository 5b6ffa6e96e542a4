r"""One field of a JSON line as Spark's JSONL reader takes it, without a JVM: Spark's
``get_json_object(line, "$['FIELD']")`` (the document) and ``json_object_keys(line)`` (null: the row is malformed),
reproduced in Python for :mod:`pipelines.inprocess.read` and the tokenize job's direct JSONL read
(:mod:`pipelines.read.jsonl_read`).

Spark decodes the line's bytes with Java's UTF-8 decoder (each invalid sequence becomes one U+FFFD, by Java's rule:
``ED A0 80`` is one, where Python's decoder makes three) and parses it with Jackson, single quotes and unescaped
control characters allowed (Spark enables both for Hive). What this module reproduces:

* the object: only the outermost ``{...}`` is parsed, text after it is ignored (``{"text": "a"} x`` -> ``a``);
  anything else (an array, a scalar, invalid JSON, a line of tabs) is malformed: ``(None, None)``;
* the field: the first non-null value of a repeated name; a string as its UTF-8 bytes (a lone surrogate escape
  gives null); any other value as Jackson writes it: compact JSON, non-ASCII kept except characters beyond the BMP
  (``\uD83D\uDE00``), floats as Java's ``Double.toString`` (``1e2`` -> ``100.0``, ``1e-4`` -> ``1.0E-4``, an
  overflow -> ``"Infinity"`` with its quotes), integers canonical (``-0`` -> ``0``);
* Jackson's limits: nesting depth 1000, names of 50,000 characters, numbers of 1,000 digits (beyond any: the line
  is malformed), a string value of 20,000,000 UTF-16 units (beyond: null).

Not reproduced: JDK 17's ``Double.toString`` prints a few doubles with more digits than needed (``5e-324`` ->
``4.9E-324``, ``2.82879384806159E17`` -> ``2.82879384806159008E17``); this module prints the shortest digits, as
JDK 19 and later do.

Python's ``json`` parses each line (in C); a line it refuses (single quotes, ``\'``, too deep) goes to a small
Jackson-like parser here. Example (hand-checkable)::

    >>> json_field(b'{"text": "a\\u00e9", "id": 1}', "text")
    (b'a\xc3\xa9', ['text', 'id'])
    >>> json_field(b"{'text': {'n': 1e2, 'm': [true]}}", "text")
    (b'{"n":100.0,"m":[true]}', ['text'])
    >>> json_field(b'{"id": 1}', "text"), json_field(b'not json', "text")
    ((None, ['id']), (None, None))
"""

from __future__ import annotations

import codecs
import json
import math
import re
from decimal import Decimal
from typing import Sequence

MAX_DEPTH = 1000
MAX_NAME = 50_000
MAX_NUMBER = 1000
MAX_STRING = 20_000_000


class _Object(list):
    """A JSON object as its ``(name, value)`` pairs, in order, repeated names kept (Jackson copies them so)."""


class _Int:
    """An integer's JSON text."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


class _Float(_Int):
    """A number's JSON text that has a fraction or an exponent."""


class _JacksonError(ValueError):
    """What Jackson refuses: the line is malformed."""


def json_field(line: bytes, field: str) -> tuple[bytes | None, list[str] | None]:
    """``(value, names)`` of one JSON line: ``value`` is Spark's ``get_json_object(line, "$['field']")`` as UTF-8
    bytes (``None``: null), ``names`` its ``json_object_keys(line)``, the object's names in order (``None``: the
    line is not a JSON object, a malformed row). See the module docstring for what is reproduced."""
    values, names = json_fields(line, (field,))
    return values[0], names


def json_fields(line: bytes, fields: Sequence[str]) -> tuple[list[bytes | None], list[str] | None]:
    """:func:`json_field` for several fields of one line, parsed once: ``([value of each field], names)``.
    ``json_fields(b'{"text": "a", "id": 7}', ["text", "id", "url"])`` -> ``([b'a', b'7', None], ['text', 'id'])``;
    a malformed line -> ``([None, None, None], None)``."""
    text = codecs.decode(line, "utf-8", _JAVA_REPLACE)
    start = len(text) - len(text.lstrip(" \t\n\r"))
    if not text.startswith("{", start):
        return [None] * len(fields), None
    try:
        try:
            tree, _ = _DECODER.raw_decode(text, start)
            if len(text) > 2 * MAX_DEPTH:
                _check_limits(tree)
        except _JacksonError:
            raise
        except (ValueError, RecursionError):
            tree = _parse_object(text, start)
    except _JacksonError:
        return [None] * len(fields), None
    return [_field_bytes(tree, field) for field in fields], [name for name, _ in tree]


# ---------------------------------------------------------------------------------------------- Java's decoder
_JAVA_REPLACE = "shardpiece-java-utf8"


def java_malformed_length(data: bytes, start: int) -> int:
    """How many bytes Java's UTF-8 decoder replaces by one U+FFFD at ``start``, the first byte of an invalid
    sequence in ``data`` (the whole input). ``java_malformed_length(b"\\xed\\xa0\\x80", 0)`` -> ``3`` (an encoded
    surrogate); ``java_malformed_length(b"\\xe4\\xb8x", 0)`` -> ``2``; ``java_malformed_length(b"\\xff", 0)`` -> 1."""
    lead, left = data[start], len(data) - start

    def continuation(k: int) -> bool:
        return k < left and data[start + k] & 0xC0 == 0x80

    if 0xE0 <= lead <= 0xEF:
        bad_second = left > 1 and ((lead == 0xE0 and data[start + 1] & 0xE0 == 0x80) or not continuation(1))
        if left < 3:
            return 1 if bad_second else left
        return 1 if bad_second else 2 if not continuation(2) else 3
    if 0xF0 <= lead <= 0xF7:
        second = data[start + 1] if left > 1 else 0x80
        bad_second = lead > 0xF4 or (left > 1 and (
            (lead == 0xF0 and not 0x90 <= second <= 0xBF) or (lead == 0xF4 and second & 0xF0 != 0x80)
            or not continuation(1)))
        if bad_second:
            return 1
        if left > 2 and not continuation(2):
            return 2
        return left if left < 4 else 3
    return 1


def _java_replace(error: UnicodeError):
    if not isinstance(error, UnicodeDecodeError):
        raise error
    return "\ufffd", error.start + java_malformed_length(error.object, error.start)


codecs.register_error(_JAVA_REPLACE, _java_replace)


# ---------------------------------------------------------------------------------------------- parsing
def _int_text(text: str) -> _Int:
    if len(text) - text.startswith("-") > MAX_NUMBER:
        raise _JacksonError("an integer of more than 1000 digits")
    return _Int(text)


def _float_text(text: str) -> _Float:
    if len(text) > MAX_NUMBER and sum(ch.isdigit() for ch in text) > MAX_NUMBER:
        raise _JacksonError("a number of more than 1000 digits")
    return _Float(text)


def _reject_constant(name: str):
    raise _JacksonError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(object_pairs_hook=_Object, parse_int=_int_text, parse_float=_float_text,
                            parse_constant=_reject_constant, strict=False)


def _check_limits(tree: _Object) -> None:
    """Jackson's nesting and name-length limits, for a tree Python's parser accepted."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _JacksonError("nested too deep")
        pairs = node if type(node) is _Object else (("", value) for value in node)
        for name, value in pairs:
            if len(name) > MAX_NAME:
                raise _JacksonError("a name too long")
            if isinstance(value, list):
                stack.append((value, depth + 1))


_SPACE = re.compile(r"[ \t\n\r]*")
_STRINGS = {'"': re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"', re.S), "'": re.compile(r"'([^'\\]*(?:\\.[^'\\]*)*)'", re.S)}
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.S)
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "'": "'"}
_SURROGATE = re.compile("[\ud800-\udfff]")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS = (("true", True), ("false", False), ("null", None))


def _parse_object(text: str, start: int) -> _Object:
    """The object at ``text[start] == "{"``, parsed as Spark's Jackson parser does (iteratively: no recursion
    limit); raises :class:`_JacksonError` where Jackson fails."""
    stack: list[list] = []
    names: list[str] = []
    pos = start
    while True:
        pos = _SPACE.match(text, pos).end()
        char = text[pos:pos + 1]
        if char in ("{", "["):
            if len(stack) >= MAX_DEPTH:
                raise _JacksonError("nested too deep")
            stack.append(_Object() if char == "{" else [])
            pos = _SPACE.match(text, pos + 1).end()
            if text.startswith("}" if char == "{" else "]", pos):
                pos, value = pos + 1, stack.pop()
            else:
                if char == "{":
                    name, pos = _name(text, pos)
                    names.append(name)
                continue
        elif char in ('"', "'"):
            value, pos = _string(text, pos, char)
        else:
            value, pos = _scalar(text, pos)
        while True:  # attach the finished value, then close the containers that end here
            if not stack:
                return value
            parent = stack[-1]
            is_object = type(parent) is _Object
            parent.append((names.pop(), value) if is_object else value)
            pos = _SPACE.match(text, pos).end()
            char = text[pos:pos + 1]
            if char == ",":
                pos += 1
                if is_object:
                    name, pos = _name(text, _SPACE.match(text, pos).end())
                    names.append(name)
                break
            if char != ("}" if is_object else "]"):
                raise _JacksonError(f"unexpected {char!r} at {pos}")
            pos, value = pos + 1, stack.pop()


def _name(text: str, pos: int) -> tuple[str, int]:
    quote = text[pos:pos + 1]
    if quote not in ('"', "'"):
        raise _JacksonError(f"a name expected at {pos}")
    name, pos = _string(text, pos, quote)
    if len(name) > MAX_NAME:
        raise _JacksonError("a name too long")
    pos = _SPACE.match(text, pos).end()
    if not text.startswith(":", pos):
        raise _JacksonError(f"':' expected at {pos}")
    return name, pos + 1


def _string(text: str, pos: int, quote: str) -> tuple[str, int]:
    match = _STRINGS[quote].match(text, pos)
    if match is None:
        raise _JacksonError(f"an unterminated string at {pos}")
    body = match.group(1)
    if "\\" in body:
        body = _ESCAPE.sub(_unescape, body)
        if _SURROGATE.search(body):  # escaped pairs make one character, as in Java's UTF-16 strings
            body = body.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return body, match.end()


def _unescape(match: re.Match) -> str:
    code = match.group(1)
    if len(code) == 5:
        return chr(int(code[1:], 16))
    if code not in _ESCAPES:
        raise _JacksonError(f"an invalid escape \\{code}")
    return _ESCAPES[code]


def _scalar(text: str, pos: int):
    match = _NUMBER.match(text, pos)
    if match is not None:
        number = match.group(0)
        return (_float_text(number) if match.group(1) or match.group(2) else _int_text(number)), match.end()
    for word, value in _LITERALS:
        if text.startswith(word, pos):
            return value, pos + len(word)
    raise _JacksonError(f"a value expected at {pos}")


# ---------------------------------------------------------------------------------------------- writing
def _field_bytes(tree: _Object, field: str) -> bytes | None:
    for name, value in tree:
        if name == field and value is not None:
            break
    else:
        return None
    try:
        if type(value) is str:
            _check_string(value)
            return value.encode("utf-8")  # a lone surrogate fails here, as in Jackson's raw write
        return jackson_json(value).encode("utf-8")
    except (UnicodeEncodeError, _JacksonError):
        return None


def _check_string(text: str) -> None:
    if len(text) > MAX_STRING // 2 and len(text.encode("utf-16-le", "surrogatepass")) // 2 > MAX_STRING:
        raise _JacksonError("a string of more than 20,000,000 characters")


_NEEDS_ESCAPE = re.compile("[\x00-\x1f\"\\\\\ud800-\udfff\U00010000-\U0010ffff]")
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _escape_char(match: re.Match) -> str:
    char = match.group(0)
    if char in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[char]
    code = ord(char)
    if code > 0xFFFF:
        code -= 0x10000
        return "\\u%04X\\u%04X" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))
    return "\\u%04X" % code


def _quote(text: str) -> str:
    _check_string(text)
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, text) + '"'


def jackson_json(value) -> str:
    """A parsed value written back as Jackson's generator copies it (``copyCurrentStructure``): compact, names and
    strings escaped Jackson's way. ``jackson_json(_Object([("a", [_Float("1e2"), None, "\\n"])]))`` ->
    ``{"a":[100.0,null,"\\n"]}``."""
    out: list[str] = []
    stack = [["", iter((value,)), True, False]]  # closing text, items left, first item?, items are (name, value)?
    while stack:
        frame = stack[-1]
        item = next(frame[1], stack)
        if item is stack:
            out.append(frame[0])
            stack.pop()
            continue
        if not frame[2]:
            out.append(",")
        frame[2] = False
        if frame[3]:
            name, item = item
            out.append(_quote(name) + ":")
        if type(item) is _Object:
            out.append("{")
            stack.append(["}", iter(item), True, True])
        elif isinstance(item, list):
            out.append("[")
            stack.append(["]", iter(item), True, False])
        else:
            out.append(_scalar_json(item))
    return "".join(out)


def _scalar_json(value) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if type(value) is _Int:
        return str(int(value.text))
    if type(value) is _Float:
        return java_double(float(value.text))
    return _quote(value)


def java_double(value: float) -> str:
    """Java's ``Double.toString`` (shortest digits): plain between 1e-3 and 1e7, else ``d.dddE±n``; infinities as
    Jackson writes them, quoted. ``java_double(100.0)``, ``java_double(1e-4)``, ``java_double(1e20)`` ->
    ``'100.0'``, ``'1.0E-4'``, ``'1.0E20'``."""
    if math.isinf(value):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    point = len(digit_tuple) + exponent - 1  # the first digit's power of ten
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    if -3 <= point < 7:
        if point >= 0:
            whole = digits[:point + 1].ljust(point + 1, "0")
            text = f"{whole}.{digits[point + 1:] or '0'}"
        else:
            text = "0." + "0" * (-point - 1) + digits
    else:
        text = f"{digits[0]}.{digits[1:] or '0'}E{point}"
    return "-" + text if sign else text
