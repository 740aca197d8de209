#!/usr/bin/python3
"""TOK.BIN: a model's tokenizer inside a kai bundle (docs/model-format.md).

    tokbin.py write --tokenizer tokenizer.json|tok512.bin [--config tokenizer_config.json] --out TOK.BIN
    tokbin.py show TOK.BIN

Writes the binary file that lib/llm_tokenizer.cpp loads, from the same two
sources tools/tokenizer.py reads: a Hugging Face tokenizer.json (byte-level BPE)
or a llama2.c tokenizer.bin (scores, SentencePiece style).  Everything the
runtime needs is precomputed here so the freestanding loader needs no heap:
tokens sorted by their bytes (binary search), merges sorted by pair, and the
Unicode classes of the pre-tokenizer as code-point ranges taken from this
Python's `unicodedata` / `str.isspace` (the very tables tools/tokenizer.py's
regexes use, so host and guest agree by construction).

The layout is defined once, in HEADER_FIELDS and write_tokbin() below, and
mirrored by lib/llm_tokenizer.h.
"""
import argparse
import json
import os
import struct
import sys
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tokenizer as T  # noqa: E402

MAGIC = 0x4E4B4F54          # "TOKN"
VERSION = 1
NONE = 0xFFFFFFFF           # "no such id"
MAX_EOS = 8
HEADER_WORDS = 32

KIND_BYTE_BPE = 1           # HF byte-level BPE: merge ranks
KIND_SCORES = 2             # llama2.c: greedy merge by score

FLAG_ADD_BOS = 1 << 0           # a prompt starts with bos_id
FLAG_DUMMY_PREFIX = 1 << 1      # encode prepends the " " token; decode drops the space after BOS/start
FLAG_DIGITS_SPLIT = 1 << 2      # every \p{N} character is its own piece before the split rule
FLAG_BYTE_FALLBACK = 1 << 3     # unknown characters become <0xXX> byte tokens
FLAG_IGNORE_MERGES = 1 << 4     # a whole piece found in the vocabulary is one token
FLAG_NFC = 1 << 5               # the model expects NFC text (the runtime does not normalize)
ALL_FLAGS = 0x3F

SPLIT_NONE = 0              # the whole text is one piece (llama2.c)
SPLIT_GPT2 = 1              # GPT-2's regex (ByteLevel use_regex=true)
SPLIT_QWEN2 = 2             # Qwen2's Split regex
SPLIT_QWEN35 = 3            # the same with \p{M} counted as letters (Qwen3.5 style)
# The Split regexes the runtime implements, spelled exactly as in tokenizer.json.
KNOWN_SPLITS = {
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+": SPLIT_QWEN2,
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+": SPLIT_QWEN35,
}

TOKF_SKIP = 1 << 0          # decodes to nothing (llama2.c <s>, </s>)
TOKF_BYTE = 1 << 1          # <0xXX>: decodes to that one byte
TOKF_SPECIAL = 1 << 2       # special added token: decoded as text unless skipped

CLASS_LETTER, CLASS_NUMBER, CLASS_SPACE, CLASS_MARK = 1, 2, 3, 4

# u32 words of the header, in order (the rest up to HEADER_WORDS are zero).
HEADER_FIELDS = ["magic", "version", "kind", "flags", "split_rule", "vocab_size", "bos_id",
                 "n_eos"] + [f"eos{i}" for i in range(MAX_EOS)] + \
                ["n_merges", "n_added", "n_class_ranges", "token_bytes_size", "max_token_len"]


class TokBinError(ValueError):
    pass


def class_ranges():
    """[(lo, hi, class)] over all code points, sorted, adjacent ranges merged."""
    out = []
    for cp in range(0x110000):
        ch = chr(cp)
        if ch.isspace():            # Python re's \s on str patterns
            c = CLASS_SPACE
        else:
            cat = unicodedata.category(ch)[0]
            c = {"L": CLASS_LETTER, "N": CLASS_NUMBER, "M": CLASS_MARK}.get(cat, 0)
        if not c:
            continue
        if out and out[-1][2] == c and out[-1][1] == cp - 1:
            out[-1] = (out[-1][0], cp, c)
        else:
            out.append((cp, cp, c))
    return out


def _eos_from_config(tok, config_path):
    """EOS ids named by tokenizer_config.json / generation_config.json beside it."""
    ids = []
    names = []
    d = os.path.dirname(os.path.abspath(config_path)) if config_path else None
    if config_path and os.path.exists(config_path):
        with open(config_path, encoding="utf-8") as f:
            c = json.load(f)
        e = c.get("eos_token")
        if isinstance(e, dict):
            e = e.get("content")
        if e:
            names.append(e)
    for n in names:
        if n not in tok.vocab:
            raise TokBinError(f"eos_token {n!r} is not in the vocabulary")
        ids.append(tok.vocab[n])
    gen = os.path.join(d, "generation_config.json") if d else None
    if gen and os.path.exists(gen):
        with open(gen, encoding="utf-8") as f:
            g = json.load(f)
        e = g.get("eos_token_id")
        for i in (e if isinstance(e, list) else [e] if e is not None else []):
            if int(i) not in ids:
                ids.append(int(i))
    return ids


