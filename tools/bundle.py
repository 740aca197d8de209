#!/usr/bin/python3
"""Reading and writing kai / course model bundles (docs/model-format.md
describes every version of the format).

A bundle is a directory of small files: CFG.BIN, EMB.BIN, NRM.BIN, Lnn.BIN,
ROP.BIN, LTY.BIN (Qwen), PMT.BIN / EXP.BIN and text side notes.  CFG v1 (Llama)
and v2 (Qwen3.5) are the course's; v3 is kai's extension that adds
`weight_format` (0 = q8 qmats, 1 = float32 matrices).

In memory a model is a `Config` plus plain numpy arrays (float32, the real
weights, Qwen norms already as `1 + w`); `Mat` wraps a stored matrix so the
reference can multiply without dequantising big matrices up front.
"""
import json
import os
import struct

import numpy as np

MAGIC = 0x31474643          # "CFG1"
KIND_LLAMA, KIND_QWEN = 0, 1
FMT_Q8, FMT_F32 = 0, 1
FLAG_ATTN_GATE, FLAG_QK_NORM = 1, 2
LAYER_FULL, LAYER_LINEAR = 0, 1

# Order of the CFG v2/v3 fields after magic and version.
_V2_FIELDS = ["model_kind", "flags", "dim", "hidden_dim", "n_layers", "n_heads",
              "n_kv_heads", "head_dim", "vocab_size", "seq_len", "runtime_seq_len",
              "rms_eps", "rope_theta", "rope_rotary_dim", "linear_num_k_heads",
              "linear_num_v_heads", "linear_key_head_dim", "linear_value_head_dim",
              "linear_conv_kernel"]
_FLOAT_FIELDS = ("rms_eps", "rope_theta")

LLAMA_MATS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
QWEN_FULL_MATS = LLAMA_MATS
QWEN_LINEAR_MATS = ["in_proj_qkv", "in_proj_z", "in_proj_a", "in_proj_b", "out_proj",
                    "gate_proj", "up_proj", "down_proj"]


class BundleError(Exception):
    pass


class Config:
    """All header fields of a bundle, whatever CFG version it came from."""

    def __init__(self, **kw):
        self.version = 0                # 0 = choose when writing
        self.model_kind = KIND_LLAMA
        self.flags = 0
        self.dim = self.hidden_dim = self.n_layers = self.n_heads = self.n_kv_heads = 0
        self.head_dim = 0
        self.vocab_size = self.seq_len = self.runtime_seq_len = 0
        self.rms_eps = 1e-5
        self.rope_theta = 10000.0
        self.rope_rotary_dim = 0
        self.linear_num_k_heads = self.linear_num_v_heads = 0
        self.linear_key_head_dim = self.linear_value_head_dim = 0
        self.linear_conv_kernel = 0
        self.weight_format = FMT_Q8
        self.layer_types = None         # list of LAYER_* for Qwen
        for k, v in kw.items():
            if not hasattr(self, k):
                raise TypeError(f"unknown config field {k}")
            setattr(self, k, v)
        if not self.head_dim and self.n_heads:
            self.head_dim = self.dim // self.n_heads
        if not self.rope_rotary_dim:
            self.rope_rotary_dim = self.head_dim

    # derived sizes of the Gated DeltaNet layer
    @property
    def key_dim(self):
        return self.linear_num_k_heads * self.linear_key_head_dim

    @property
    def value_dim(self):
        return self.linear_num_v_heads * self.linear_value_head_dim

    @property
    def conv_dim(self):
        return 2 * self.key_dim + self.value_dim

    @property
    def is_qwen(self):
        return self.model_kind == KIND_QWEN

    def as_dict(self):
        d = {k: getattr(self, k) for k in ["version"] + _V2_FIELDS + ["weight_format"]}
        d["rms_eps"] = float(np.float32(self.rms_eps))
        d["rope_theta"] = float(np.float32(self.rope_theta))
        if self.layer_types is not None:
            d["layer_types"] = ["linear" if t == LAYER_LINEAR else "full" for t in self.layer_types]
        return d

    def validate(self):
        c = self
        if c.dim <= 0 or c.n_layers <= 0 or c.n_heads <= 0 or c.n_kv_heads <= 0:
            raise BundleError("bad config: zero sizes")
        if c.n_heads % c.n_kv_heads:
            raise BundleError("bad config: n_heads not a multiple of n_kv_heads")
        if c.rope_rotary_dim % 2 or c.rope_rotary_dim > c.head_dim:
            raise BundleError("bad config: rope_rotary_dim")
        if not c.is_qwen and c.head_dim * c.n_heads != c.dim:
            raise BundleError("bad config: llama needs head_dim * n_heads == dim")
        if c.runtime_seq_len <= 0 or c.runtime_seq_len > max(c.seq_len, 1):
            raise BundleError("bad config: runtime_seq_len")
        if c.is_qwen:
            if c.linear_num_k_heads <= 0 or c.linear_num_v_heads % c.linear_num_k_heads:
                raise BundleError("bad config: linear heads")
            if c.layer_types is not None and len(c.layer_types) != c.n_layers:
                raise BundleError("bad config: layer_types length")


