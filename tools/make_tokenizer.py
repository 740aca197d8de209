#!/usr/bin/python3
"""kai's own byte-level BPE tokenizer for the synthetic SmolLM2-shape bundle.

    make_tokenizer.py --out DIR [--corpus FILE ...]      # DIR/tokenizer.json, tokenizer_config.json
    make_tokenizer.py --out DIR --bundle BUNDLE          # and BUNDLE/TOK.BIN, BUNDLE/CHAT.TXT
    make_tokenizer.py --tokenizer DIR/tokenizer.json --bundle BUNDLE   # pair one made before
    make_tokenizer.py --list-corpus                      # the default corpus (for the Makefile)

A fresh clone has no trained tokenizer (real ones are public data that kai
never commits), so the synthetic `smol135m` bundle gets one that kai learns
itself, in the layout of SmolLM2-135M's:
- ids 0..16 are SmolLM2's 17 special tokens, by SmolLM2's ids
  (`<|endoftext|>` 0, `<|im_start|>` 1, `<|im_end|>` 2, ...);
- ids 17..272 are the 256 bytes (GPT-2's printable byte alphabet, in
  code-point order), so every UTF-8 text encodes and decodes back exactly;
- the pre-tokenizer is SmolLM2's: each digit alone, then GPT-2's split regex;
- then merges, up to SmolLM2's vocabulary size, 49,152, so that ids mean
  rows of the same embedding shape.

The merges are learnt from the repository's own documentation (CORPUS_GLOBS),
the classic way: repeatedly merge the most frequent adjacent pair (ties:
the smaller pair of strings, so the result never depends on dict order),
counting over distinct pre-tokenized words with their frequencies and
updating only the words a merge touches.  The corpus is small (about 350 KB,
7,000 distinct words): after roughly 18,000 merges every word is one token
and nothing is left to learn.  SmolLM2 learned its 48,900 merges from
trillions of tokens; kai cannot, and does not pretend to.  The rest of the
vocabulary is filled deterministically with letter n-grams (fill() below:
lower-case bigrams, trigrams and 4-grams, bare and after a space, each one
a merge of the two pieces BPE made of it before), so unseen English still
compresses a little, every id decodes to readable characters, and the text
of a filled token alone encodes back to that token (a stop sequence given
as text, `--stop-text`, then matches it).  Same corpus, same bytes, in a
couple of seconds.

The weights of the synthetic model are random: whatever this tokenizer
makes of its answers is noise.  It exists so that `ai --text`, `llmrun
--text` and `chat` work on a fresh clone; real weights come with their real
tokenizer (models/README.md).
"""
import argparse
import glob
import heapq
import json
import os
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tokenizer as T  # noqa: E402  (standard library only: the Makefile runs --list-corpus before setup)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The text the merges are learnt from, relative to the repository root.
CORPUS_GLOBS = ["README.md", "docs/*.md", "models/README.md"]
VOCAB_SIZE = 49152                  # SmolLM2-135M's
# SmolLM2-135M's added tokens, all special, at ids 0..16 (its tokenizer.json).
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>", "<reponame>", "<file_sep>",
            "<filename>", "<gh_stars>", "<issue_start>", "<issue_comment>", "<issue_closed>",
            "<jupyter_start>", "<jupyter_text>", "<jupyter_code>", "<jupyter_output>",
            "<jupyter_script>", "<empty_output>"]
EOS = "<|endoftext|>"               # SmolLM2-135M's eos_token
PRE_TOKENIZER = {"type": "Sequence", "pretokenizers": [
    {"type": "Digits", "individual_digits": True},
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def default_corpus(root=ROOT):
    """The corpus files, sorted, as paths relative to root."""
    out = set()
    for g in CORPUS_GLOBS:
        out.update(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, g)))
    return sorted(out)


def word_counts(texts, pre=PRE_TOKENIZER):
    """{pre-tokenized word (byte-level alphabet): count} of the texts, with the
    same pre-tokenizer the tokenizer will use (tools/tokenizer.py's)."""
    shell = T.HFTokenizer.__new__(T.HFTokenizer)   # only _pretokenize's state
    shell.pre, shell.b2u = T.HFTokenizer._flatten(pre), T.bytes_to_unicode()
    counts = Counter()
    for text in texts:
        counts.update(shell._pretokenize(text))
    return counts


