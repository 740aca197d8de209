#!/usr/bin/python3
"""tiny-chat: a tiny synthetic model that carries a chat template, for tests.

    make_chat_model.py --out DIR [--dtype q8|f32] [--source-out DIR] [--shape tiny-llama|tiny-qwen]
                       [--drop-bytes HEX,HEX,...]

Writes what a Hugging Face chat model ships beside its weights, in small:
a byte-level BPE tokenizer.json whose added special tokens are ChatML's
(`<|endoftext|>` 0, `<|im_start|>` 1, `<|im_end|>` 2, as SmolLM2), a
tokenizer_config.json with SmolLM2-Instruct's chat template, and then the
bundle: random weights of the tiny-llama shape (tools/make_model.py) with a
longer context, TOK.BIN and CHAT.TXT (tools/chat_template.py), exactly as
tools/export_model.py would export them. --shape tiny-qwen gives the same
tokenizer and template to tiny-qwen's hybrid shape (Gated DeltaNet and
gated attention, ROP.BIN of 64 rows): tiny-qwen-chat, for chat turns that
resume from recurrent-state checkpoints. --drop-bytes leaves those single
bytes out of the vocabulary (as SmolLM2 lacks 0x04, 0xC0, 0xFF...): no token
starts with them, so a grammar that needs one cannot be spelt (tiny-chat-gaps,
for the grammar's "no token" error).

The weights are random, so the model's answers are noise; but its
`<|im_end|>` embedding row is scaled up (END_OF_TURN_GAIN), and with the
tied classifier that makes `<|im_end|>` a likely next token: a conversation
with it ends some of its turns at the end-of-turn id, as a real chat model's
do, and so tests see that stop.
"""
import argparse
import json
import os
import sys
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bundle as B            # noqa: E402
import chat_template as CT    # noqa: E402
import export_model as X      # noqa: E402
import make_model as M        # noqa: E402
import tokenizer as T         # noqa: E402

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
END_OF_TURN = 2
# The embedding row of <|im_end|> is this many times the others' scale.
END_OF_TURN_GAIN = 3.0
# SmolLM2-135M-Instruct's chat_template, as published in its tokenizer_config.json.
SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
# The merges are learnt from this text, so English chat encodes in fewer tokens.
CORPUS = ("system user assistant You are a helpful AI assistant named SmolLM, trained by Hugging Face. "
          "Hello! How are you? What is the capital of France? Tell me a story about a cat. "
          "Thank you, that is all. Once upon a time there was a little robot who liked to talk.")

CONFIG = dict(M.PRESETS["tiny-llama"], runtime_seq_len=320)
# tiny-qwen's shape keeps its 64-row ROP.BIN: the kernel's context (1024 by
# default for Qwen) computes the rest.
SHAPES = {"tiny-llama": CONFIG, "tiny-qwen": dict(M.PRESETS["tiny-qwen"])}
# tiny-qwen's shape with x3 answers <|im_end|> at once; with x1.5 its answers
# are ordinary tokens (its turns end at --predict).
GAINS = {"tiny-llama": END_OF_TURN_GAIN, "tiny-qwen": 1.5}


def learn_merges(text, n):
    """n byte-level BPE merges of text (the most frequent adjacent pair, first seen on ties)."""
    b2u = T.bytes_to_unicode()
    words = [[b2u[b] for b in w.encode()] for w in text.replace(" ", " \x00").split("\x00")]
    merges = []
    for _ in range(n):
        pairs = Counter()
        for w in words:
            pairs.update(zip(w, w[1:]))
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: kv[1])[0]
        merges.append(best)
        for w in words:
            i = 0
            while i < len(w) - 1:
                if (w[i], w[i + 1]) == best:
                    w[i:i + 2] = [w[i] + w[i + 1]]
                i += 1
    return merges


