"""Counted work: multiply-adds (MACs) and bytes moved per request phase,
arithmetic intensity, and a roofline projection onto real machines.

A forward pass of a transformer multiplies every weight matrix by the
current token's activation vector: one multiply-add per weight, and every
weight byte read once. So one token costs about one MAC per weight byte (for
int8 weights): an *arithmetic intensity* near 1 MAC/byte. A machine whose
memory delivers B bytes/s and whose cores do P MAC/s runs such code at
min(P, intensity x B) MAC/s (the roofline): for intensity below P/B (the
*ridge point*, tens of MAC/byte on a CPU, hundreds on a GPU) it waits for
memory, above it for arithmetic.

- Decode produces one token per pass, so it can never batch: intensity ~1,
  memory-bound everywhere.
- Prefill knows all P prompt tokens at once. kai's runtime still pushes them
  through one at a time (intensity ~1), but a runtime that multiplies each
  weight matrix by all P activation vectors at once (a matrix-matrix product)
  reads each weight once per prompt: intensity ~P, compute-bound once P
  passes the ridge point. The report shows both.

The figures come from `llmrun --timing` when it reports them
(prefill_macs=... decode_kv_write=...: "counted"); otherwise they are
computed here from the model's configuration ("analytic"). Both count, per
phase and request: MACs of the matrix-vector products and of attention,
weight bytes the products read (int8 values plus one float scale per row,
or float32), and KV-cache bytes read and written (float32 keys and values).
"""
import re

PHASE_FIELDS = ["macs", "weight_bytes", "kv_read", "kv_write"]
COUNTED_KEYS = [f"{ph}_{f}" for ph in ("prefill", "decode") for f in PHASE_FIELDS]

GIGA, TERA = 1e9, 1e12
# THE machine table of the roofline (round published peak figures; int8
# multiply-adds, since kai's weights are int8; 1 MAC = 2 "ops" in vendors'
# TOPS). Peak figures: real code reaches perhaps half.
MACHINES = [
    {"name": "Raspberry Pi 5", "what": "4x Cortex-A76 at 2.4 GHz, 32-bit LPDDR4X-4267",
     "bandwidth_Bps": 17 * GIGA, "peak_macs": 0.3 * TERA,
     "source": "memory 4267 MT/s x 4 bytes = 17 GB/s; 4 cores x 2.4 GHz x 32 int8 MAC/cycle (sdot)"},
    {"name": "laptop CPU", "what": "8 x86 cores at 3 GHz with AVX-VNNI, dual-channel DDR5-5600",
     "bandwidth_Bps": 90 * GIGA, "peak_macs": 1.5 * TERA,
     "source": "5600 MT/s x 16 bytes = 90 GB/s; 8 cores x 3 GHz x 64 int8 MAC/cycle"},
    {"name": "datacenter GPU", "what": "NVIDIA H100 SXM, HBM3",
     "bandwidth_Bps": 3350 * GIGA, "peak_macs": 990 * TERA,
     "source": "data sheet: 3.35 TB/s, 1979 dense int8 TOPS"},
]


def parse_counted(timing_line):
    """The counted-work fields of an llmrun timing line, or None if it has
    not all of them (an llmrun that does not count yet)."""
    if not timing_line:
        return None
    fields = dict(re.findall(r"(\w+)=(\d+)", timing_line))
    if not all(k in fields for k in COUNTED_KEYS):
        return None
    return {k: int(fields[k]) for k in COUNTED_KEYS}


def _mat_bytes(rows, cols, float_weights):
    return rows * cols * 4 if float_weights else rows * cols + rows * 4


def llama_pass(cfg, pos, classifier):
    """Work of one forward pass of a Llama-shaped model at position pos
    (0-based), with or without the classifier at the end."""
    d, f, hd = cfg.dim, cfg.hidden_dim, cfg.head_dim
    q, kv = cfg.n_heads * hd, cfg.n_kv_heads * hd
    f32 = cfg.weight_format == 1
    mats = [(q, d), (kv, d), (kv, d), (d, q), (f, d), (f, d), (d, f)]
    macs = cfg.n_layers * sum(r * c for r, c in mats)
    wbytes = cfg.n_layers * sum(_mat_bytes(r, c, f32) for r, c in mats)
    # attention: scores q.k and the weighted sum of values over pos+1 positions
    macs += cfg.n_layers * 2 * cfg.n_heads * hd * (pos + 1)
    kv_read = cfg.n_layers * 2 * kv * 4 * (pos + 1)
    kv_write = cfg.n_layers * 2 * kv * 4
    if classifier:   # tied embedding: vocab x dim
        macs += cfg.vocab_size * d
        wbytes += _mat_bytes(cfg.vocab_size, d, f32)
    return {"macs": macs, "weight_bytes": wbytes, "kv_read": kv_read, "kv_write": kv_write}


