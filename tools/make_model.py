#!/usr/bin/python3
"""Deterministic synthetic models (random weights, real shapes) as kai bundles.

    make_model.py --preset P --out DIR [--dtype q8|f32] [--seed N] [--hf-out DIR]
                  [--hf-dtype bf16|f32] [--shard-mb MB] [--predict N] [--tokenizer PATH]

Presets: tiny-llama, tiny-qwen (small, for tests), mid-llama (the open-loop
queueing sweep's model), smol135m (SmolLM2-135M's exact shape), qwen08b
(Qwen3.5-0.8B text model's shape, see ASSUMPTIONS below).
Each tensor comes from its own seeded numpy generator, so a model is the same
whatever else is generated, and the big presets stream layer by layer.
All weights are rounded to bf16-representable values, so the optional Hugging
Face checkpoint (--hf-out) holds exactly the same model even in bf16, and
`export_model.py --from hf` of it reproduces the bundle bit for bit.

Weights: matrices N(0, 1/sqrt(fan_in)) (Llama's o_proj times 0.3); embedding
N(0, 0.1); RMSNorm weights 1 + N(0, 0.05), the final norm times 10 (Qwen's
zero-centred ones stored as that minus one in HF); Gated DeltaNet: conv1d
N(0, 1/sqrt(kernel)), A_log = log U(0.5, 4), dt_bias N(0, 0.5), gated-norm weight
1 + N(0, 0.05).  See EMB_STD below for why.
"""
import argparse
import json
import os
import shutil
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bundle as B          # noqa: E402
import export_model as X    # noqa: E402

# Qwen3.5-0.8B (text model) ASSUMPTIONS, from the published config.json and
# model card as we know them (not verifiable offline here):
#   hidden_size 1024, intermediate_size 3584, 24 layers = 6 x (3 linear + 1 full),
#   full attention: 8 heads, 2 KV heads, head_dim 256, output gate, q/k norm,
#   partial_rotary_factor 0.25 (rotary dim 64), rope_theta 1e7, rms_norm_eps 1e-6;
#   Gated DeltaNet: 16 key heads and 16 value heads of dim 128, conv kernel 4;
#   vocab 248320 (248,070 real tokens, padded), max_position_embeddings 262144,
#   tied embeddings; runtime_seq_len 64 as the course's export.
QWEN08B_NOTE = ("Qwen3.5-0.8B text shape as assumed by kai: hidden 1024, intermediate 3584, "
                "24 layers (3 linear + 1 full attention, repeated), 8 heads / 2 KV heads of dim 256, "
                "partial rotary 0.25, rope_theta 1e7, linear 16 k / 16 v heads of dim 128, conv 4, "
                "vocab 248320, tied embeddings")


def _qwen_types(n):
    return [B.LAYER_FULL if (i + 1) % 4 == 0 else B.LAYER_LINEAR for i in range(n)]


PRESETS = {
    "tiny-llama": dict(model_kind=B.KIND_LLAMA, dim=64, hidden_dim=176, n_layers=3, n_heads=4,
                       n_kv_heads=2, vocab_size=320, seq_len=512, runtime_seq_len=96,
                       rms_eps=1e-5, rope_theta=10000.0),
    "tiny-qwen": dict(model_kind=B.KIND_QWEN, flags=B.FLAG_ATTN_GATE | B.FLAG_QK_NORM, dim=64,
                      hidden_dim=160, n_layers=4, n_heads=4, n_kv_heads=2, head_dim=32,
                      vocab_size=384, seq_len=4096, runtime_seq_len=64, rms_eps=1e-6,
                      rope_theta=10000000.0, rope_rotary_dim=8, linear_num_k_heads=2,
                      linear_num_v_heads=4, linear_key_head_dim=16, linear_value_head_dim=16,
                      linear_conv_kernel=4, layer_types=_qwen_types(4)),
    # Between the two: big enough that one short request keeps a worker busy
    # for tens of 10 ms timer ticks in exact mode, small enough that a queueing
    # sweep of thousands of requests fits in minutes (tools/bench.py --open-loop).
    "mid-llama": dict(model_kind=B.KIND_LLAMA, dim=256, hidden_dim=688, n_layers=6, n_heads=8,
                      n_kv_heads=4, vocab_size=4096, seq_len=512, runtime_seq_len=64,
                      rms_eps=1e-5, rope_theta=10000.0),
    "smol135m": dict(model_kind=B.KIND_LLAMA, dim=576, hidden_dim=1536, n_layers=30, n_heads=9,
                     n_kv_heads=3, vocab_size=49152, seq_len=8192, runtime_seq_len=256,
                     rms_eps=1e-5, rope_theta=100000.0),
    "qwen08b": dict(model_kind=B.KIND_QWEN, flags=B.FLAG_ATTN_GATE | B.FLAG_QK_NORM, dim=1024,
                    hidden_dim=3584, n_layers=24, n_heads=8, n_kv_heads=2, head_dim=256,
                    vocab_size=248320, seq_len=262144, runtime_seq_len=64, rms_eps=1e-6,
                    rope_theta=10000000.0, rope_rotary_dim=64, linear_num_k_heads=16,
                    linear_num_v_heads=16, linear_key_head_dim=128, linear_value_head_dim=128,
                    linear_conv_kernel=4, layer_types=_qwen_types(24)),
}
# sample prompt and how many reference tokens EXP.BIN gets by default
SAMPLE = {"tiny-llama": ([1, 17, 42, 99, 7, 250], 24), "mid-llama": ([1, 17, 42, 99, 7, 250], 8),
          "tiny-qwen": ([1, 17, 42, 99, 7, 250], 24),
          "smol135m": ([504, 3575, 282, 4649, 314], 4), "qwen08b": ([760, 6511, 314, 9338, 369], 4)}

