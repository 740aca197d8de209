#!/usr/bin/python3
"""Independent numpy reference of the forward pass of kai / course bundles.

Written from the bundle format (docs/model-format.md), not from the C++ runtime:
float64 math throughout, accurate exp, RoPE angles computed here (not read from
ROP.BIN). Weights are used exactly as stored (q8 as q*scale, or float32).

Library:
    model = Reference.load("build/models/tiny-llama")
    ids = model.generate([1, 2, 3], 8)            # greedy, resets state first
    model.hidden                                  # [positions][n_layers+1][dim]
CLI:
    llm_reference.py --asset-dir DIR --predict N [--dump FILE] [--compare DUMP] tok...
prints the generated ids on one line; --check runs PMT.BIN against EXP.BIN.  Greedy ties go to the lowest id.
"""
import argparse
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bundle as B  # noqa: E402

MAX_PROMPT = 255
HDMP_MAGIC = 0x504D4448


class RequestError(ValueError):
    pass


def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x) + eps) * w


def silu(x):
    return x / (1.0 + np.exp(-x))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x):
    return np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))


def rope_halves(x, pos, rot, theta):
    """Rotate the first `rot` dims of each row of x [heads, head_dim] in halves."""
    half = rot // 2
    i = np.arange(half, dtype=np.float64)
    ang = pos / (theta ** (2.0 * i / rot))
    c, s = np.cos(ang), np.sin(ang)
    a = x[:, :half].copy()
    b = x[:, half:rot].copy()
    out = x.copy()
    out[:, :half] = a * c - b * s
    out[:, half:rot] = a * s + b * c
    return out