def from_hf(tok, config_path=None, eos_ids=None):
    """A dict describing the TOK.BIN of a tools/tokenizer.py HFTokenizer."""
    flags = 0
    if tok.normalizer:
        steps = tok.normalizer["normalizers"] if tok.normalizer.get("type") == "Sequence" else [tok.normalizer]
        if [s.get("type") for s in steps] != ["NFC"]:
            raise TokBinError(f"normalizer {tok.normalizer} not supported in TOK.BIN (only NFC)")
        flags |= FLAG_NFC
    split = None
    byte_level = False
    for p in tok.pre:
        t = p.get("type")
        if t == "Digits" and split is None:
            if not p.get("individual_digits"):
                raise TokBinError("Digits pre-tokenizer without individual_digits is not supported")
            flags |= FLAG_DIGITS_SPLIT
        elif t == "Split" and split is None and not byte_level:
            pat = p.get("pattern", {}).get("Regex")
            if pat not in KNOWN_SPLITS or p.get("behavior", "Isolated") != "Isolated" or p.get("invert"):
                raise TokBinError(f"Split pre-tokenizer {pat!r} ({p.get('behavior')}) is not supported in "
                                  "TOK.BIN; supported: the Qwen2 and Qwen3.5 regexes, Isolated")
            split = KNOWN_SPLITS[pat]
        elif t == "ByteLevel" and not byte_level:
            if p.get("add_prefix_space"):
                raise TokBinError("ByteLevel add_prefix_space=true is not supported")
            byte_level = True
            if p.get("use_regex", True):
                if split is not None:
                    raise TokBinError("a Split regex followed by ByteLevel's own regex is not supported")
                split = SPLIT_GPT2
        else:
            raise TokBinError(f"pre-tokenizer {t} is not supported in TOK.BIN here; supported: "
                              "[Digits(individual)] then ByteLevel, or a Qwen Split then ByteLevel")
    if not byte_level:
        raise TokBinError("no ByteLevel pre-tokenizer: not a byte-level BPE tokenizer")
    split = SPLIT_NONE if split is None else split
    if tok.ignore_merges:
        flags |= FLAG_IGNORE_MERGES
    n = max(tok.id_to_token) + 1
    if sorted(tok.id_to_token) != list(range(n)):
        raise TokBinError("token ids are not contiguous from 0")
    pieces, tflags = [], []
    for i in range(n):
        t = tok.id_to_token[i]
        if t in tok.added:
            pieces.append(t.encode("utf-8"))
            tflags.append(TOKF_SPECIAL if i in tok.special_ids else 0)
        else:
            pieces.append(bytes(tok.u2b[c] for c in t))
            tflags.append(0)
    byte_ids = [NONE] * 256
    for b in range(256):
        # SmolLM2 lacks a few bytes never seen in training (0x04, 0xC0, 0xFF...):
        # text containing them cannot be encoded, here as in tools/tokenizer.py.
        byte_ids[b] = tok.vocab.get(tok.b2u[b], NONE)
    if sum(i != NONE for i in byte_ids) < 128:
        raise TokBinError("fewer than 128 single-byte tokens: not a byte-level vocabulary")
    merges = []
    for (a, b), r in tok.ranks.items():
        if a not in tok.vocab or b not in tok.vocab or a + b not in tok.vocab:
            raise TokBinError(f"merge {a!r} {b!r} (rank {r}) uses a token not in the vocabulary")
        merges.append((tok.vocab[a], tok.vocab[b], r, tok.vocab[a + b]))
    eos = list(eos_ids) if eos_ids is not None else _eos_from_config(tok, config_path)
    return dict(kind=KIND_BYTE_BPE, flags=flags, split_rule=split, pieces=pieces, tflags=tflags,
                scores=None, bos_id=NONE, eos=eos, merges=merges, byte_ids=byte_ids,
                added=sorted(tok.added.values()),
                ranges=class_ranges() if split != SPLIT_NONE or flags & FLAG_DIGITS_SPLIT else [])