def learn_merges(counts, limit):
    """At most `limit` BPE merges [(a, b)] of the words `counts`, most frequent
    pair first, ties broken by the smaller (a, b); stops when no pair is left."""
    words = [list(w) for w in sorted(counts)]
    freq = [counts[w] for w in sorted(counts)]
    pairs = Counter()
    where = {}                          # pair -> indices of the words that hold it
    for i, w in enumerate(words):
        for p in zip(w, w[1:]):
            pairs[p] += freq[i]
            where.setdefault(p, set()).add(i)
    heap = [(-c, p) for p, c in pairs.items()]
    heapq.heapify(heap)
    merges = []
    while heap and len(merges) < limit:
        c, p = heapq.heappop(heap)
        if pairs.get(p, 0) != -c or c == 0:
            continue                    # a stale entry: the count changed since it was pushed
        merges.append(p)
        a, b = p
        changed = set()
        for i in sorted(where.pop(p)):
            w = words[i]
            for q in zip(w, w[1:]):     # take the word's pairs out, merge, put them back
                pairs[q] -= freq[i]
                changed.add(q)
            j, nw = 0, []
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    nw.append(a + b)
                    j += 2
                else:
                    nw.append(w[j])
                    j += 1
            words[i] = nw
            for q in zip(nw, nw[1:]):
                pairs[q] += freq[i]
                changed.add(q)
                where.setdefault(q, set()).add(i)
        for q in changed:
            n = pairs[q]
            if n > 0:
                heapq.heappush(heap, (-n, q))
            else:
                del pairs[q]
                where.pop(q, None)
    return merges


def bpe_parts(word, ranks):
    """The pieces BPE makes of word with these merge ranks (tools/tokenizer.py's rule)."""
    parts = list(word)
    while len(parts) > 1:
        r, i = min((ranks.get(p, len(ranks)), i) for i, p in enumerate(zip(parts, parts[1:])))
        if r == len(ranks):
            break
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return parts


def fill(vocab, merges, size):
    """Adds letter n-gram tokens until the vocabulary has `size` ids, in a fixed
    order, so the result is fixed too. Each is merged from the two pieces BPE
    makes of it so far, so encoding its text alone gives exactly that token
    (an n-gram BPE would cut into three or more pieces is left out)."""
    sp = T.bytes_to_unicode()[ord(" ")]
    ranks = {m: r for r, m in enumerate(merges)}
    for n in (2, 3, 4):
        grams = [""]
        for _ in range(n):
            grams = [g + c for g in grams for c in LETTERS]
        for prefix in ("", sp):
            for g in grams:
                if len(vocab) >= size:
                    return
                s = prefix + g
                if s in vocab:
                    continue
                parts = bpe_parts(s, ranks)
                if len(parts) == 2:
                    vocab[s] = len(vocab)
                    ranks[tuple(parts)] = len(merges)
                    merges.append(tuple(parts))


def build(texts, size=VOCAB_SIZE):
    """(vocab {token: id}, merges [(a, b)], number of merges learnt from texts)."""
    b2u = T.bytes_to_unicode()
    vocab = {s: i for i, s in enumerate(SPECIALS)}
    for ch in sorted(b2u.values()):
        vocab[ch] = len(vocab)
    merges = []
    for a, b in learn_merges(word_counts(texts), size - len(vocab)):
        merges.append((a, b))
        vocab.setdefault(a + b, len(vocab))
        if len(vocab) == size:
            break
    learnt = len(merges)
    fill(vocab, merges, size)
    if len(vocab) != size:
        raise ValueError(f"vocabulary of {len(vocab)} tokens, wanted {size}")
    return vocab, merges, learnt


def tokenizer_json(vocab, merges):
    added = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, s in enumerate(SPECIALS)]
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": None, "pre_tokenizer": PRE_TOKENIZER, "post_processor": None,
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                        "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                      "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]}}


