"""The grammar compiler (lib/grammar_regex.cpp, grammar_dfa.cpp, grammar_json.cpp,
run through build/host/grammartool) against Python: every DFA accepts exactly the
strings re.fullmatch(pattern, s, re.ASCII) accepts, on random patterns of the
documented subset and random strings; every text a JSON-schema DFA accepts parses
with json and satisfies the schema (checked by a small validator here, since
python3-jsonschema is not installed), and canonical valid instances are accepted;
integer bounds are exact; bad grammars get errors that name the place and the
reason. The expected answers come from Python, never from the code under test."""
import json
import os
import random
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "build", "host", "grammartool")


class Tool:
    """One grammartool process for the whole module: a command in, a line out."""

    def __init__(self):
        self.p = subprocess.Popen([TOOL], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def regex(self, pattern):
        return self.ask("R " + pattern.encode().hex())

    def schema(self, text):
        return self.ask("J " + text.encode().hex())

    def match(self, s):
        return self.ask("M " + s.encode().hex()) == "1"

    def generate(self, seed, max_len):
        r = self.ask(f"G {seed} {max_len}")
        return None if r == "none" else bytes.fromhex(r).decode()


@pytest.fixture(scope="module")
def tool():
    r = subprocess.run(["make", "-s", "build/host/grammartool"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    t = Tool()
    yield t
    t.p.stdin.close()
    t.p.wait()


# ---- regexes

LITERALS = ["a", "b", "c", "0", "1", "-", " ", "é", "\\.", "\\n", "\\x41", "\\(", "_"]
CLASSES = ["[a-c]", "[^a]", "[0-9a]", "[^0-9\\n]", "[-a]", "[a\\-z]", "\\d", "\\w", "\\s", "\\D", "\\W",
           "\\S", ".", "[]a]", "[^]b]"]
REPEATS = ["", "", "", "*", "+", "?", "{2}", "{0,2}", "{1,3}", "{2,}", "{,2}"]
ALPHABET = ["a", "b", "c", "0", "1", "-", " ", "é", ".", "\n", "A", "(", "_", "€", "]", "z", "\t"]


UNBOUNDED = ("*", "+", "{2,}")


def random_pattern(rng, depth=0, inner="any"):
    """A pattern of the subset. Inside a repeated group the repeats are
    restricted (inner: "any", "bounded", "none"): Python's backtracking
    matcher takes exponential time on (a*)* and its cousins, which the DFA
    does not care about, and the test must stay short."""
    def atom_and_repeat():
        r = rng.random()
        allowed = {"any": REPEATS, "bounded": [q for q in REPEATS if q not in UNBOUNDED], "none": [""]}[inner]
        rep = rng.choice(allowed)
        if depth < 2 and r < 0.25:
            sub = inner if not rep else ("none" if rep in UNBOUNDED else "bounded" if inner == "any" else "none")
            return "(" + random_pattern(rng, depth + 1, sub) + ")" + rep
        return (rng.choice(LITERALS) if r < 0.6 else rng.choice(CLASSES)) + rep

    def concat():
        return "".join(atom_and_repeat() for _ in range(rng.randint(0 if depth else 1, 4)))

    return "|".join(concat() for _ in range(rng.choice([1, 1, 2, 3])))


def test_dfa_matches_python_re_on_random_patterns(tool):
    rng = random.Random(43)
    patterns = strings = 0
    for _ in range(400):
        p = random_pattern(rng)
        compiled = re.compile(p, re.ASCII)
        r = tool.regex(p)
        if r == "error regex: more than 4096 DFA states (simplify the grammar)":
            continue   # a real blow-up of the subset construction (checked below to be rare)
        assert r.startswith("ok "), (p, r)
        patterns += 1
        cases = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 7))) for _ in range(40)]
        for seed in range(10):
            t = tool.generate(seed, 12)
            assert t is not None, p
            cases.append(t)
            # Near misses: one character dropped, doubled or replaced.
            if t:
                k = rng.randrange(len(t))
                cases += [t[:k] + t[k + 1:], t[:k] + t[k] + t[k:], t[:k] + rng.choice(ALPHABET) + t[k + 1:]]
        for s in cases:
            want = compiled.fullmatch(s) is not None
            assert tool.match(s) == want, (p, s, want)
            strings += 1
    assert patterns >= 390 and strings > 25000


def test_generated_texts_match(tool):
    """The random walk through the DFA only produces texts Python accepts."""
    rng = random.Random(7)
    for _ in range(100):
        p = random_pattern(rng)
        if not tool.regex(p).startswith("ok "):
            continue
        for seed in range(20):
            t = tool.generate(seed, 16)
            assert re.fullmatch(p, t, re.ASCII), (p, t)