def from_llama2c(tok, eos_ids=None):
    """A dict describing the TOK.BIN of a tools/tokenizer.py Llama2cTokenizer."""
    n = tok.vocab_size
    tflags = [0] * n
    for i in (tok.BOS, tok.EOS):
        if i < n:
            tflags[i] = TOKF_SKIP
    byte_ids = [NONE] * 256
    for b, i in tok.byte_ids.items():
        byte_ids[b] = i
        tflags[i] |= TOKF_BYTE
    flags = FLAG_ADD_BOS
    if b" " in tok.lookup:
        flags |= FLAG_DUMMY_PREFIX
    if tok.byte_ids:
        flags |= FLAG_BYTE_FALLBACK
    return dict(kind=KIND_SCORES, flags=flags, split_rule=SPLIT_NONE, pieces=list(tok.pieces),
                tflags=tflags, scores=list(tok.scores), bos_id=tok.BOS,
                eos=[tok.EOS] if eos_ids is None else list(eos_ids), merges=[],
                byte_ids=byte_ids, added=[], ranges=[])


def describe(path, config_path=None, eos_ids=None):
    tok = T.load(path)
    if isinstance(tok, T.HFTokenizer):
        if config_path is None:
            cand = os.path.join(os.path.dirname(os.path.abspath(path)), "tokenizer_config.json")
            config_path = cand if os.path.exists(cand) else None
        return from_hf(tok, config_path, eos_ids)
    return from_llama2c(tok, eos_ids)


def _pad4(b):
    return b + b"\0" * (-len(b) % 4)


def pack(d):
    """The TOK.BIN bytes of a description dict (see from_hf / from_llama2c)."""
    pieces = d["pieces"]
    n = len(pieces)
    if len(d["eos"]) > MAX_EOS:
        raise TokBinError(f"{len(d['eos'])} eos ids, at most {MAX_EOS}")
    for i in d["eos"]:
        if not 0 <= i < n:
            raise TokBinError(f"eos id {i} out of range (vocab {n})")
    blob = b"".join(pieces)
    offsets = [0]
    for p in pieces:
        offsets.append(offsets[-1] + len(p))
    order = sorted(range(n), key=lambda i: (pieces[i], i))
    merges = sorted(d["merges"], key=lambda m: (m[0], m[1]))
    for a, b in zip(merges, merges[1:]):
        if (a[0], a[1]) == (b[0], b[1]):
            raise TokBinError(f"merge pair {a[0]} {a[1]} appears twice")
    eos = list(d["eos"]) + [NONE] * (MAX_EOS - len(d["eos"]))
    hdr = [MAGIC, VERSION, d["kind"], d["flags"], d["split_rule"], n, d["bos_id"], len(d["eos"])] + \
        eos + [len(merges), len(d["added"]), len(d["ranges"]), len(blob),
               max((len(p) for p in pieces), default=0)]
    hdr += [0] * (HEADER_WORDS - len(hdr))
    out = [struct.pack(f"<{HEADER_WORDS}I", *hdr),
           struct.pack(f"<{n + 1}I", *offsets),
           _pad4(bytes(d["tflags"]))]
    if d["kind"] == KIND_SCORES:
        out.append(struct.pack(f"<{n}f", *d["scores"]))
    out += [struct.pack(f"<{n}I", *order),
            struct.pack("<256I", *d["byte_ids"]),
            b"".join(struct.pack("<4I", *m) for m in merges),
            struct.pack(f"<{len(d['added'])}I", *d["added"]),
            b"".join(struct.pack("<3I", *r) for r in d["ranges"]),
            _pad4(blob)]
    return b"".join(out)


def write_tokbin(tokenizer_path, out_path, config_path=None, eos_ids=None, max_vocab=None):
    """Write TOK.BIN for a tokenizer file; returns the description dict."""
    d = describe(tokenizer_path, config_path, eos_ids)
    if max_vocab is not None and len(d["pieces"]) > max_vocab:
        raise TokBinError(f"tokenizer has {len(d['pieces'])} tokens, the model only {max_vocab}")
    data = pack(d)
    with open(out_path, "wb") as f:
        f.write(data)
    return d


def read_header(data):
    """{field: value} of a TOK.BIN header (for tests and `show`)."""
    words = struct.unpack_from(f"<{HEADER_WORDS}I", data, 0)
    return dict(zip(HEADER_FIELDS, words))


def main(argv=None):
    ap = argparse.ArgumentParser(description="write or show a kai TOK.BIN tokenizer file")
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("--tokenizer", required=True)
    w.add_argument("--config", help="tokenizer_config.json (eos_token); default: beside tokenizer.json")
    w.add_argument("--eos", help="eos ids, e.g. '0 2' (overrides the config)")
    w.add_argument("--out", required=True)
    s = sub.add_parser("show")
    s.add_argument("path")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "write":
            eos = [int(x) for x in a.eos.split()] if a.eos else None
            d = write_tokbin(a.tokenizer, a.out, a.config, eos)
            print(f"wrote {a.out}: {len(d['pieces'])} tokens, {len(d['merges'])} merges, eos {d['eos']}")
        else:
            with open(a.path, "rb") as f:
                print(json.dumps(read_header(f.read()), indent=1))
    except (TokBinError, OSError, ValueError, KeyError) as e:
        print(f"tokbin: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