class Reference:
    def __init__(self, bundle):
        self.b = bundle
        self.cfg = bundle.cfg
        self.f64 = lambda v: np.asarray(v, dtype=np.float64)
        # small vectors as float64 once
        self.layers = []
        for lw in bundle.layers:
            d = {}
            for k, v in lw.items():
                d[k] = v if isinstance(v, B.Mat) else np.asarray(v, dtype=np.float64)
            self.layers.append(d)
        self.final_norm = self.f64(bundle.final_norm)
        # big models: dequantise per product instead of holding float64 copies
        mats = [v for lw in bundle.layers for v in lw.values() if isinstance(v, B.Mat)]
        if sum(m.rows * m.cols for m in mats) > 200_000_000:
            for m in mats:
                m.cache = False
        self.theta = float(np.float32(self.cfg.rope_theta))
        self.eps = float(np.float32(self.cfg.rms_eps))
        self.reset()

    @classmethod
    def load(cls, path):
        return cls(B.Bundle(path))

    def reset(self):
        c = self.cfg
        T = c.runtime_seq_len
        self.pos = 0
        self.hidden = []
        self.state = []
        for i in range(c.n_layers):
            kind = B.layer_kind(c, i)
            if kind == "linear":
                self.state.append({
                    "conv": np.zeros((c.conv_dim, c.linear_conv_kernel)),
                    "S": np.zeros((c.linear_num_v_heads, c.linear_key_head_dim,
                                   c.linear_value_head_dim))})
            else:
                self.state.append({"k": np.zeros((T, c.n_kv_heads, c.head_dim)),
                                   "v": np.zeros((T, c.n_kv_heads, c.head_dim))})

    # ---------------------------------------------------------------- layers
    def _attention(self, L, st, h, kind):
        c = self.cfg
        hd, nh, nkv = c.head_dim, c.n_heads, c.n_kv_heads
        qg = L["q_proj"].mv(h)
        if kind == "full":
            qg = qg.reshape(nh, 2 * hd)
            q, gate = qg[:, :hd], qg[:, hd:].reshape(-1)
        else:
            q, gate = qg.reshape(nh, hd), None
        k = L["k_proj"].mv(h).reshape(nkv, hd)
        v = L["v_proj"].mv(h).reshape(nkv, hd)
        if kind == "full":
            q = np.stack([rmsnorm(r, L["q_norm"], self.eps) for r in q])
            k = np.stack([rmsnorm(r, L["k_norm"], self.eps) for r in k])
            rot = c.rope_rotary_dim
        else:
            rot = hd
        q = rope_halves(q, self.pos, rot, self.theta)
        k = rope_halves(k, self.pos, rot, self.theta)
        st["k"][self.pos] = k
        st["v"][self.pos] = v
        n = self.pos + 1
        group = nh // nkv
        out = np.empty((nh, hd))
        for hh in range(nh):
            kv = hh // group
            sc = st["k"][:n, kv, :] @ q[hh] / np.sqrt(hd)
            sc = np.exp(sc - sc.max())
            sc /= sc.sum()
            out[hh] = sc @ st["v"][:n, kv, :]
        out = out.reshape(-1)
        if gate is not None:
            out = out * sigmoid(gate)
        return L["o_proj"].mv(out)

    def _linear(self, L, st, h):
        c = self.cfg
        nk, nv = c.linear_num_k_heads, c.linear_num_v_heads
        dk, dv = c.linear_key_head_dim, c.linear_value_head_dim
        m = L["in_proj_qkv"].mv(h)
        conv = st["conv"]
        conv[:, :-1] = conv[:, 1:]
        conv[:, -1] = m
        mc = silu(np.sum(conv * L["conv1d"], axis=1))
        kd = c.key_dim
        q = mc[:kd].reshape(nk, dk)
        k = mc[kd:2 * kd].reshape(nk, dk)
        v = mc[2 * kd:].reshape(nv, dv)
        z = L["in_proj_z"].mv(h).reshape(nv, dv)
        beta = sigmoid(L["in_proj_b"].mv(h))
        g = -np.exp(L["A_log"]) * softplus(L["in_proj_a"].mv(h) + L["dt_bias"])
        q = q / np.sqrt(np.sum(q * q, axis=1, keepdims=True) + 1e-6) / np.sqrt(dk)
        k = k / np.sqrt(np.sum(k * k, axis=1, keepdims=True) + 1e-6)
        ratio = nv // nk
        out = np.empty((nv, dv))
        S = st["S"]
        for j in range(nv):
            qj, kj = q[j // ratio], k[j // ratio]
            S[j] *= np.exp(g[j])
            delta = (v[j] - S[j].T @ kj) * beta[j]
            S[j] += np.outer(kj, delta)
            o = S[j].T @ qj
            out[j] = rmsnorm(o, L["norm"], self.eps) * silu(z[j])
        return L["out_proj"].mv(out.reshape(-1))

    def _mlp(self, L, h):
        return L["down_proj"].mv(silu(L["gate_proj"].mv(h)) * L["up_proj"].mv(h))

    # ---------------------------------------------------------------- public
    def step(self, token):
        """Feed one token at the current position; returns the logits (float64[vocab])."""
        c = self.cfg
        if self.pos >= c.runtime_seq_len:
            raise RequestError(f"request too long for runtime_seq_len={c.runtime_seq_len}")
        if not 0 <= token < c.vocab_size:
            raise RequestError(f"token {token} out of range")
        x = self.b.emb.row(token)
        hid = []
        for i, L in enumerate(self.layers):
            kind = B.layer_kind(c, i)
            h = rmsnorm(x, L["input_norm"], self.eps)
            if kind == "linear":
                x = x + self._linear(L, self.state[i], h)
            else:
                x = x + self._attention(L, self.state[i], h, kind)
            h = rmsnorm(x, L["post_attn_norm"], self.eps)
            x = x + self._mlp(L, h)
            hid.append(x.copy())
        xn = rmsnorm(x, self.final_norm, self.eps)
        hid.append(xn)
        self.hidden.append(np.stack(hid))
        self.pos += 1
        return self.b.emb.mv(xn)

    def validate(self, prompt, predict):
        c = self.cfg
        if not 1 <= len(prompt) <= MAX_PROMPT:
            raise RequestError(f"prompt must have 1..{MAX_PROMPT} tokens")
        if predict < 0:
            raise RequestError("predict must be >= 0")
        if len(prompt) + predict > c.runtime_seq_len:
            raise RequestError(f"request too long for runtime_seq_len={c.runtime_seq_len}")
        for i, t in enumerate(prompt):
            if not 0 <= t < c.vocab_size:
                raise RequestError(f"token {i} out of range")

    def generate(self, prompt, predict):
        """Greedy continuation: returns `predict` new ids; self.hidden holds each position."""
        prompt = [int(t) for t in prompt]
        self.validate(prompt, predict)
        self.reset()
        logits = None
        for t in prompt:
            logits = self.step(t)
        out = []
        for n in range(predict):
            nxt = int(np.argmax(logits))
            out.append(nxt)
            if n + 1 < predict:
                logits = self.step(nxt)
        return out

    def hidden_states(self):
        """float32 [positions][n_layers+1][dim] of the last run."""
        if not self.hidden:
            return np.zeros((0, self.cfg.n_layers + 1, self.cfg.dim), dtype=np.float32)
        return np.stack(self.hidden).astype(np.float32)

    def write_dump(self, path):
        h = self.hidden_states()
        with open(path, "wb") as f:
            f.write(struct.pack("<4I", HDMP_MAGIC, h.shape[0], self.cfg.n_layers, self.cfg.dim))
            f.write(h.astype("<f4").tobytes())


def read_dump(path):
    """float32 [positions][n_layers+1][dim] from an HDMP file."""
    with open(path, "rb") as f:
        data = f.read()
    magic, n, layers, dim = struct.unpack_from("<4I", data, 0)
    if magic != HDMP_MAGIC:
        raise ValueError("not an HDMP dump")
    return np.frombuffer(data, dtype="<f4", offset=16, count=n * (layers + 1) * dim).reshape(
        n, layers + 1, dim)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--asset-dir", required=True)
    ap.add_argument("--predict", type=int, default=16)
    ap.add_argument("--dump", help="write hidden states (HDMP) here")
    ap.add_argument("--check", action="store_true",
                    help="run the bundle's PMT.BIN and compare with EXP.BIN")
    ap.add_argument("--compare", metavar="DUMP",
                    help="compare an HDMP dump (e.g. from the C++ runner) with this run's hidden "
                         "states; prints the worst difference per layer, exit 1 above --tol")
    ap.add_argument("--tol", type=float, default=1e-3, help="max abs difference for --compare")
    ap.add_argument("tokens", nargs="*", type=int)
    a = ap.parse_args(argv)
    try:
        model = Reference.load(a.asset_dir)
        if a.check:
            s = model.b.sample()
            if s is None:
                print("no PMT.BIN", file=sys.stderr)
                return 2
            pmt, exp = s
            got = model.generate(pmt, len(exp))
            agree = sum(1 for x, y in zip(got, exp) if x == y)
            print(" ".join(map(str, got)))
            print(f"{agree}/{len(exp)} agree with EXP.BIN", file=sys.stderr)
            return 0 if got == exp else 1
        out = model.generate(a.tokens, a.predict)
    except (RequestError, B.BundleError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(" ".join(map(str, out)))
    if a.dump:
        model.write_dump(a.dump)
    if a.compare:
        return compare_dump(model.hidden_states(), read_dump(a.compare), a.tol)
    return 0


def compare_dump(want, got, tol):
    """Report max |got - want| per layer (relative to the layer's max |want|)."""
    if got.shape != want.shape:
        print(f"compare: dump shape {got.shape}, reference {want.shape}", file=sys.stderr)
        return 1
    worst = 0.0
    for layer in range(want.shape[1]):
        d = np.abs(got[:, layer].astype(np.float64) - want[:, layer])
        scale = float(np.abs(want[:, layer]).max()) or 1.0
        pos = int(np.argmax(d.max(axis=1)))
        name = "final_norm" if layer == want.shape[1] - 1 else f"layer {layer}"
        print(f"{name:>12}: max abs diff {d.max():.3e} (at position {pos}), "
              f"max |x| {scale:.3g}", file=sys.stderr)
        worst = max(worst, float(d.max()))
    print(f"compare: worst {worst:.3e}, tolerance {tol:g}: {'ok' if worst <= tol else 'FAIL'}",
          file=sys.stderr)
    return 0 if worst <= tol else 1


if __name__ == "__main__":
    sys.exit(main())