EMB_CHUNK = X.EMB_CHUNK
# With a tied classifier, a random model whose embedding is as large as the layer
# outputs just repeats its input token (the logit of the current token is |e|^2).
# A small embedding removes that bias; the final norm's gain restores a logit
# spread of a few units, so greedy choices are not near-ties.
EMB_STD = 0.1
FINAL_GAIN = 10.0
# Llama's attention output, as large as the tiny embedding's 50x, would wash out which
# token is current: the model then repeats one token. A smaller o_proj keeps it.
LLAMA_ATTN_OUT = 0.3


def make_config(preset, dtype):
    kw = dict(PRESETS[preset])
    if "layer_types" in kw:
        kw["layer_types"] = list(kw["layer_types"])
    kw["weight_format"] = B.FMT_F32 if dtype == "f32" else B.FMT_Q8
    return B.Config(**kw)


class Synth:
    """Generates the weights of a config, tensor by tensor, reproducibly."""

    def __init__(self, cfg, seed):
        self.cfg = cfg
        self.seed = seed

    def _rng(self, *key):
        return np.random.default_rng([self.seed] + list(key))

    def _normal(self, key, shape, std, mean=0.0):
        a = self._rng(*key).standard_normal(shape, dtype=np.float32)
        a *= np.float32(std)
        if mean:
            a += np.float32(mean)
        return B.round_bf16(a)

    def embedding(self):
        c = self.cfg
        for ci, r0 in enumerate(range(0, c.vocab_size, EMB_CHUNK)):
            yield self._normal((1, ci), (min(EMB_CHUNK, c.vocab_size - r0), c.dim), EMB_STD)

    def _norm(self, key, n, gain=1.0):
        """A norm weight ~ gain * (1 + N(0, 0.05)) in bundle convention (Qwen's
        zero-centred ones are 1 + w with w bf16-representable)."""
        if self.cfg.is_qwen:
            return self._normal(key, (n,), 0.05 * gain, gain - 1.0) + np.float32(1.0)
        return self._normal(key, (n,), 0.05 * gain, gain)

    def final_norm(self):
        return self._norm((2,), self.cfg.dim, FINAL_GAIN)

    def layer(self, i):
        c = self.cfg
        kind = B.layer_kind(c, i)
        out = {}
        for ti, (name, n) in enumerate(B.layer_vectors(c, kind)):
            key = (3, i, ti)
            if name in X.ZERO_CENTRED:
                out[name] = self._norm(key, n)
            elif name == "conv1d":
                out[name] = self._normal(key, (c.conv_dim, c.linear_conv_kernel),
                                         1.0 / np.sqrt(c.linear_conv_kernel))
            elif name == "A_log":
                out[name] = B.round_bf16(np.log(self._rng(*key).uniform(0.5, 4.0, n)).astype(np.float32))
            elif name == "dt_bias":
                out[name] = self._normal(key, (n,), 0.5)
            elif name == "norm":
                out[name] = self._normal(key, (n,), 0.05, 1.0)
            else:
                raise AssertionError(name)
        for ti, (name, r, cols) in enumerate(B.layer_mats(c, kind)):
            std = 1.0 / np.sqrt(cols)
            if name == "o_proj" and kind == "llama":
                std *= LLAMA_ATTN_OUT
            out[name] = self._normal((4, i, ti), (r, cols), std)
        return out


