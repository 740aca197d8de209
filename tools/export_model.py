#!/usr/bin/python3
"""Exports a model into a kai / course bundle directory.

    export_model.py --from hf SOURCE_DIR --out DIR [--dtype q8|f32] [--runtime-seq-len N]
    export_model.py --from llama2c MODEL.bin --out DIR [--tokenizer tok512.bin] ...

The tokenizer (tokenizer.json beside an HF checkpoint, or --tokenizer) is also
written into the bundle as TOK.BIN (tools/tokbin.py); --eos overrides its
end-of-sequence ids. The chat template of the tokenizer_config.json beside
it, if any, becomes CHAT.TXT (tools/chat_template.py); a template that
CHAT.TXT cannot express is reported by name and left out.

`hf`: a Hugging Face directory (config.json + *.safetensors, sharded or not,
BF16/F16/F32) of model_type `llama` (SmolLM2) or `qwen3_5` (text part only;
model.visual.* and mtp.* are skipped).
`llama2c`: a llama2.c checkpoint (legacy v0 header, e.g. stories260K.bin); wq/wk
rows are permuted per head from adjacent-pair RoPE to rotate-halves.

q8 bundles are written as CFG v1 (llama) / v2 (qwen) exactly like the course;
f32 bundles as kai's CFG v3.  PMT.BIN/EXP.BIN hold a sample prompt and the
reference's (tools/llm_reference.py) greedy continuation of it.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bundle as B  # noqa: E402

EMB_CHUNK = 8192    # embedding rows handled at a time

# Bundle layer keys -> HF names (below "<prefix>layers.N."); the zero-centred
# norms of Qwen3.5 are stored as w in HF and as 1 + w in the bundle.
# Every layer has the two norms and the MLP; what mixes the tokens differs.
_NORMS_AND_MLP = {
    "input_norm": "input_layernorm.weight",
    "post_attn_norm": "post_attention_layernorm.weight",
    "gate_proj": "mlp.gate_proj.weight", "up_proj": "mlp.up_proj.weight",
    "down_proj": "mlp.down_proj.weight",
}
_LLAMA_NAMES = dict(_NORMS_AND_MLP, **{
    "q_proj": "self_attn.q_proj.weight", "k_proj": "self_attn.k_proj.weight",
    "v_proj": "self_attn.v_proj.weight", "o_proj": "self_attn.o_proj.weight",
})
_FULL_NAMES = dict(_LLAMA_NAMES, q_norm="self_attn.q_norm.weight", k_norm="self_attn.k_norm.weight")
_LINEAR_NAMES = dict(_NORMS_AND_MLP, **{
    "conv1d": "linear_attn.conv1d.weight", "dt_bias": "linear_attn.dt_bias",
    "A_log": "linear_attn.A_log", "norm": "linear_attn.norm.weight",
    "in_proj_qkv": "linear_attn.in_proj_qkv.weight", "in_proj_z": "linear_attn.in_proj_z.weight",
    "in_proj_a": "linear_attn.in_proj_a.weight", "in_proj_b": "linear_attn.in_proj_b.weight",
    "out_proj": "linear_attn.out_proj.weight",
})
ZERO_CENTRED = {"input_norm", "post_attn_norm", "q_norm", "k_norm"}


def hf_layer_names(cfg, kind):
    return {"llama": _LLAMA_NAMES, "full": _FULL_NAMES, "linear": _LINEAR_NAMES}[kind]


def hf_shape(cfg, kind, key):
    """HF tensor shape of bundle layer key `key`."""
    for name, n in B.layer_vectors(cfg, kind):
        if name == key:
            if key == "conv1d":
                return (cfg.conv_dim, 1, cfg.linear_conv_kernel)
            return (n,)
    for name, r, c in B.layer_mats(cfg, kind):
        if name == key:
            return (r, c)
    raise KeyError(key)


def hf_layer_keys(cfg, kind):
    """Bundle keys of a layer in a fixed (file) order."""
    return [n for n, _ in B.layer_vectors(cfg, kind)] + [n for n, _, _ in B.layer_mats(cfg, kind)]


def to_hf(cfg, key, arr):
    """Bundle-convention float32 -> HF-convention float32."""
    if cfg.is_qwen and key in ZERO_CENTRED:
        return np.asarray(arr, dtype=np.float32) - np.float32(1.0)
    return arr


def from_hf(cfg, key, arr):
    if cfg.is_qwen and key in ZERO_CENTRED:
        return np.asarray(arr, dtype=np.float32) + np.float32(1.0)
    if key == "conv1d":
        return arr.reshape(cfg.conv_dim, cfg.linear_conv_kernel)
    return arr


def hf_prefix(cfg):
    return "model.language_model." if cfg.is_qwen else "model."


# ---------------------------------------------------------------- configs

def config_from_hf(conf, runtime_seq_len=None, dtype="q8"):
    mt = conf.get("model_type")
    fmt = B.FMT_F32 if dtype == "f32" else B.FMT_Q8
    if mt == "llama":
        if not conf.get("tie_word_embeddings", False):
            raise B.BundleError("untied lm_head is not representable in a bundle")
        if conf.get("rope_scaling"):
            raise B.BundleError("rope_scaling is not supported")
        n_heads = conf["num_attention_heads"]
        hd = conf.get("head_dim") or conf["hidden_size"] // n_heads
        seq = conf.get("max_position_embeddings", 2048)
        return B.Config(model_kind=B.KIND_LLAMA, dim=conf["hidden_size"],
                        hidden_dim=conf["intermediate_size"], n_layers=conf["num_hidden_layers"],
                        n_heads=n_heads, n_kv_heads=conf.get("num_key_value_heads", n_heads),
                        head_dim=hd, vocab_size=conf["vocab_size"], seq_len=seq,
                        runtime_seq_len=runtime_seq_len or min(seq, 256),
                        rms_eps=conf.get("rms_norm_eps", 1e-5),
                        rope_theta=conf.get("rope_theta", 10000.0), weight_format=fmt)
    if mt in ("qwen3_5", "qwen3_5_text"):
        t = conf.get("text_config", conf)
        tie = conf.get("tie_word_embeddings", t.get("tie_word_embeddings", True))
        if not tie:
            raise B.BundleError("untied lm_head is not representable in a bundle")
        rp = t.get("rope_parameters") or {}
        theta = rp.get("rope_theta", t.get("rope_theta", 10000000.0))
        prf = rp.get("partial_rotary_factor", t.get("partial_rotary_factor", 0.25))
        hd = t["head_dim"]
        n = t["num_hidden_layers"]
        lt = t.get("layer_types") or [
            "full_attention" if (i + 1) % t.get("full_attention_interval", 4) == 0
            else "linear_attention" for i in range(n)]
        types = [B.LAYER_LINEAR if s == "linear_attention" else B.LAYER_FULL for s in lt]
        flags = B.FLAG_QK_NORM | (B.FLAG_ATTN_GATE if t.get("attn_output_gate", True) else 0)
        if not flags & B.FLAG_ATTN_GATE:
            raise B.BundleError("qwen3_5 without attention output gate is not supported")
        seq = t.get("max_position_embeddings", 262144)
        return B.Config(model_kind=B.KIND_QWEN, flags=flags, dim=t["hidden_size"],
                        hidden_dim=t["intermediate_size"], n_layers=n,
                        n_heads=t["num_attention_heads"], n_kv_heads=t["num_key_value_heads"],
                        head_dim=hd, vocab_size=t["vocab_size"], seq_len=seq,
                        runtime_seq_len=runtime_seq_len or min(seq, 64),
                        rms_eps=t.get("rms_norm_eps", 1e-6), rope_theta=theta,
                        rope_rotary_dim=int(hd * prf),
                        linear_num_k_heads=t["linear_num_key_heads"],
                        linear_num_v_heads=t["linear_num_value_heads"],
                        linear_key_head_dim=t["linear_key_head_dim"],
                        linear_value_head_dim=t["linear_value_head_dim"],
                        linear_conv_kernel=t["linear_conv_kernel_dim"],
                        layer_types=types, weight_format=fmt)
    raise B.BundleError(f"unsupported model_type {mt!r} (llama, qwen3_5)")


def hf_config(cfg, torch_dtype="bfloat16"):
    """config.json contents for a bundle Config."""
    if not cfg.is_qwen:
        return {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                "hidden_size": cfg.dim, "intermediate_size": cfg.hidden_dim,
                "num_hidden_layers": cfg.n_layers, "num_attention_heads": cfg.n_heads,
                "num_key_value_heads": cfg.n_kv_heads, "head_dim": cfg.head_dim,
                "vocab_size": cfg.vocab_size, "max_position_embeddings": cfg.seq_len,
                "rms_norm_eps": float(np.float32(cfg.rms_eps)),
                "rope_theta": float(np.float32(cfg.rope_theta)), "rope_scaling": None,
                "tie_word_embeddings": True, "hidden_act": "silu", "torch_dtype": torch_dtype,
                "bos_token_id": 1, "eos_token_id": 2}
    text = {"model_type": "qwen3_5_text", "hidden_size": cfg.dim,
            "intermediate_size": cfg.hidden_dim, "num_hidden_layers": cfg.n_layers,
            "num_attention_heads": cfg.n_heads, "num_key_value_heads": cfg.n_kv_heads,
            "head_dim": cfg.head_dim, "vocab_size": cfg.vocab_size,
            "max_position_embeddings": cfg.seq_len, "rms_norm_eps": float(np.float32(cfg.rms_eps)),
            "hidden_act": "silu", "attn_output_gate": True,
            "linear_conv_kernel_dim": cfg.linear_conv_kernel,
            "linear_key_head_dim": cfg.linear_key_head_dim,
            "linear_value_head_dim": cfg.linear_value_head_dim,
            "linear_num_key_heads": cfg.linear_num_k_heads,
            "linear_num_value_heads": cfg.linear_num_v_heads,
            "layer_types": ["linear_attention" if t == B.LAYER_LINEAR else "full_attention"
                            for t in cfg.layer_types],
            "full_attention_interval": 4,
            "rope_parameters": {"rope_type": "default",
                                "rope_theta": float(np.float32(cfg.rope_theta)),
                                "partial_rotary_factor": cfg.rope_rotary_dim / cfg.head_dim,
                                "mrope_interleaved": True, "mrope_section": [11, 11, 10]},
            "tie_word_embeddings": True, "torch_dtype": torch_dtype}
    return {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
            "tie_word_embeddings": True, "text_config": text,
            "vision_config": {"model_type": "qwen3_5", "note": "not part of this checkpoint"},
            "torch_dtype": torch_dtype}


# ---------------------------------------------------------------- sources

class HFSource:
    def __init__(self, path, runtime_seq_len, dtype):
        with open(os.path.join(path, "config.json")) as f:
            self.conf = json.load(f)
        self.cfg = config_from_hf(self.conf, runtime_seq_len, dtype)
        self.st = B.SafetensorsReader(path)
        cfg = self.cfg
        # multimodal class, then a text-only save (`model.`), then a bare text model
        pre = next((p for p in (hf_prefix(cfg), "model.", "")
                    if p + "embed_tokens.weight" in self.st), None)
        if pre is None:
            raise B.BundleError("checkpoint has no embed_tokens.weight")
        self.pre = pre
        if self.st.shape(pre + "embed_tokens.weight") != (cfg.vocab_size, cfg.dim):
            raise B.BundleError("embed_tokens shape does not match config")
        self.tokenizer = os.path.join(path, "tokenizer.json")
        self.source = f"Hugging Face checkpoint {os.path.abspath(path)} ({self.conf.get('model_type')})"

    def embedding(self):
        name = self.pre + "embed_tokens.weight"
        for r0 in range(0, self.cfg.vocab_size, EMB_CHUNK):
            yield self.st.get(name, rows=(r0, min(self.cfg.vocab_size, r0 + EMB_CHUNK)))

    def final_norm(self):
        return from_hf(self.cfg, "input_norm", self.st.get(self.pre + "norm.weight"))

    def layer(self, i):
        cfg = self.cfg
        kind = B.layer_kind(cfg, i)
        names = hf_layer_names(cfg, kind)
        out = {}
        for key in hf_layer_keys(cfg, kind):
            name = f"{self.pre}layers.{i}.{names[key]}"
            a = self.st.get(name)
            if a.shape != hf_shape(cfg, kind, key):
                raise B.BundleError(f"{name}: shape {a.shape}, want {hf_shape(cfg, kind, key)}")
            out[key] = from_hf(cfg, key, a)
        return out


def llama2c_rope_perm(n_heads, head_dim):
    """Row order that turns adjacent-pair RoPE rows into rotate-halves rows."""
    per = np.concatenate([np.arange(0, head_dim, 2), np.arange(1, head_dim, 2)])
    return np.concatenate([h * head_dim + per for h in range(n_heads)])


class Llama2cSource:
    def __init__(self, path, runtime_seq_len, dtype, tokenizer=None):
        with open(path, "rb") as f:
            data = f.read()
        dim, hidden, n_layers, n_heads, n_kv, vocab, seq = struct.unpack_from("<7i", data, 0)
        if vocab < 0:
            raise B.BundleError("untied classifier (negative vocab_size) is not representable")
        if dim <= 0 or n_heads <= 0 or dim % n_heads:
            raise B.BundleError("not a llama2.c v0 checkpoint (bad header)")
        self.cfg = B.Config(model_kind=B.KIND_LLAMA, dim=dim, hidden_dim=hidden, n_layers=n_layers,
                            n_heads=n_heads, n_kv_heads=n_kv, vocab_size=vocab, seq_len=seq,
                            runtime_seq_len=runtime_seq_len or min(seq, 256), rms_eps=1e-5,
                            rope_theta=10000.0,
                            weight_format=B.FMT_F32 if dtype == "f32" else B.FMT_Q8)
        hd = dim // n_heads
        kv = n_kv * hd
        L = n_layers
        w = np.frombuffer(data, dtype="<f4", offset=28)
        shapes = [("emb", (vocab, dim)), ("rms_att", (L, dim)), ("wq", (L, dim, dim)),
                  ("wk", (L, kv, dim)), ("wv", (L, kv, dim)), ("wo", (L, dim, dim)),
                  ("rms_ffn", (L, dim)), ("w1", (L, hidden, dim)), ("w2", (L, dim, hidden)),
                  ("w3", (L, hidden, dim)), ("rms_final", (dim,))]
        off = 0
        self.t = {}
        for name, shp in shapes:
            n = int(np.prod(shp))
            if off + n > w.size:
                raise B.BundleError("llama2.c checkpoint truncated")
            self.t[name] = w[off:off + n].reshape(shp)
            off += n
        # freq_cis_real/imag (seq * hd/2 each) follow; kai computes RoPE itself
        self.qperm = llama2c_rope_perm(n_heads, hd)
        self.kperm = llama2c_rope_perm(n_kv, hd)
        if tokenizer is None:
            d = os.path.dirname(os.path.abspath(path))
            cands = sorted(f for f in os.listdir(d) if f.startswith("tok") and f.endswith(".bin"))
            tokenizer = os.path.join(d, cands[0]) if cands else None
        self.tokenizer = tokenizer
        self.source = f"llama2.c checkpoint {os.path.abspath(path)}"

    def embedding(self):
        e = self.t["emb"]
        for r0 in range(0, e.shape[0], EMB_CHUNK):
            yield e[r0:r0 + EMB_CHUNK]

    def final_norm(self):
        return self.t["rms_final"]

    def layer(self, i):
        t = self.t
        return {"input_norm": t["rms_att"][i], "post_attn_norm": t["rms_ffn"][i],
                "q_proj": t["wq"][i][self.qperm], "k_proj": t["wk"][i][self.kperm],
                "v_proj": t["wv"][i], "o_proj": t["wo"][i],
                "gate_proj": t["w1"][i], "up_proj": t["w3"][i], "down_proj": t["w2"][i]}


# ---------------------------------------------------------------- writing

def load_tokenizer(path):
    if not path or not os.path.exists(path):
        return None
    try:
        import tokenizer as T
        return T.load(path)
    except Exception:   # a tokenizer problem must not stop an export
        return None


def write_tok(tok_path, out_dir, vocab_size, eos_ids=None):
    """TOK.BIN (tools/tokbin.py) from the model's tokenizer, or none: a bundle
    without TOK.BIN still runs on token ids (docs/model-format.md).  Returns the
    INFO.TXT note.  An unsupported tokenizer is reported, never fatal."""
    import tokbin
    dst = os.path.join(out_dir, "TOK.BIN")
    os.makedirs(out_dir, exist_ok=True)
    if os.path.exists(dst):
        os.remove(dst)              # never leave a stale tokenizer beside new weights
    if not tok_path or not os.path.exists(tok_path):
        return "no TOK.BIN (no tokenizer given or found)"
    try:
        d = tokbin.write_tokbin(tok_path, dst, eos_ids=eos_ids, max_vocab=vocab_size)
    except (tokbin.TokBinError, ValueError, KeyError, OSError) as e:
        print(f"export_model: warning: TOK.BIN not written: {e}", file=sys.stderr)
        return f"no TOK.BIN ({e})"
    return f"TOK.BIN from {os.path.abspath(tok_path)} ({len(d['pieces'])} tokens, eos {d['eos']})"


def write_weights(src, out_dir):
    """Stream `src` (embedding(), layer(i), final_norm(), cfg) into a bundle's
    weight files, one tensor group at a time, so a big model never sits in
    memory whole.  Returns the BundleWriter, for write_sample."""
    cfg = src.cfg
    w = B.BundleWriter(out_dir, cfg)
    w.header()
    w.embedding(src.embedding())
    for i in range(cfg.n_layers):
        w.layer(i, src.layer(i))
    w.final_norm(src.final_norm())
    return w


def write_bundle(src, out_dir, prompt_ids=None, predict=16, tok=None, extra=None,
                 prompt_text=None):
    """write_weights, then compute PMT/EXP with the reference.  Returns
    (prompt ids, expected ids)."""
    w = write_weights(src, out_dir)
    return write_sample(w, prompt_ids, predict, tok, extra, prompt_text)


def write_sample(w, prompt_ids, predict, tok=None, extra=None, prompt_text=None):
    import llm_reference as R
    cfg = w.cfg
    if prompt_ids is None:
        prompt_ids = [1]
    prompt_ids = [int(t) for t in prompt_ids]
    predict = max(0, min(predict, cfg.runtime_seq_len - len(prompt_ids)))
    expected = []
    if predict:
        ref = R.Reference.load(w.dir)
        expected = ref.generate(prompt_ids, predict)
    decoded = None
    if tok is not None:
        try:
            decoded = {"prompt": prompt_text if prompt_text is not None else tok.decode(prompt_ids),
                       "expected": tok.decode(expected)}
        except Exception:
            decoded = None
    info = {"exporter": "kai tools/export_model.py",
            "weight_format": "f32" if cfg.weight_format == B.FMT_F32 else "q8",
            "expected_note": f"greedy continuation by tools/llm_reference.py (float64), {len(expected)} tokens"}
    if extra:
        info.update(extra)
    w.sample(prompt_ids, expected, info, decoded)
    return prompt_ids, expected


def main(argv=None):
    ap = argparse.ArgumentParser(description="Export a model to a kai/course bundle")
    ap.add_argument("--from", dest="kind", choices=["hf", "llama2c"], required=True)
    ap.add_argument("source")
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", choices=["q8", "f32"], default="q8")
    ap.add_argument("--runtime-seq-len", type=int)
    ap.add_argument("--tokenizer", help="tokenizer.json / tokenizer.bin for the sample prompt")
    ap.add_argument("--prompt", help="sample prompt text (needs a tokenizer)")
    ap.add_argument("--prompt-ids", help="sample prompt as ids, e.g. '1 2 3'")
    ap.add_argument("--predict", type=int, default=None,
                    help="tokens of reference continuation in EXP.BIN (0 skips)")
    ap.add_argument("--eos", help="TOK.BIN end-of-sequence ids, e.g. '0 2' (default: from the "
                    "tokenizer: llama2.c 2, HF tokenizer_config.json / generation_config.json)")
    a = ap.parse_args(argv)
    try:
        if a.kind == "hf":
            src = HFSource(a.source, a.runtime_seq_len, a.dtype)
            tok_path = a.tokenizer or src.tokenizer
        else:
            src = Llama2cSource(a.source, a.runtime_seq_len, a.dtype, a.tokenizer)
            tok_path = src.tokenizer
        tok = load_tokenizer(tok_path)
        text = None
        if a.prompt_ids:
            ids = [int(x) for x in a.prompt_ids.split()]
        elif a.kind == "llama2c":
            ids = [1]                    # BOS, as llama2.c's run with an empty prompt
            text = ""
        elif tok is not None:
            text = a.prompt if a.prompt is not None else "Once upon a time"
            ids = tok.encode(text)
        else:
            ids = [1, 2, 3, 4]
        predict = a.predict if a.predict is not None else (40 if a.kind == "llama2c" else 16)
        extra = {"source": src.source,
                 "tokenizer": write_tok(tok_path, a.out, src.cfg.vocab_size,
                                        [int(x) for x in a.eos.split()] if a.eos else None)}
        import chat_template
        extra["chat_template"] = chat_template.export(tok_path, a.out)
        pmt, exp = write_bundle(src, a.out, ids, predict, tok, extra, text)
    except (B.BundleError, OSError, KeyError, ValueError) as e:
        print(f"export_model: error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {a.out}: prompt {' '.join(map(str, pmt))} -> {' '.join(map(str, exp))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