@pytest.mark.parametrize("pattern,message", [
    ("a(b", "regex: unbalanced ( at 1"),
    ("ab)", "regex: unbalanced ) at 2"),
    ("*a", "regex: nothing to repeat at 0"),
    ("a|+", "regex: nothing to repeat at 2"),
    ("[ab", "regex: unterminated [ at 0"),
    ("a**", "regex: multiple repeat at 2"),
    ("[z-a]", "regex: bad range (end before start) at 1"),
    ("\\q", "regex: unknown escape at 0"),
    ("\\1", "regex: unknown escape at 0"),
    ("a{3,1}", "regex: bad repeat {m,n} with m > n at 1"),
    ("a{1001}", "regex: repeat count above 1000 at 1"),
    ("a{x}", "regex: bad repeat { at 1"),
    ("[é]", "regex: non-ASCII character in a class at 1"),
    ("\\x80", "regex: \\x above 7f (write the character itself) at 0"),
    ("a^b", "regex: ^ and $ only at the ends (the whole output is matched) at 1"),
    ("(" * 33 + ")" * 33, "regex: nesting deeper than 32 at 32"),
    ("(a|b)*a(a|b){12}", "regex: more than 4096 DFA states (simplify the grammar)"),
    ("(.{1000}){40}", "regex: too large (more than 32768 NFA states; lower the repeat counts)"),
    ("a\\", "regex: trailing \\ at 1"),
    ("[\\C]", "regex: \\C inside a class at 1"),
])
def test_bad_patterns_name_place_and_reason(tool, pattern, message):
    assert tool.regex(pattern) == "error " + message


def test_anchors_change_nothing(tool):
    for p in ["^ab$", "ab$", "^ab"]:
        assert tool.regex(p).startswith("ok ")
        assert tool.match("ab") and not tool.match("abab") and not tool.match("")
    assert tool.regex("a\\$").startswith("ok ")
    assert tool.match("a$") and not tool.match("a")


def test_any_byte_escape(tool):
    """\\C, the one escape Python lacks: any byte, so \\C* takes every output."""
    assert tool.regex("\\C*").startswith("ok states=1 ")
    for b in [b"", b"\xff\x80", b"abc\n", bytes(range(256))]:
        assert tool.ask("M " + b.hex()) == "1"
    assert tool.regex("[\\x4C]").startswith("ok ")   # an \\x escape ending in C is not \\C
    assert tool.match("L")


def test_dfa_is_minimal_for_small_cases(tool):
    # The minimal DFAs, counted by hand: a(b|c)*d has start, loop, end.
    assert tool.regex("a(b|c)*d").startswith("ok states=3 ")
    assert tool.regex("(a|b)*abb").startswith("ok states=4 ")   # the dragon book's example
    assert tool.regex("aa*|a+").startswith("ok states=2 ")


# ---- JSON schemas

def valid(v, s):
    """A validator for the subset grammar_json.h documents (JSON Schema semantics)."""
    if "enum" in s:
        return any(type(v) is type(e) and v == e for e in s["enum"])
    if "const" in s:
        return type(v) is type(s["const"]) and v == s["const"]
    if "anyOf" in s:
        return any(valid(v, x) for x in s["anyOf"])
    t = s["type"]
    if isinstance(t, list):
        return any(valid(v, dict(s, type=x)) for x in t)
    if t == "string":
        return isinstance(v, str) and s.get("minLength", 0) <= len(v) <= s.get("maxLength", 10**9)
    if t in ("integer", "number"):
        if isinstance(v, bool) or not isinstance(v, (int, float) if t == "number" else int):
            return False
        # (json reads 1e999 as inf, a valid JSON number: only bounds that are there count)
        return (("minimum" not in s or v >= s["minimum"]) and ("maximum" not in s or v <= s["maximum"])
                and ("exclusiveMinimum" not in s or v > s["exclusiveMinimum"])
                and ("exclusiveMaximum" not in s or v < s["exclusiveMaximum"]))
    if t == "boolean":
        return isinstance(v, bool)
    if t == "null":
        return v is None
    if t == "object":
        props = s.get("properties", {})
        return (isinstance(v, dict) and all(k in v for k in s.get("required", []))
                and all(k in props and valid(x, props[k]) for k, x in v.items()))
    if t == "array":
        return (isinstance(v, list) and s.get("minItems", 0) <= len(v) <= s.get("maxItems", 10**9)
                and all(valid(x, s["items"]) for x in v))
    raise AssertionError("unknown type " + t)


