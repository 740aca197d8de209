"""Records token ids from tokenizers written by others, once, as test data
(pinned.json), so kai's tokenizers (tools/tokenizer.py, lib/llm_tokenizer)
are checked against something they did not produce themselves.

- byte-level BPE (SmolLM2's tokenizer.json): Hugging Face's JavaScript
  tokenizers, npm package @huggingface/tokenizers, through hf_encode.cjs;
- SentencePiece (tok105.model): Google's sentencepiece (Debian package
  python3-sentencepiece).

Neither is needed to run the tests, only to record the ids again. The exact
command that produced pinned.json (from the repository root):

    mkdir -p /tmp/hftok && (cd /tmp/hftok && npm init -y && npm install @huggingface/tokenizers@0.2.0)
    apt-get install python3-sentencepiece
    /usr/bin/python3 tests/data/tokenizer_ids/pin.py --npm-dir /tmp/hftok \\
        --models ../shared/models --out tests/data/tokenizer_ids/pinned.json
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Byte-level BPE: Unicode (accents, CJK, emoji with joiners, flags, a
# combining mark), digits (one by one), contractions in both cases, runs of
# spaces, tabs and newlines, special tokens written in the text, code, and
# the empty string.
#
# No numerals outside ASCII (½, Ⅻ, Arabic-Indic or full-width digits): there
# the JavaScript library is not a reference. SmolLM2's tokenizer.json starts
# with a Digits pre-tokenizer; the Rust library the model was trained with
# splits off every character Rust calls numeric (char::is_numeric: Unicode
# Nd, Nl and No), the JavaScript one only ASCII 0-9 (the regex \d). kai
# follows the Rust rule, so on "½" the two disagree by design (the JavaScript
# ids for " ½" are [3351, 138], kai's and Rust's [216, 16738]).
BPE_TEXTS = [
    "The capital of France is",
    "Once upon a time, there was a little girl named Lily.",
    "I'll say it's   spaced\tout\n\nand   done  ",
    "   leading spaces and trailing   ",
    "\n\n\nnewlines\r\nand CRLF\n",
    "café naïve 東京 emoji 🙂 x²+y²",
    "日本語のテキストと中文混合。한국어도!",
    "👩‍👩‍👧 family, flags 🇫🇷🇩🇪 and ZWJ",
    "In 2024, 1,000,000 people paid $3.50 at 12:45; 007 and 3.14159",
    "def f(x):\n    return x**2  # comment\n",
    "We'LL see: 'tis 're 's 've 'm 'd ''",
    "don't, won't, I'M, you'Re, they've",
    "<|im_start|>user\nHi<|im_end|>\n<|endoftext|>",
    "Zebras, émigrés and Ωmega need byte fallback",
    "?!'s ... --- ***",
    "e\u0301 (e and a combining accent) and \u00e9",
    "tab\there, two  spaces, three   spaces",
    "",
    " ",
    "a",
]

# SentencePiece, the character-level tok105: letters, digits, punctuation,
# contractions, spaces. Its normalizer collapses runs of spaces and strips
# them at the ends; the llama2.c format that kai reads has no normalizer, so
# for those texts `kai_text` is the input on which kai must give the same ids.
# A character the model lacks becomes <unk> (id 0) in SentencePiece; kai has
# no byte fallback for this model and refuses it (`kai_refuses`).
SP_TEXTS = [
    "once upon a time there was a cat",
    "Once upon a time, Lily said: \"Hello!\"",
    "In 2024 she was 7 years old.",
    "we'll go; it's hers, don't you think?",
    "UPPER and lower CASE",
    "  two  spaces and a trailing one ",
    "a",
    "",
    "caf\u00e9",
    "東京",
]


def collapse_spaces(text):
    """SentencePiece's default whitespace rule (remove_extra_whitespaces)."""
    return " ".join(p for p in text.split(" ") if p)


def to_json(doc):
    """JSON with one case per line, so a diff shows which encoding changed."""
    lines = ["{", f' "about": {json.dumps(doc["about"])},', ' "tokenizers": [']
    for k, tok in enumerate(doc["tokenizers"]):
        lines.append("  {")
        for key, value in tok.items():
            if key != "cases":
                lines.append(f"   {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)},")
        lines.append('   "cases": [')
        cases = ["    " + json.dumps(c, ensure_ascii=False) for c in tok["cases"]]
        lines.append(",\n".join(cases))
        lines.append("   ]")
        lines.append("  }" + ("," if k + 1 < len(doc["tokenizers"]) else ""))
    lines += [" ]", "}"]
    return "\n".join(lines) + "\n"


def hf_ids(npm_dir, tok_json, tok_config, texts):
    r = subprocess.run(["node", os.path.join(HERE, "hf_encode.cjs"), npm_dir, tok_json, tok_config],
                       input=json.dumps(texts), capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--npm-dir", required=True, help="where @huggingface/tokenizers is installed")
    ap.add_argument("--models", required=True, help="the shared models directory")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    import sentencepiece

    npm_pkg = os.path.join(a.npm_dir, "node_modules", "@huggingface", "tokenizers", "package.json")
    with open(npm_pkg) as f:
        npm_version = json.load(f)["version"]
    smol = os.path.join(a.models, "smollm2-tokenizer")
    bpe = hf_ids(a.npm_dir, os.path.join(smol, "tokenizer.json"), os.path.join(smol, "tokenizer_config.json"),
                 BPE_TEXTS)
    sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(a.models, "babyllama-tok105", "tok105.model"))
    sp_cases = []
    for text in SP_TEXTS:
        ids = sp.encode(text)
        case = {"text": text, "ids": ids}
        if 0 in ids:                       # <unk>: a character the model does not have
            case["kai_refuses"] = True
        elif collapse_spaces(text) != text:
            case["kai_text"] = collapse_spaces(text)
        sp_cases.append(case)
    doc = {
        "about": "Token ids from independent tokenizers, recorded by tests/data/tokenizer_ids/pin.py "
                 "(its docstring has the command). Checked by tests/tools/test_tokenizer_pinned.py.",
        "tokenizers": [
            {"file": "smollm2-tokenizer/tokenizer.json", "kind": "byte-level BPE",
             "by": f"@huggingface/tokenizers {npm_version} (npm), Tokenizer.encode with add_special_tokens=false",
             "cases": [{"text": t, "ids": i} for t, i in zip(BPE_TEXTS, bpe)]},
            {"file": "babyllama-tok105/tok105.model", "kai_file": "babyllama-tok105/tok105.bin",
             "kind": "SentencePiece",
             "by": f"sentencepiece {sentencepiece.__version__} (python3-sentencepiece), "
                   "SentencePieceProcessor.encode, no BOS",
             "cases": sp_cases},
        ],
    }
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(to_json(doc))
    print(f"{a.out}: {len(BPE_TEXTS)} byte-level BPE and {len(SP_TEXTS)} SentencePiece encodings")


if __name__ == "__main__":
    sys.exit(main())
