#!/usr/bin/python3
"""Text <-> token ids for the guest runners, in the course's spelling.

    translate_llm_io.py encode --model smol --text "The capital of France is"
    translate_llm_io.py decode --model smol --tokens "504 3575 282 4649 314"

Models and the tokenizer each one uses:
  smol     SmolLM2 tokenizer.json     $KAI_SHARED_MODELS/smollm2-tokenizer/tokenizer.json
  stories  stories260K tok512.bin     $KAI_SHARED_MODELS/stories260K/tok512.bin
  baby     babyllama tok105.bin       $KAI_SHARED_MODELS/babyllama-tok105/tok105.bin
  qwen     Qwen3.5 tokenizer.json     --tokenizer PATH, else models/QWEN/tokenizer.json
KAI_SHARED_MODELS names the real-model directory (models/README.md lists its
files and where to get them); without it, ../shared/models beside the checkout.
`--tokenizer PATH` overrides the choice for any model.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import tokenizer as T  # noqa: E402


def shared_models():
    return os.environ.get("KAI_SHARED_MODELS", os.path.join(ROOT, "..", "shared", "models"))


def tokenizer_path(model, override=None):
    if override:
        return [override]
    s = shared_models()
    table = {
        "smol": [os.path.join(s, "smollm2-tokenizer", "tokenizer.json"),
                 os.path.join(ROOT, "models", "SMOL", "tokenizer.json")],
        "stories": [os.path.join(s, "stories260K", "tok512.bin")],
        "baby": [os.path.join(s, "babyllama-tok105", "tok105.bin")],
        "qwen": [os.path.join(ROOT, "models", "QWEN", "tokenizer.json"),
                 os.path.join(ROOT, "models", "qwen-hf", "tokenizer.json")],
    }
    return table[model]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cmd", choices=["encode", "decode"])
    ap.add_argument("--model", choices=["smol", "stories", "baby", "qwen"], default="smol")
    ap.add_argument("--tokenizer", help="tokenizer.json or llama2.c tokenizer.bin to use instead")
    ap.add_argument("--text")
    ap.add_argument("--tokens")
    ap.add_argument("--bos", action="store_true", help="encode: prepend BOS (stories/baby)")
    a = ap.parse_args(argv)
    cands = tokenizer_path(a.model, a.tokenizer)
    path = next((p for p in cands if os.path.exists(p)), None)
    if path is None:
        print(f"translate_llm_io: no tokenizer for model {a.model}: looked for {', '.join(cands)}"
              + (" (pass --tokenizer PATH to a Qwen3.5 tokenizer.json)" if a.model == "qwen" else
                 " (set KAI_SHARED_MODELS)"), file=sys.stderr)
        return 2
    tok = T.load(path)
    try:
        if a.cmd == "encode":
            text = a.text if a.text is not None else sys.stdin.read()
            if a.bos and isinstance(tok, T.Llama2cTokenizer):
                ids = tok.encode(text, bos=True)
            else:
                ids = tok.encode(text)
            print(" ".join(map(str, ids)))
        else:
            toks = a.tokens if a.tokens is not None else sys.stdin.read()
            print(tok.decode([int(x) for x in toks.replace(",", " ").split()]))
    except ValueError as e:
        print(f"translate_llm_io: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