class TeeToHF:
    """Wraps a Synth so that everything generated is also written as safetensors."""

    def __init__(self, synth, hf_dir, dtype, shard_bytes):
        self.s = synth
        self.cfg = synth.cfg
        cfg = self.cfg
        pre = X.hf_prefix(cfg)
        specs = [(pre + "embed_tokens.weight", (cfg.vocab_size, cfg.dim))]
        self.layer_specs = []
        for i in range(cfg.n_layers):
            kind = B.layer_kind(cfg, i)
            names = X.hf_layer_names(cfg, kind)
            ls = [(k, f"{pre}layers.{i}.{names[k]}", X.hf_shape(cfg, kind, k))
                  for k in X.hf_layer_keys(cfg, kind)]
            self.layer_specs.append(ls)
            specs += [(n, s) for _, n, s in ls]
        specs.append((pre + "norm.weight", (cfg.dim,)))
        self.pre = pre
        self.w = B.SafetensorsWriter(hf_dir, specs, "BF16" if dtype == "bf16" else "F32", shard_bytes)
        with open(os.path.join(hf_dir, "config.json"), "w") as f:
            json.dump(X.hf_config(cfg, "bfloat16" if dtype == "bf16" else "float32"), f, indent=2)

    def embedding(self):
        name = self.pre + "embed_tokens.weight"
        done = 0
        for ch in self.s.embedding():
            done += ch.shape[0]
            self.w.write(name, ch, last=done == self.cfg.vocab_size)
            yield ch

    def layer(self, i):
        lw = self.s.layer(i)
        for key, name, shape in self.layer_specs[i]:
            self.w.write(name, np.asarray(X.to_hf(self.cfg, key, lw[key])).reshape(shape))
        return lw

    def final_norm(self):
        n = self.s.final_norm()
        self.w.write(self.pre + "norm.weight", X.to_hf(self.cfg, "input_norm", n))
        self.w.close()
        return n


def main(argv=None):
    ap = argparse.ArgumentParser(description="Make a deterministic synthetic kai model")
    ap.add_argument("--preset", choices=sorted(PRESETS), required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", choices=["q8", "f32"], default="q8")
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--hf-out", help="also write a Hugging Face style checkpoint here")
    ap.add_argument("--hf-dtype", choices=["bf16", "f32"], default="bf16")
    ap.add_argument("--shard-mb", type=float, default=2000.0,
                    help="max safetensors shard size in MB (more shards + index when exceeded)")
    ap.add_argument("--predict", type=int, help="reference tokens for EXP.BIN (default per preset)")
    ap.add_argument("--tokenizer", help="tokenizer.json / llama2.c tokenizer.bin to pair with the model: "
                    "written as TOK.BIN (and copied into --hf-out); at most the preset's vocab_size tokens")
    a = ap.parse_args(argv)
    t0 = time.time()
    cfg = make_config(a.preset, a.dtype)
    src = Synth(cfg, a.seed)
    if a.hf_out:
        src = TeeToHF(src, a.hf_out, a.hf_dtype, int(a.shard_mb * 1e6))
    prompt, default_predict = SAMPLE[a.preset]
    predict = default_predict if a.predict is None else a.predict
    extra = {"source": f"synthetic preset {a.preset}, seed {a.seed} (tools/make_model.py)",
             "expected_note": None}
    if a.preset == "qwen08b":
        extra["assumptions"] = QWEN08B_NOTE
    if a.tokenizer:
        import tokbin
        os.makedirs(a.out, exist_ok=True)
        try:
            d = tokbin.write_tokbin(a.tokenizer, os.path.join(a.out, "TOK.BIN"), max_vocab=cfg.vocab_size)
        except (tokbin.TokBinError, ValueError, KeyError, OSError) as e:
            print(f"make_model: error: --tokenizer {a.tokenizer}: {e}", file=sys.stderr)
            return 1
        extra["tokenizer"] = f"TOK.BIN from {os.path.abspath(a.tokenizer)} ({len(d['pieces'])} tokens)"
        if a.hf_out and a.tokenizer.endswith(".json"):
            os.makedirs(a.hf_out, exist_ok=True)
            shutil.copyfile(a.tokenizer, os.path.join(a.hf_out, "tokenizer.json"))
    elif os.path.exists(os.path.join(a.out, "TOK.BIN")):
        os.remove(os.path.join(a.out, "TOK.BIN"))   # a stale tokenizer must not pair with new weights
    w = X.write_weights(src, a.out)
    t_gen = time.time() - t0
    extra["generation_seconds"] = round(t_gen, 2)
    pmt, exp = X.write_sample(w, prompt, predict, None, extra)
    # write_sample fills expected_note; make it say what it is for the big presets
    info_path = os.path.join(a.out, "INFO.TXT")
    with open(info_path) as f:
        info = json.load(f)
    info["expected_note"] = (f"greedy continuation by tools/llm_reference.py (float64) of the sample "
                             f"prompt, {len(exp)} tokens" +
                             ("" if predict >= 16 else
                              "; kept short (0 = skipped) to keep generation fast "
                              "(run tools/llm_reference.py for more)"))
    with open(info_path, "w") as f:
        f.write(B.dumps_info(info) + "\n")
    print(f"wrote {a.out} ({a.preset}, {a.dtype}) in {time.time() - t0:.1f}s: "
          f"prompt {' '.join(map(str, pmt))} -> {' '.join(map(str, exp))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