def instance(s, rng):
    """A random valid instance, in the compact order the regex produces."""
    if "enum" in s:
        return rng.choice(s["enum"])
    if "const" in s:
        return s["const"]
    if "anyOf" in s:
        return instance(rng.choice(s["anyOf"]), rng)
    t = s["type"]
    if isinstance(t, list):
        return instance(dict(s, type=rng.choice(t)), rng)
    if t == "string":
        n = rng.randint(s.get("minLength", 0), min(s.get("maxLength", 8), s.get("minLength", 0) + 8))
        return "".join(rng.choice("ab é\"\\/\n\t€z") for _ in range(n))
    if t == "integer":
        lo = s.get("minimum", s.get("exclusiveMinimum", -10**6 - 1) + 1)
        hi = s.get("maximum", s.get("exclusiveMaximum", 10**6 + 1) - 1)
        return rng.choice([lo, hi, rng.randint(lo, hi)])
    if t == "number":
        if not any(k in s for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
            v = rng.choice([0, 1.5, 2.25e-3, 10, 123.0, 7e10])
            return rng.choice([v, -v])
        while True:   # bounded: a value near the bounds that is inside them
            v = rng.randint(-60, 60) + rng.choice([0, 0.0, 0.5, 0.25, 0.001])
            if valid(v, s):
                return v
    if t == "boolean":
        return rng.choice([True, False])
    if t == "null":
        return None
    if t == "object":
        return {k: instance(x, rng) for k, x in s.get("properties", {}).items()}
    if t == "array":
        n = rng.randint(s.get("minItems", 0), s.get("maxItems", 4))
        return [instance(s["items"], rng) for _ in range(n)]
    raise AssertionError(t)


SCHEMAS = [
    {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}, "required": ["answer"]},
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                      "age": {"type": "integer", "minimum": 0, "maximum": 150},
                                      "ok": {"type": "boolean"}, "none": {"type": "null"}},
     "required": ["name", "age"]},
    {"type": "array", "items": {"type": "integer", "minimum": -20, "maximum": 7}, "maxItems": 5},
    {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 3}, "minItems": 2, "maxItems": 3},
    {"type": "object", "properties": {
        "point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number", "minimum": 0}}},
        "tags": {"type": "array", "items": {"enum": ["a", "b\"c", 3, True, None]}, "maxItems": 3},
        "id": {"anyOf": [{"type": "integer", "exclusiveMinimum": 9, "exclusiveMaximum": 1000}, {"type": "null"}]},
        "kind": {"type": ["string", "null"], "maxLength": 2},
        "c": {"const": "fixed"}}},
    {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "object", "properties": {
        "c": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}}}}}}},
    {"type": "integer"},
    {"type": "string"},
    {"type": "array", "items": {"type": "number", "minimum": -7, "exclusiveMaximum": 12}, "minItems": 1, "maxItems": 4},
]


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_schema_dfa_accepts_only_valid_json(tool, index):
    s = SCHEMAS[index]
    r = tool.schema(json.dumps(s))
    assert r.startswith("ok "), r
    rng = random.Random(index)
    for seed in range(300):
        t = tool.generate(seed, 60)
        assert t is not None
        v = json.loads(t)
        assert valid(v, s), (s, t)
    for _ in range(300):
        v = instance(s, rng)
        assert valid(v, s), (s, v)
        text = json.dumps(v, separators=(",", ":"), ensure_ascii=False)
        assert tool.match(text), (s, text)
        # Mutated texts: accepted only if they are still valid.
        if text:
            k = rng.randrange(len(text))
            bad = text[:k] + rng.choice("]}\",:0a-") + text[k + 1:]
            if tool.match(bad):
                assert valid(json.loads(bad), s), (s, bad)


@pytest.mark.parametrize("lo,hi", [(0, 0), (0, 9), (1, 100), (7, 7), (13, 2047), (-5, 5), (-120, -7),
                                   (-1000, 999), (99, 101), (10, 99), (5, None), (None, -3), (None, 42),
                                   (-999, None)])
def test_integer_bounds_are_exact(tool, lo, hi):
    s = {"type": "integer"}
    if lo is not None:
        s["minimum"] = lo
    if hi is not None:
        s["maximum"] = hi
    assert tool.schema(json.dumps(s)).startswith("ok ")
    a = (lo if lo is not None else (hi or 0) - 3000)
    b = (hi if hi is not None else (lo or 0) + 3000)
    for v in range(a - 150, b + 151):
        want = (lo is None or v >= lo) and (hi is None or v <= hi)
        assert tool.match(str(v)) == want, (lo, hi, v)
    for text in ["", "-", "00", "01", "-0", "+1", "1.0", " 1"]:
        assert not tool.match(text), text


