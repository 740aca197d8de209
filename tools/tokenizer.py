#!/usr/bin/python3
"""Pure-Python tokenizers for kai's models (text <-> token ids).

Two formats:
- Hugging Face `tokenizer.json` byte-level BPE (SmolLM2, Qwen): added/special
  tokens are split out first, then the pre-tokenizers (Digits, ByteLevel with
  the GPT-2 split regex, or a Split regex such as Qwen's), bytes mapped to the
  GPT-2 printable alphabet, then BPE merges by rank.
- llama2.c `tokenizer.bin` (stories260K's tok512.bin): SentencePiece-style
  greedy merge by score, a dummy leading space, `<0xXX>` byte fallback.

CLI:
    tokenizer.py encode --tokenizer PATH --text "..." [--bos]
    tokenizer.py decode --tokenizer PATH --tokens "1 2 3"
"""
import argparse
import functools
import json
import re
import struct
import sys
import unicodedata

GPT2_PATTERN = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")


# ---------------------------------------------------------------- unicode classes

@functools.lru_cache(maxsize=None)
def _category_ranges():
    """{category or its first letter: [(lo, hi), ...]} over all code points."""
    ranges = {}
    prev_cat, start = None, 0
    for cp in range(0x110000 + 1):
        cat = unicodedata.category(chr(cp)) if cp < 0x110000 else None
        if cat != prev_cat:
            if prev_cat is not None:
                for key in (prev_cat, prev_cat[0]):
                    lst = ranges.setdefault(key, [])
                    if lst and lst[-1][1] == start - 1:
                        lst[-1] = (lst[-1][0], cp - 1)
                    else:
                        lst.append((start, cp - 1))
            prev_cat, start = cat, cp
    return ranges


def _class_body(cat):
    def esc(cp):
        return f"\\U{cp:08x}"
    rs = _category_ranges().get(cat)
    if not rs:
        raise ValueError(f"unknown unicode category \\p{{{cat}}}")
    return "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in rs)


def translate_regex(pat):
    """Rewrite \\p{X} / \\P{X} (which Python's re lacks) into explicit classes."""
    out = []
    i = 0
    in_class = False
    while i < len(pat):
        ch = pat[i]
        if ch == "\\" and i + 1 < len(pat):
            nxt = pat[i + 1]
            if nxt in "pP" and i + 2 < len(pat) and pat[i + 2] == "{":
                j = pat.index("}", i)
                cat = pat[i + 3:j]
                body = _class_body(cat)
                if nxt == "P":
                    if in_class:
                        raise ValueError("\\P{} inside a class is not supported")
                    out.append(f"[^{body}]")
                else:
                    out.append(body if in_class else f"[{body}]")
                i = j + 1
                continue
            out.append(pat[i:i + 2])
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
            out.append(ch)
            i += 1
            if i < len(pat) and pat[i] == "^":
                out.append("^")
                i += 1
            if i < len(pat) and pat[i] == "]":   # literal ] first in class
                out.append("\\]")
                i += 1
            continue
        if ch == "]" and in_class:
            in_class = False
        out.append(ch)
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=None)
def compile_regex(pat):
    return re.compile(translate_regex(pat))


@functools.lru_cache(maxsize=None)
def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character map."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


# ---------------------------------------------------------------- HF byte-level BPE