def cfg_version(cfg):
    """The CFG version a config is written as: the course's v1/v2 for q8, v3 for f32."""
    if cfg.version:
        return cfg.version
    if cfg.weight_format == FMT_F32:
        return 3
    return 2 if cfg.is_qwen else 1


def dumps_info(obj):
    """JSON with lists of numbers kept on one line."""
    import re
    text = json.dumps(obj, indent=2)
    return re.sub(r"\[[\s\d.,eE+-]*\]", lambda m: " ".join(m.group().split()), text)


def pack_cfg(cfg):
    version = cfg_version(cfg)
    if version == 1:
        if cfg.is_qwen or cfg.weight_format != FMT_Q8:
            raise BundleError("CFG v1 is only for q8 llama bundles")
        return struct.pack("<10I2f", MAGIC, 1, cfg.dim, cfg.hidden_dim, cfg.n_layers,
                           cfg.n_heads, cfg.n_kv_heads, cfg.vocab_size, cfg.seq_len,
                           cfg.runtime_seq_len, cfg.rms_eps, cfg.rope_theta)
    if version == 2 and cfg.weight_format != FMT_Q8:
        raise BundleError("CFG v2 is only for q8 bundles")
    vals = [getattr(cfg, f) for f in _V2_FIELDS]
    # magic, version, 11 u32, 2 f32, 6 u32
    out = struct.pack("<13I", MAGIC, version, *vals[:11])
    out += struct.pack("<2f", vals[11], vals[12])
    out += struct.pack("<6I", *vals[13:])
    if version == 3:
        out += struct.pack("<I", cfg.weight_format)
    return out


def parse_cfg(data):
    if len(data) < 8:
        raise BundleError("CFG.BIN too short")
    magic, version = struct.unpack_from("<2I", data, 0)
    if magic != MAGIC:
        raise BundleError(f"CFG.BIN bad magic {magic:#x}")
    if version == 1:
        if len(data) < 48:
            raise BundleError("CFG.BIN v1 too short")
        v = struct.unpack_from("<10I2f", data, 0)
        cfg = Config(version=1, model_kind=KIND_LLAMA, dim=v[2], hidden_dim=v[3], n_layers=v[4],
                     n_heads=v[5], n_kv_heads=v[6], vocab_size=v[7], seq_len=v[8],
                     runtime_seq_len=v[9], rms_eps=v[10], rope_theta=v[11])
        return cfg
    if version not in (2, 3):
        raise BundleError(f"CFG.BIN unknown version {version}")
    need = 84 if version == 2 else 88
    if len(data) < need:
        raise BundleError(f"CFG.BIN v{version} too short")
    u1 = struct.unpack_from("<11I", data, 8)
    f = struct.unpack_from("<2f", data, 52)
    u2 = struct.unpack_from("<6I", data, 60)
    vals = list(u1) + list(f) + list(u2)
    kw = dict(zip(_V2_FIELDS, vals))
    kw["version"] = version
    kw["weight_format"] = struct.unpack_from("<I", data, 84)[0] if version == 3 else FMT_Q8
    if version == 2 and kw["model_kind"] != KIND_QWEN:
        raise BundleError("CFG v2 must be model_kind 1 (qwen)")
    if kw["weight_format"] not in (FMT_Q8, FMT_F32):
        raise BundleError(f"unknown weight_format {kw['weight_format']}")
    if kw["model_kind"] not in (KIND_LLAMA, KIND_QWEN):
        raise BundleError(f"unknown model_kind {kw['model_kind']}")
    return Config(**kw)