NUMBER_BOUNDS = [
    {"minimum": 0}, {"maximum": 0}, {"exclusiveMinimum": 0}, {"exclusiveMaximum": 0},
    {"minimum": 3, "maximum": 17}, {"minimum": -12, "maximum": -3}, {"minimum": -5, "maximum": 100},
    {"exclusiveMinimum": -5, "exclusiveMaximum": 100}, {"exclusiveMinimum": 9, "maximum": 10},
    {"minimum": 7, "maximum": 7}, {"minimum": -1, "exclusiveMaximum": 0}, {"exclusiveMinimum": -1, "maximum": 0},
    {"minimum": 99}, {"exclusiveMaximum": -99}, {"minimum": 5, "exclusiveMinimum": 5},
    {"maximum": 20, "exclusiveMaximum": 30},
]
FRACTIONS = ["", ".0", ".00", ".000", ".5", ".05", ".001", ".9", ".999", ".10"]


@pytest.mark.parametrize("bounds", NUMBER_BOUNDS, ids=lambda b: json.dumps(b, separators=(",", ":")))
def test_number_bounds_are_exact(tool, bounds):
    """Every decimal text -?I(.F)? with I near the bounds is accepted exactly
    when its value (exact, by Fraction) is inside them: an off-by-one at
    either end, or B.0 versus B.05 at a bound B, shows."""
    from fractions import Fraction
    s = dict(bounds, type="number")
    assert tool.schema(json.dumps(s)).startswith("ok ")
    ends = [v for v in bounds.values()]
    a, b = min(ends) - 40, max(ends) + 40
    for i in range(a, b + 1):
        for f in FRACTIONS:
            text = str(i) + f
            value = Fraction(text) if i >= 0 or f == "" else -(Fraction(str(-i) + f))
            want = (("minimum" not in s or value >= s["minimum"]) and ("maximum" not in s or value <= s["maximum"])
                    and ("exclusiveMinimum" not in s or value > s["exclusiveMinimum"])
                    and ("exclusiveMaximum" not in s or value < s["exclusiveMaximum"]))
            assert tool.match(text) == want, (bounds, text)
        if i == 0:   # the negative texts with integer part 0
            for f in FRACTIONS[1:]:
                value = -Fraction("0" + f)
                want = value != 0 and valid(float(value), s)
                assert tool.match("-0" + f) == want, (bounds, "-0" + f)
    # Never a negative zero, a leading zero, an exponent or a bare point.
    for text in ["-0", "-0.0", "00", "01.5", "1e1", "1.", ".5", "+1", "", "-"]:
        assert not tool.match(text), (bounds, text)


@pytest.mark.parametrize("schema,message", [
    ('{"type": "strnig"}', "json-schema: unknown type at 9"),
    ('{"type": "string", "pattern": "a+"}', "json-schema: unsupported keyword at 19"),
    ('{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["b"]}',
     "json-schema: required names a property that is not listed at 74"),
    ('{"type": "integer", "minimum": 1.5}', "json-schema: minimum must be a whole number at 31"),
    ('{"type": "integer", "minimum": 5, "maximum": 1}', "json-schema: minimum above maximum at 9"),
    ('{"type": "number", "maximum": 2.5}', "json-schema: maximum on a number must be a whole number at 30"),
    ('{"type": "number", "exclusiveMinimum": 1e3}', "json-schema: exclusiveMinimum on a number must be a whole number at 39"),
    ('{"type": "number", "minimum": 3, "exclusiveMaximum": 3}', "json-schema: minimum above maximum at 9"),
    ('{"type": "array"}', 'json-schema: an array needs "items" at 9'),
    ('{"type": "string", "maxLength": 5000}', "json-schema: count out of range (0..1000) at 32"),
    ('{"type": "object", "properties": {"a": 1}}', "json-schema: a schema must be an object at 39"),
    ('{"type": "object"', "json-schema: expected ',' or '}' at 17"),
    ('{"type": "object"', "json-schema: expected ',' or '}' at 17"),
    ('[1, 2]', "json-schema: a schema must be an object at 0"),
    ('{"type":"array","items":{"type":"array","items":{"type":"array","items":{"type":"array",'
     '"items":{"type":"array","items":{"type":"null"}}}}}}',
     "json-schema: objects and arrays nested deeper than 4 at 104"),
    ('{"enum": []}', "json-schema: enum is empty at 9"),
])
def test_bad_schemas_name_place_and_reason(tool, schema, message):
    assert tool.schema(schema) == "error " + message