def tokenizer_json(vocab_size, drop_bytes=()):
    """A SmolLM2-like tokenizer.json: the ChatML specials, the 256 bytes (but
    drop_bytes), merges up to vocab_size (CORPUS has none of the dropped bytes)."""
    b2u = T.bytes_to_unicode()
    vocab = {s: i for i, s in enumerate(SPECIALS)}
    for b in range(256):
        if b not in drop_bytes:
            vocab[b2u[b]] = len(vocab)
    merges = []
    for a, b in learn_merges(CORPUS, vocab_size - len(vocab)):
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
            merges.append(f"{a} {b}")
    added = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, s in enumerate(SPECIALS)]
    return {"version": "1.0", "added_tokens": added, "normalizer": None,
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "Digits", "individual_digits": True},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]},
            "model": {"type": "BPE", "vocab": vocab, "merges": merges}}


def tokenizer_config(template=SMOLLM2_TEMPLATE):
    return {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>",
            "pad_token": "<|im_end|>", "chat_template": template}


def write_source(src_dir, cfg, drop_bytes=()):
    os.makedirs(src_dir, exist_ok=True)
    with open(os.path.join(src_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(cfg.vocab_size, drop_bytes), f, ensure_ascii=False)
    with open(os.path.join(src_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_config(), f, ensure_ascii=False, indent=1)
    return os.path.join(src_dir, "tokenizer.json")


class ChatSynth(M.Synth):
    gain = END_OF_TURN_GAIN

    def embedding(self):
        for ci, chunk in enumerate(super().embedding()):
            if ci == 0:
                chunk = chunk.copy()
                chunk[END_OF_TURN] = B.round_bf16(chunk[END_OF_TURN] * np.float32(self.gain))
            yield chunk


def main(argv=None):
    ap = argparse.ArgumentParser(description="Make the tiny-chat test model (ChatML template)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", choices=["q8", "f32"], default="q8")
    ap.add_argument("--source-out", help="where tokenizer.json and tokenizer_config.json go "
                    "(default: DIR-source beside DIR)")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="tiny-llama")
    ap.add_argument("--drop-bytes", default="", help="bytes (hex, comma-separated) left out of the vocabulary")
    a = ap.parse_args(argv)
    try:
        drop = {int(x, 16) for x in a.drop_bytes.split(",") if x}
    except ValueError:
        ap.error(f"--drop-bytes: not a comma-separated list of hex bytes: {a.drop_bytes!r}")
    if any(not 0 <= b < 256 or bytes([b]).decode("latin-1") in CORPUS for b in drop):
        ap.error(f"--drop-bytes: {a.drop_bytes!r}: each must be a byte 00..ff that the merge corpus does not use")
    kw = dict(SHAPES[a.shape], weight_format=B.FMT_F32 if a.dtype == "f32" else B.FMT_Q8)
    cfg = B.Config(**kw)
    src_dir = a.source_out or os.path.abspath(a.out).rstrip("/") + "-source"
    tok_path = write_source(src_dir, cfg, drop)
    os.makedirs(a.out, exist_ok=True)
    extra = {"source": f"synthetic tiny-chat (tools/make_chat_model.py): {a.shape} weights, seed 2, "
                       f"<|im_end|> embedding x{GAINS[a.shape]}"
                       + (f", without bytes {a.drop_bytes}" if drop else ""),
             "tokenizer": X.write_tok(tok_path, a.out, cfg.vocab_size),
             "chat_template": CT.export(tok_path, a.out, "make_chat_model")}
    if not os.path.exists(os.path.join(a.out, "CHAT.TXT")):
        print(f"make_chat_model: error: {extra['chat_template']}", file=sys.stderr)
        return 1
    tok = T.load(tok_path)
    text = "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n"
    synth = ChatSynth(cfg, 2)
    synth.gain = GAINS[a.shape]
    pmt, exp = X.write_bundle(synth, a.out, tok.encode(text), 16, tok, extra, text)
    print(f"wrote {a.out}: prompt {' '.join(map(str, pmt))} -> {' '.join(map(str, exp))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