# ---------------------------------------------------------------- matrices

def quantize_q8(w):
    """Row-wise symmetric int8 as the course: (scale float32[rows], q int8[rows, cols])."""
    w = np.asarray(w, dtype=np.float32)
    amax = np.max(np.abs(w), axis=1)
    scale = (amax / np.float32(127.0)).astype(np.float32)
    scale[amax == 0] = 1.0
    r = w / scale[:, None]
    q = np.clip(np.sign(r) * np.floor(np.abs(r) + 0.5), -127, 127).astype(np.int8)
    return scale, q


def mat_bytes(w, fmt):
    """Serialised matrix in the bundle's weight format."""
    w = np.asarray(w, dtype=np.float32)
    assert w.ndim == 2
    if fmt == FMT_F32:
        return np.ascontiguousarray(w).tobytes()
    scale, q = quantize_q8(w)
    return scale.astype("<f4").tobytes() + q.tobytes()


def mat_nbytes(rows, cols, fmt):
    return rows * cols * 4 if fmt == FMT_F32 else rows * 4 + rows * cols


class Mat:
    """A stored matrix (q8 or f32) with a float64 matrix-vector product."""

    CACHE_LIMIT = 1 << 22   # dequantise matrices up to this many elements once

    def __init__(self, rows, cols, fmt, scale=None, q=None, w=None):
        self.rows, self.cols, self.fmt = rows, cols, fmt
        self.scale, self.q, self.w = scale, q, w
        self._dense = None
        self.cache = True

    @classmethod
    def from_buffer(cls, buf, off, rows, cols, fmt):
        if fmt == FMT_F32:
            n = rows * cols * 4
            if off + n > len(buf):
                raise BundleError("matrix runs past end of file")
            w = np.frombuffer(buf, dtype="<f4", count=rows * cols, offset=off).reshape(rows, cols)
            return cls(rows, cols, fmt, w=w), off + n
        n = rows * 4 + rows * cols
        if off + n > len(buf):
            raise BundleError("matrix runs past end of file")
        scale = np.frombuffer(buf, dtype="<f4", count=rows, offset=off)
        q = np.frombuffer(buf, dtype=np.int8, count=rows * cols, offset=off + rows * 4).reshape(rows, cols)
        return cls(rows, cols, fmt, scale=scale, q=q), off + n

    def dense(self, r0=0, r1=None):
        """Real weights of rows r0..r1 as float64."""
        r1 = self.rows if r1 is None else r1
        if self.fmt == FMT_F32:
            return self.w[r0:r1].astype(np.float64)
        return self.q[r0:r1].astype(np.float64) * self.scale[r0:r1, None].astype(np.float64)

    def mv(self, x):
        if self._dense is not None:
            return self._dense @ x
        if self.cache and self.rows * self.cols <= self.CACHE_LIMIT:
            self._dense = self.dense()
            return self._dense @ x
        out = np.empty(self.rows, dtype=np.float64)
        step = max(1, self.CACHE_LIMIT // self.cols)
        for r0 in range(0, self.rows, step):
            r1 = min(self.rows, r0 + step)
            if self.fmt == FMT_F32:
                out[r0:r1] = self.w[r0:r1].astype(np.float64) @ x
            else:   # y[r] = scale[r] * sum_c q[r][c] x[c], as the course defines it
                out[r0:r1] = (self.q[r0:r1].astype(np.float64) @ x) * self.scale[r0:r1]
        return out

    def row(self, r):
        return self.dense(r, r + 1)[0]


# ---------------------------------------------------------------- layer blobs

def layer_kind(cfg, i):
    if not cfg.is_qwen:
        return "llama"
    return "linear" if cfg.layer_types[i] == LAYER_LINEAR else "full"


def layer_vectors(cfg, kind):
    """[(name, length)] of the float32 vectors at the start of a layer blob."""
    d = cfg.dim
    if kind == "llama":
        return [("input_norm", d), ("post_attn_norm", d)]
    if kind == "full":
        return [("input_norm", d), ("post_attn_norm", d), ("q_norm", cfg.head_dim),
                ("k_norm", cfg.head_dim)]
    return [("input_norm", d), ("post_attn_norm", d),
            ("conv1d", cfg.conv_dim * cfg.linear_conv_kernel),
            ("dt_bias", cfg.linear_num_v_heads), ("A_log", cfg.linear_num_v_heads),
            ("norm", cfg.linear_value_head_dim)]


def layer_mats(cfg, kind):
    """[(name, rows, cols)] of the matrices of a layer blob, in file order."""
    d, hd, f = cfg.dim, cfg.head_dim, cfg.hidden_dim
    mlp = [("gate_proj", f, d), ("up_proj", f, d), ("down_proj", d, f)]
    if kind in ("llama", "full"):
        qrows = cfg.n_heads * hd * (2 if kind == "full" else 1)
        kv = cfg.n_kv_heads * hd
        return [("q_proj", qrows, d), ("k_proj", kv, d), ("v_proj", kv, d),
                ("o_proj", d, cfg.n_heads * hd)] + mlp
    nv = cfg.linear_num_v_heads
    return [("in_proj_qkv", cfg.conv_dim, d), ("in_proj_z", cfg.value_dim, d),
            ("in_proj_a", nv, d), ("in_proj_b", nv, d), ("out_proj", d, cfg.value_dim)] + mlp


def layer_blob(cfg, kind, w):
    """Serialise one layer from a dict of float arrays (conv1d may be [conv_dim, kernel])."""
    parts = []
    for name, n in layer_vectors(cfg, kind):
        v = np.asarray(w[name], dtype="<f4").reshape(-1)
        if v.size != n:
            raise BundleError(f"{name}: {v.size} values, want {n}")
        parts.append(v.tobytes())
    for name, r, c in layer_mats(cfg, kind):
        m = np.asarray(w[name], dtype=np.float32)
        if m.shape != (r, c):
            raise BundleError(f"{name}: shape {m.shape}, want {(r, c)}")
        parts.append(mat_bytes(m, cfg.weight_format))
    return b"".join(parts)


def parse_layer(cfg, kind, buf):
    """Dict of float32 vectors (views) and Mat objects from a layer blob."""
    out = {}
    off = 0
    for name, n in layer_vectors(cfg, kind):
        if off + 4 * n > len(buf):
            raise BundleError(f"layer blob too short at {name}")
        out[name] = np.frombuffer(buf, dtype="<f4", count=n, offset=off)
        off += 4 * n
    for name, r, c in layer_mats(cfg, kind):
        out[name], off = Mat.from_buffer(buf, off, r, c, cfg.weight_format)
    if off != len(buf):
        raise BundleError(f"layer blob has {len(buf) - off} trailing bytes")
    if kind == "linear":
        out["conv1d"] = out["conv1d"].reshape(cfg.conv_dim, cfg.linear_conv_kernel)
    return out


# ---------------------------------------------------------------- whole bundle

def rope_table(cfg):
    """float32 [runtime_seq_len][cos[rot/2], sin[rot/2]] as ROP.BIN."""
    rot = cfg.rope_rotary_dim
    i = np.arange(rot // 2, dtype=np.float64)
    inv = 1.0 / (float(np.float32(cfg.rope_theta)) ** (2.0 * i / rot))
    ang = np.arange(cfg.runtime_seq_len, dtype=np.float64)[:, None] * inv[None, :]
    return np.concatenate([np.cos(ang), np.sin(ang)], axis=1).astype("<f4")


def ids_bytes(ids):
    ids = [int(t) for t in ids]
    return struct.pack(f"<I{len(ids)}I", len(ids), *ids)


def parse_ids(data):
    if len(data) < 4:
        raise BundleError("id file too short")
    n = struct.unpack_from("<I", data, 0)[0]
    if len(data) < 4 + 4 * n:
        raise BundleError("id file truncated")
    return list(struct.unpack_from(f"<{n}I", data, 4))


class BundleWriter:
    """Writes a bundle file by file so big models can be streamed layer by layer."""

    def __init__(self, out_dir, cfg):
        cfg.validate()
        self.dir = out_dir
        self.cfg = cfg
        os.makedirs(out_dir, exist_ok=True)
        self.sizes = {}

    def _write(self, name, data):
        with open(os.path.join(self.dir, name), "wb") as f:
            f.write(data)
        self.sizes[name] = len(data)

    def header(self):
        self.cfg.version = cfg_version(self.cfg)
        self._write("CFG.BIN", pack_cfg(self.cfg))
        self._write("ROP.BIN", rope_table(self.cfg).tobytes())
        if self.cfg.is_qwen:
            self._write("LTY.BIN", struct.pack(f"<I{self.cfg.n_layers}I", self.cfg.n_layers,
                                               *self.cfg.layer_types))

    def embedding(self, emb_chunks):
        """emb_chunks: iterable of float arrays [rows, dim] covering the vocabulary in order."""
        path = os.path.join(self.dir, "EMB.BIN")
        fmt = self.cfg.weight_format
        rows = 0
        if fmt == FMT_F32:
            with open(path, "wb") as f:
                for ch in emb_chunks:
                    ch = np.asarray(ch, dtype="<f4")
                    f.write(ch.tobytes())
                    rows += ch.shape[0]
        else:
            # scales come first, so keep the int8 rows in a second pass file
            scales, qs = [], []
            qpath = path + ".q.tmp"
            with open(qpath, "wb") as fq:
                for ch in emb_chunks:
                    s, q = quantize_q8(ch)
                    scales.append(s)
                    fq.write(q.tobytes())
                    rows += ch.shape[0]
            with open(path, "wb") as f:
                f.write(np.concatenate(scales).astype("<f4").tobytes())
                with open(qpath, "rb") as fq:
                    while True:
                        b = fq.read(1 << 24)
                        if not b:
                            break
                        f.write(b)
            os.remove(qpath)
        if rows != self.cfg.vocab_size:
            raise BundleError(f"embedding has {rows} rows, want {self.cfg.vocab_size}")
        self.sizes["EMB.BIN"] = os.path.getsize(path)

    def final_norm(self, w):
        w = np.asarray(w, dtype="<f4").reshape(-1)
        assert w.size == self.cfg.dim
        self._write("NRM.BIN", w.tobytes())

    def layer(self, i, w):
        self._write(f"L{i:02d}.BIN", layer_blob(self.cfg, layer_kind(self.cfg, i), w))

    def sample(self, prompt, expected, info_extra=None, decoded=None):
        """PMT/EXP and the text side notes."""
        cfg = self.cfg
        self._write("PMT.BIN", ids_bytes(prompt))
        self._write("EXP.BIN", ids_bytes(expected))
        info = {"prompt": decoded.get("prompt") if decoded else None,
                "prompt_tokens": list(map(int, prompt)),
                "expected_tokens": list(map(int, expected)),
                "decoded_expected": decoded.get("expected") if decoded else None,
                "config": cfg.as_dict()}
        if info_extra:
            info.update(info_extra)
        info["sizes"] = dict(self.sizes)
        info["sizes"]["total_bytes"] = sum(self.sizes.values())
        self._write("INFO.TXT", (dumps_info(info) + "\n").encode())
        self._write("PROMPT.TXT", ((decoded or {}).get("prompt") or " ".join(map(str, prompt))).encode() + b"\n")
        self._write("EXPECT.TXT", ((decoded or {}).get("expected") or " ".join(map(str, expected))).encode() + b"\n")
        lines = []
        for i in range(cfg.n_layers):
            k = layer_kind(cfg, i)
            lines.append(f"L{i:02d} {'llama' if k == 'llama' else k + '_attention'} {self.sizes.get(f'L{i:02d}.BIN', 0)} bytes")
        self._write("LAYERS.TXT", ("\n".join(lines) + "\n").encode())


class Bundle:
    """A bundle opened for reading (files memory-mapped)."""

    def __init__(self, path):
        self.dir = path
        self.cfg = parse_cfg(self._read("CFG.BIN"))
        cfg = self.cfg
        if cfg.is_qwen:
            lty = self._read("LTY.BIN")
            n = struct.unpack_from("<I", lty, 0)[0]
            if n != cfg.n_layers or len(lty) < 4 + 4 * n:
                raise BundleError("LTY.BIN does not match n_layers")
            cfg.layer_types = list(struct.unpack_from(f"<{n}I", lty, 4))
            if any(t not in (LAYER_FULL, LAYER_LINEAR) for t in cfg.layer_types):
                raise BundleError("LTY.BIN: unknown layer type")
        cfg.validate()
        emb = self._map("EMB.BIN")
        want = mat_nbytes(cfg.vocab_size, cfg.dim, cfg.weight_format)
        if len(emb) != want:
            raise BundleError(f"EMB.BIN has {len(emb)} bytes, want {want}")
        self.emb, _ = Mat.from_buffer(emb, 0, cfg.vocab_size, cfg.dim, cfg.weight_format)
        nrm = self._read("NRM.BIN")
        if len(nrm) != 4 * cfg.dim:
            raise BundleError("NRM.BIN size")
        self.final_norm = np.frombuffer(nrm, dtype="<f4")
        self.layers = [parse_layer(cfg, layer_kind(cfg, i), self._map(f"L{i:02d}.BIN"))
                       for i in range(cfg.n_layers)]

    def _path(self, name):
        return os.path.join(self.dir, name)

    def _read(self, name):
        p = self._path(name)
        if not os.path.exists(p):
            raise BundleError(f"missing {name} in {self.dir}")
        with open(p, "rb") as f:
            return f.read()

    def _map(self, name):
        p = self._path(name)
        if not os.path.exists(p):
            raise BundleError(f"missing {name} in {self.dir}")
        if os.path.getsize(p) == 0:
            return b""
        return np.memmap(p, dtype=np.uint8, mode="r")

    def sample(self):
        """(prompt ids, expected ids) from PMT.BIN / EXP.BIN, or None if absent."""
        if not os.path.exists(self._path("PMT.BIN")):
            return None
        return parse_ids(self._read("PMT.BIN")), parse_ids(self._read("EXP.BIN"))


# ---------------------------------------------------------------- safetensors (HF)

ST_DTYPES = {"F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2), "F64": ("<f8", 8),
             "I8": ("i1", 1), "I32": ("<i4", 4), "I64": ("<i8", 8), "U8": ("u1", 1)}


def to_bf16_bits(a):
    """float32 -> bf16 bit patterns (uint16), round to nearest even."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    b = a.view(np.uint32)
    r = (b >> 16) & 1          # finite values cannot overflow 32 bits here
    r += 0x7FFF
    r += b
    r >>= 16
    return r.astype(np.uint16)


def round_bf16(a):
    """float32 values rounded to what bf16 can hold (still float32)."""
    return (to_bf16_bits(a).astype(np.uint32) << 16).view(np.float32)


def tensor_bytes(a, dtype):
    if dtype == "BF16":
        return to_bf16_bits(a).astype("<u2").tobytes()
    if dtype == "F16":
        return np.asarray(a, dtype="<f2").tobytes()
    if dtype == "F32":
        return np.asarray(a, dtype="<f4").tobytes()
    raise ValueError(dtype)


class SafetensorsReader:
    """Tensors of one HF checkpoint directory (single file or sharded), memory-mapped."""

    def __init__(self, path):
        self.dir = path
        idx = os.path.join(path, "model.safetensors.index.json")
        if os.path.exists(idx):
            with open(idx) as f:
                wm = json.load(f)["weight_map"]
            files = sorted(set(wm.values()))
        else:
            files = sorted(f for f in os.listdir(path) if f.endswith(".safetensors"))
            if not files:
                raise BundleError(f"no *.safetensors in {path}")
        self.where = {}
        self.maps = {}
        for fn in files:
            full = os.path.join(path, fn)
            with open(full, "rb") as f:
                n = struct.unpack("<Q", f.read(8))[0]
                header = json.loads(f.read(n))
            self.maps[fn] = (np.memmap(full, dtype=np.uint8, mode="r"), 8 + n)
            for name, meta in header.items():
                if name == "__metadata__":
                    continue
                self.where[name] = (fn, meta)

    def names(self):
        return list(self.where)

    def __contains__(self, name):
        return name in self.where

    def shape(self, name):
        return tuple(self.where[name][1]["shape"])

    def get(self, name, rows=None):
        """float32 array of a tensor (optionally only rows r0..r1 of its first axis)."""
        if name not in self.where:
            raise BundleError(f"checkpoint has no tensor {name}")
        fn, meta = self.where[name]
        mm, base = self.maps[fn]
        if meta["dtype"] not in ST_DTYPES:
            raise BundleError(f"{name}: unsupported dtype {meta['dtype']}")
        dt, size = ST_DTYPES[meta["dtype"]]
        shape = list(meta["shape"])
        b0, b1 = meta["data_offsets"]
        count = (b1 - b0) // size
        if count != int(np.prod(shape)):
            raise BundleError(f"{name}: data size does not match shape")
        raw = np.frombuffer(mm, dtype=dt, count=count, offset=base + b0).reshape(shape or [1])
        if rows is not None:
            raw = raw[rows[0]:rows[1]]
        if meta["dtype"] == "BF16":
            return (raw.astype(np.uint32) << 16).view(np.float32)
        return raw.astype(np.float32)


class SafetensorsWriter:
    """Streams tensors, in a fixed order known up front, into one or more shards."""

    def __init__(self, out_dir, specs, dtype="BF16", shard_bytes=2 << 30):
        """specs: list of (name, shape). Tensors must then be written in that order
        (a tensor may be written in several row chunks)."""
        self.dir = out_dir
        self.dtype = dtype
        os.makedirs(out_dir, exist_ok=True)
        esize = ST_DTYPES[dtype][1]
        shards, cur, cur_bytes = [], [], 0
        for name, shape in specs:
            nb = int(np.prod(shape)) * esize
            if cur and cur_bytes + nb > shard_bytes:
                shards.append(cur)
                cur, cur_bytes = [], 0
            cur.append((name, shape, nb))
            cur_bytes += nb
        shards.append(cur)
        n = len(shards)
        self.files = []
        weight_map = {}
        for si, sh in enumerate(shards):
            fn = "model.safetensors" if n == 1 else f"model-{si + 1:05d}-of-{n:05d}.safetensors"
            header = {"__metadata__": {"format": "pt"}}
            off = 0
            for name, shape, nb in sh:
                header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + nb]}
                off += nb
                weight_map[name] = fn
            hj = json.dumps(header, separators=(",", ":")).encode()
            hj += b" " * (-len(hj) % 8)
            self.files.append((fn, hj, [(name, nb) for name, _, nb in sh], off))
        if n > 1:
            total = sum(f[3] for f in self.files)
            with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
                json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
        self._order = [(fi, name, nb) for fi, f in enumerate(self.files) for name, nb in f[2]]
        self._pos = 0
        self._done = 0
        self._fh = None
        self._fi = -1

    def write(self, name, arr, last=True):
        """Write (a row chunk of) tensor `name`; last=False keeps it open for more rows."""
        fi, want, nb = self._order[self._pos]
        if want != name:
            raise BundleError(f"safetensors writer: got {name}, expected {want}")
        if fi != self._fi:
            if self._fh:
                self._fh.close()
            fn, hj, _, _ = self.files[fi]
            self._fh = open(os.path.join(self.dir, fn), "wb")
            self._fh.write(struct.pack("<Q", len(hj)) + hj)
            self._fi = fi
        data = tensor_bytes(arr, self.dtype)
        self._fh.write(data)
        self._done += len(data)
        if last:
            if self._done != nb:
                raise BundleError(f"{name}: wrote {self._done} bytes, want {nb}")
            self._pos += 1
            self._done = 0

    def close(self):
        if self._pos != len(self._order):
            raise BundleError("safetensors writer: not all tensors written")
        if self._fh:
            self._fh.close()
            self._fh = None