class HFTokenizer:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
        m = j["model"]
        if m.get("type") != "BPE":
            raise ValueError(f"{path}: only BPE models are supported")
        self.vocab = dict(m["vocab"])
        self.ranks = {}
        for r, mg in enumerate(m["merges"]):
            a, b = mg.split(" ", 1) if isinstance(mg, str) else mg
            self.ranks[(a, b)] = r
        self.ignore_merges = bool(m.get("ignore_merges"))
        self.added = {t["content"]: t["id"] for t in j.get("added_tokens", [])}
        for c, i in self.added.items():
            self.vocab.setdefault(c, i)
        self.id_to_token = {i: t for t, i in self.vocab.items()}
        self.special_ids = {t["id"] for t in j.get("added_tokens", []) if t.get("special")}
        self.normalizer = j.get("normalizer")
        self.pre = self._flatten(j.get("pre_tokenizer"))
        if self.added:
            alts = sorted(self.added, key=len, reverse=True)
            self.added_re = re.compile("(" + "|".join(re.escape(a) for a in alts) + ")")
        else:
            self.added_re = None
        self.b2u = bytes_to_unicode()
        self.u2b = {c: b for b, c in self.b2u.items()}
        self.cache = {}

    @staticmethod
    def _flatten(p):
        if p is None:
            return []
        if p.get("type") == "Sequence":
            out = []
            for q in p["pretokenizers"]:
                out += HFTokenizer._flatten(q)
            return out
        return [p]

    def _normalize(self, text):
        n = self.normalizer
        if not n:
            return text
        steps = n["normalizers"] if n.get("type") == "Sequence" else [n]
        for s in steps:
            t = s.get("type")
            if t in ("NFC", "NFD", "NFKC", "NFKD"):
                text = unicodedata.normalize(t, text)
            else:
                raise ValueError(f"unsupported normalizer {t}")
        return text

    def _pretokenize(self, text):
        """List of pieces (already mapped to the byte-level alphabet when ByteLevel runs)."""
        pieces = [text]
        mapped = False
        for p in self.pre:
            t = p.get("type")
            new = []
            if t == "Digits":
                # HF's Digits uses char::is_numeric (any \p{N})
                rx = compile_regex(r"\p{N}" if p.get("individual_digits") else r"\p{N}+")
                for s in pieces:
                    pos = 0
                    for mt in rx.finditer(s):
                        if mt.start() > pos:
                            new.append(s[pos:mt.start()])
                        new.append(mt.group())
                        pos = mt.end()
                    if pos < len(s):
                        new.append(s[pos:])
            elif t == "ByteLevel":
                for s in pieces:
                    if p.get("add_prefix_space") and not s.startswith(" "):
                        s = " " + s
                    parts = compile_regex(GPT2_PATTERN).findall(s) if p.get("use_regex", True) else [s]
                    new += ["".join(self.b2u[b] for b in x.encode("utf-8")) for x in parts]
                mapped = True
            elif t == "Split":
                pat = p["pattern"].get("Regex") or re.escape(p["pattern"]["String"])
                rx = compile_regex(pat)
                beh = p.get("behavior", "Isolated")
                if beh != "Isolated" or p.get("invert"):
                    raise ValueError(f"unsupported Split behavior {beh}")
                for s in pieces:
                    pos = 0
                    for mt in rx.finditer(s):
                        if mt.start() > pos:
                            new.append(s[pos:mt.start()])
                        if mt.end() > mt.start():
                            new.append(mt.group())
                        pos = mt.end()
                    if pos < len(s):
                        new.append(s[pos:])
            else:
                raise ValueError(f"unsupported pre-tokenizer {t}")
            pieces = new
        if not mapped:
            pieces = ["".join(self.b2u[b] for b in x.encode("utf-8")) for x in pieces]
        return pieces

    def _bpe(self, word):
        if word in self.cache:
            return self.cache[word]
        if self.ignore_merges and word in self.vocab:
            return [self.vocab[word]]
        parts = list(word)
        while len(parts) > 1:
            best, bi = None, -1
            for i in range(len(parts) - 1):
                r = self.ranks.get((parts[i], parts[i + 1]))
                if r is not None and (best is None or r < best):
                    best, bi = r, i
            if best is None:
                break
            a, b = parts[bi], parts[bi + 1]
            merged = []
            i = 0
            while i < len(parts):   # merge every occurrence of this pair, left to right
                if i < len(parts) - 1 and parts[i] == a and parts[i + 1] == b:
                    merged.append(a + b)
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        ids = []
        for p in parts:
            if p not in self.vocab:
                raise ValueError(f"piece {p!r} not in vocabulary")
            ids.append(self.vocab[p])
        self.cache[word] = ids
        return ids

    def encode(self, text):
        ids = []
        chunks = self.added_re.split(text) if self.added_re else [text]
        for ch in chunks:
            if not ch:
                continue
            if ch in self.added:
                ids.append(self.added[ch])
                continue
            for piece in self._pretokenize(self._normalize(ch)):
                ids += self._bpe(piece)
        return ids

    def decode(self, ids, skip_special=False):
        out = bytearray()
        for i in ids:
            i = int(i)
            if i not in self.id_to_token:
                raise ValueError(f"token {i} out of range")
            tok = self.id_to_token[i]
            if tok in self.added:
                if not (skip_special and i in self.special_ids):
                    out += tok.encode("utf-8")
            else:
                out += bytes(self.u2b[c] for c in tok)
        return out.decode("utf-8", errors="replace")