def _add(total, part):
    for k in PHASE_FIELDS:
        total[k] = total.get(k, 0) + part[k]
    return total


def analytic(cfg, n_prompt, n_gen):
    """Per-phase work of one request as kai's runtime does it: the prompt one
    token at a time (the classifier only after the last), then n_gen - 1
    decode passes each with the classifier. None for non-Llama models."""
    if cfg.model_kind != 0:
        return None
    out = {}
    pre, dec = {}, {}
    for p in range(n_prompt):
        _add(pre, llama_pass(cfg, p, p == n_prompt - 1))
    for i in range(max(0, n_gen - 1)):
        _add(dec, llama_pass(cfg, n_prompt + i, True))
    for k in PHASE_FIELDS:
        out[f"prefill_{k}"] = pre.get(k, 0)
        out[f"decode_{k}"] = dec.get(k, 0)
    return out


def batched_prefill(cfg, n_prompt):
    """Prefill as one matrix-matrix product: the same MACs as token at a
    time, but each weight read once per prompt; and attention done in tiles
    that stay in cache (as FlashAttention does), so the prompt's keys and
    values are written once and read once rather than once per query."""
    total = {}
    for p in range(n_prompt):
        _add(total, llama_pass(cfg, p, False))
    total["kv_read"] = total["kv_write"]
    no_cls, with_cls = llama_pass(cfg, 0, False), llama_pass(cfg, 0, True)
    total["weight_bytes"] = with_cls["weight_bytes"]                 # every matrix once
    total["macs"] += with_cls["macs"] - no_cls["macs"]               # the classifier, last token only
    return total


def intensity(phase):
    """Multiply-adds per byte moved (weights + KV cache)."""
    moved = phase["weight_bytes"] + phase["kv_read"] + phase["kv_write"]
    return phase["macs"] / moved if moved else 0.0


def phases(work, cfg, n_prompt, n_gen):
    """The rows of the intensity table: name, MACs, bytes, per how many tokens."""
    rows = [{"phase": f"prefill, kai ({n_prompt} tokens one at a time)", "short": "kai prefill", "tokens": n_prompt,
             **{k: work[f"prefill_{k}"] for k in PHASE_FIELDS}}]
    steps = max(0, n_gen - 1)
    if steps:
        rows.append({"phase": "decode (one step)", "short": "decode", "tokens": 1,
                     **{k: work[f"decode_{k}"] / steps for k in PHASE_FIELDS}})
    if cfg is not None and cfg.model_kind == 0:
        rows.append({"phase": f"prefill, batched ({n_prompt} tokens at once; what if)",
                     "short": f"batched prefill, {n_prompt} tokens", "tokens": n_prompt,
                     **batched_prefill(cfg, n_prompt)})
        longest = cfg.runtime_seq_len   # the longest prompt kai's runtime takes
        rows.append({"phase": f"prefill, batched ({longest} tokens at once; what if)",
                     "short": f"batched prefill, {longest} tokens", "tokens": longest, **batched_prefill(cfg, longest)})
    for r in rows:
        r["intensity"] = intensity(r)
    return rows


def roofline(phase, machine):
    """Projected time of a phase on a machine: the larger of the compute
    time at peak and the memory time at full bandwidth, and which one it is."""
    moved = phase["weight_bytes"] + phase["kv_read"] + phase["kv_write"]
    t_compute = phase["macs"] / machine["peak_macs"]
    t_memory = moved / machine["bandwidth_Bps"]
    return {"seconds": max(t_compute, t_memory), "bound": "compute" if t_compute > t_memory else "memory",
            "ridge": machine["peak_macs"] / machine["bandwidth_Bps"]}


def machines_markdown():
    lines = ["| machine | what | memory bandwidth | peak int8 MAC/s | ridge point (MAC/byte) | source |",
             "|---|---|---|---|---|---|"]
    for m in MACHINES:
        lines.append(f"| {m['name']} | {m['what']} | {m['bandwidth_Bps'] / GIGA:.0f} GB/s | "
                     f"{m['peak_macs'] / TERA:g} T | {m['peak_macs'] / m['bandwidth_Bps']:.0f} | {m['source']} |")
    return "\n".join(lines)