def tokenizer_config():
    """SmolLM2-135M's special-token settings, plus SmolLM2-Instruct's chat
    template (the base model has none) so that `chat` runs on the bundle."""
    import make_chat_model as MC
    c = MC.tokenizer_config()
    c.update(bos_token=EOS, eos_token=EOS, unk_token=EOS, pad_token=EOS, add_prefix_space=False,
             model_max_length=8192, vocab_size=VOCAB_SIZE)
    return c


def write(out_dir, corpus, root=ROOT):
    """Learns the tokenizer from the corpus files and writes tokenizer.json and
    tokenizer_config.json into out_dir; returns (tokenizer.json path, learnt merges)."""
    texts = []
    for rel in corpus:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            texts.append(f.read())
    vocab, merges, learnt = build(texts)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "tokenizer.json")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(vocab, merges), f, ensure_ascii=False, indent=None, separators=(",", ":"))
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_config(), f, ensure_ascii=False, indent=1)
    os.replace(tmp, path)           # tokenizer.json last: it is make's target
    return path, learnt


def pair_with_bundle(tok_path, bundle_dir):
    """TOK.BIN and CHAT.TXT into a synthetic bundle (INFO.TXT's source says so);
    any other bundle keeps what it has: this tokenizer would be wrong for real weights."""
    import bundle as B
    import chat_template as CT
    import export_model as X
    info_path = os.path.join(bundle_dir, "INFO.TXT")
    info = {}
    if os.path.exists(info_path):
        with open(info_path, encoding="utf-8") as f:
            info = json.load(f)
    if not str(info.get("source", "")).startswith("synthetic"):
        return f"{bundle_dir} is not a synthetic bundle: its tokenizer is left as it is"
    with open(os.path.join(bundle_dir, "CFG.BIN"), "rb") as f:
        vocab_size = B.parse_cfg(f.read()).vocab_size
    info["tokenizer"] = X.write_tok(tok_path, bundle_dir, vocab_size).replace(
        os.path.abspath(tok_path), "kai's own BPE (tools/make_tokenizer.py)")
    info["chat_template"] = CT.export(tok_path, bundle_dir, "make_tokenizer")
    for name, note in (("TOK.BIN", info["tokenizer"]), ("CHAT.TXT", info["chat_template"])):
        if not os.path.exists(os.path.join(bundle_dir, name)):
            raise ValueError(f"{bundle_dir}/{name} not written: {note}")
    with open(info_path, "w", encoding="utf-8") as f:
        f.write(B.dumps_info(info) + "\n")
    return f"{bundle_dir}: {info['tokenizer']}; {info['chat_template']}"


def main(argv=None):
    ap = argparse.ArgumentParser(description="learn kai's own SmolLM2-layout BPE tokenizer")
    ap.add_argument("--out", help="directory for tokenizer.json and tokenizer_config.json")
    ap.add_argument("--corpus", nargs="+", help="text files, relative to the repository root "
                    f"(default: {' '.join(CORPUS_GLOBS)})")
    ap.add_argument("--bundle", help="also write TOK.BIN and CHAT.TXT into this synthetic bundle")
    ap.add_argument("--tokenizer", help="with --bundle: a tokenizer.json this tool made before (no learning)")
    ap.add_argument("--list-corpus", action="store_true", help="print the default corpus files and exit")
    a = ap.parse_args(argv)
    if a.list_corpus:
        print(" ".join(default_corpus()))
        return 0
    if bool(a.out) == bool(a.tokenizer) or (a.tokenizer and not a.bundle):
        ap.error("give --out DIR [--bundle B], or --tokenizer PATH --bundle B")
    t0 = time.time()
    corpus = a.corpus or default_corpus()
    try:
        path = a.tokenizer
        if a.out:
            path, learnt = write(a.out, corpus)
            print(f"make_tokenizer: {path}: {VOCAB_SIZE} tokens, {learnt} merges learnt from "
                  f"{len(corpus)} files, the rest letter n-grams ({time.time() - t0:.1f}s)")
        if a.bundle:
            print("make_tokenizer: " + pair_with_bundle(path, a.bundle))
    except (OSError, ValueError, KeyError) as e:
        print(f"make_tokenizer: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