# ---------------------------------------------------------------- llama2.c tokenizer.bin

class Llama2cTokenizer:
    BOS, EOS = 1, 2

    def __init__(self, path):
        with open(path, "rb") as f:
            data = f.read()
        self.max_len = struct.unpack_from("<i", data, 0)[0]
        off = 4
        self.pieces, self.scores = [], []
        while off < len(data):
            score, n = struct.unpack_from("<fi", data, off)
            off += 8
            self.pieces.append(data[off:off + n])
            self.scores.append(score)
            off += n
        self.lookup = {}
        for i, p in enumerate(self.pieces):
            self.lookup.setdefault(p, i)
        self.byte_ids = {}
        for b in range(256):
            i = self.lookup.get(f"<0x{b:02X}>".encode())
            if i is not None:
                self.byte_ids[b] = i

    @property
    def vocab_size(self):
        return len(self.pieces)

    def encode(self, text, bos=False, eos=False):
        ids = [self.BOS] if bos else []
        raw = text.encode("utf-8")
        toks = []
        if raw and b" " in self.lookup:
            toks.append(self.lookup[b" "])          # the dummy prefix, as SentencePiece
        for ch in text:
            bs = ch.encode("utf-8")
            if bs in self.lookup:
                toks.append(self.lookup[bs])
            else:
                for b in bs:
                    if b not in self.byte_ids:
                        raise ValueError(f"character {ch!r} cannot be encoded (no byte fallback)")
                    toks.append(self.byte_ids[b])
        while True:
            best, bi, bid = None, -1, -1
            for i in range(len(toks) - 1):
                j = self.lookup.get(self.pieces[toks[i]] + self.pieces[toks[i + 1]])
                if j is not None and (best is None or self.scores[j] > best):
                    best, bi, bid = self.scores[j], i, j
            if best is None:
                break
            toks[bi:bi + 2] = [bid]
        ids += toks
        if eos:
            ids.append(self.EOS)
        return ids

    def piece_bytes(self, i):
        p = self.pieces[i]
        m = re.fullmatch(rb"<0x([0-9A-Fa-f]{2})>", p)
        return bytes([int(m.group(1), 16)]) if m else p

    def decode(self, ids):
        out = bytearray()
        at_start = True
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.pieces):
                raise ValueError(f"token {i} out of range")
            if i in (self.BOS, self.EOS):
                at_start = i == self.BOS or at_start
                continue
            b = self.piece_bytes(i)
            if at_start and b.startswith(b" "):
                b = b[1:]       # the dummy prefix / llama2.c strips the space after BOS
            at_start = False
            out += b
        return out.decode("utf-8", errors="replace")


def load(path):
    if path.endswith(".json"):
        return HFTokenizer(path)
    return Llama2cTokenizer(path)


def main(argv=None):
    ap = argparse.ArgumentParser(description="kai tokenizer: encode / decode")
    ap.add_argument("cmd", choices=["encode", "decode"])
    ap.add_argument("--tokenizer", required=True, help="tokenizer.json or llama2.c tokenizer.bin")
    ap.add_argument("--text")
    ap.add_argument("--tokens")
    ap.add_argument("--bos", action="store_true", help="encode: prepend BOS (llama2.c only)")
    a = ap.parse_args(argv)
    tok = load(a.tokenizer)
    if a.cmd == "encode":
        text = a.text if a.text is not None else sys.stdin.read()
        ids = tok.encode(text, bos=True) if a.bos and isinstance(tok, Llama2cTokenizer) else tok.encode(text)
        print(" ".join(map(str, ids)))
    else:
        toks = a.tokens if a.tokens is not None else sys.stdin.read()
        print(tok.decode([int(x) for x in toks.replace(",", " ").split()]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
