"""tools/make_model.py presets and the bundle files they produce."""
import filecmp
import json
import os
import struct
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import bundle as B          # noqa: E402
import llm_reference as R   # noqa: E402
import make_model as M      # noqa: E402


def n_params(cfg):
    total = cfg.vocab_size * cfg.dim + cfg.dim
    for i in range(cfg.n_layers):
        kind = B.layer_kind(cfg, i)
        total += sum(n for _, n in B.layer_vectors(cfg, kind))
        total += sum(r * c for _, r, c in B.layer_mats(cfg, kind))
    return total


@pytest.mark.parametrize("preset", sorted(M.PRESETS))
@pytest.mark.parametrize("dtype", ["q8", "f32"])
def test_preset_header_round_trips(preset, dtype):
    cfg = M.make_config(preset, dtype)
    cfg.validate()
    raw = B.pack_cfg(cfg)
    want_len = {1: 48, 2: 84, 3: 88}[B.cfg_version(cfg)]
    assert len(raw) == want_len
    assert struct.unpack_from("<2I", raw) == (0x31474643, B.cfg_version(cfg))
    back = B.parse_cfg(raw)
    for k in ("dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "head_dim", "vocab_size",
              "seq_len", "runtime_seq_len", "rope_rotary_dim", "weight_format", "model_kind"):
        assert getattr(back, k) == getattr(cfg, k), k
    assert back.rms_eps == pytest.approx(cfg.rms_eps, rel=1e-6)
    assert back.rope_theta == pytest.approx(cfg.rope_theta, rel=1e-6)
    if dtype == "f32":
        assert B.cfg_version(cfg) == 3 and struct.unpack_from("<I", raw, 84)[0] == 1
    else:
        assert B.cfg_version(cfg) == (2 if cfg.is_qwen else 1)


def test_smol135m_is_smollm2_135m_shape():
    c = M.make_config("smol135m", "q8")
    assert (c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.vocab_size,
            c.seq_len, c.runtime_seq_len) == (576, 1536, 30, 9, 3, 64, 49152, 8192, 256)
    assert c.rms_eps == 1e-5 and c.rope_theta == 100000.0
    assert n_params(c) == 134_515_008        # SmolLM2-135M's published parameter count


def test_qwen08b_shape_assumptions():
    c = M.make_config("qwen08b", "q8")
    assert c.layer_types == [1, 1, 1, 0] * 6
    assert (c.dim, c.hidden_dim, c.n_heads, c.n_kv_heads, c.head_dim, c.rope_rotary_dim) == \
        (1024, 3584, 8, 2, 256, 64)
    assert (c.linear_num_k_heads, c.linear_num_v_heads, c.linear_key_head_dim,
            c.linear_value_head_dim, c.linear_conv_kernel) == (16, 16, 128, 128, 4)
    assert c.vocab_size == 248320 and c.runtime_seq_len == 64
    assert 0.7e9 < n_params(c) < 0.9e9


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("mm")
    out = {}
    for p in ("tiny-llama", "tiny-qwen"):
        for dt in ("q8", "f32"):
            out[p, dt] = str(d / f"{p}-{dt}")
            assert M.main(["--preset", p, "--out", out[p, dt], "--dtype", dt]) == 0
    out["again"] = str(d / "again")
    assert M.main(["--preset", "tiny-qwen", "--out", out["again"], "--dtype", "q8"]) == 0
    out["seed9"] = str(d / "seed9")
    assert M.main(["--preset", "tiny-qwen", "--out", out["seed9"], "--dtype", "q8", "--seed", "9"]) == 0
    return out


def test_all_course_files_present(built):
    for (p, dt), d in ((k, v) for k, v in built.items() if isinstance(k, tuple)):
        cfg = B.Bundle(d).cfg
        names = ["CFG.BIN", "EMB.BIN", "NRM.BIN", "ROP.BIN", "PMT.BIN", "EXP.BIN", "INFO.TXT",
                 "PROMPT.TXT", "EXPECT.TXT", "LAYERS.TXT"] + [f"L{i:02d}.BIN" for i in range(cfg.n_layers)]
        if cfg.is_qwen:
            names.append("LTY.BIN")
        for n in names:
            assert os.path.exists(os.path.join(d, n)), (d, n)
        info = json.load(open(os.path.join(d, "INFO.TXT")))
        assert info["config"]["vocab_size"] == cfg.vocab_size
        assert info["sizes"]["EMB.BIN"] == os.path.getsize(os.path.join(d, "EMB.BIN"))


def test_layer_blob_sizes(built):
    for key in (("tiny-qwen", "q8"), ("tiny-qwen", "f32"), ("tiny-llama", "q8")):
        d = built[key]
        c = B.Bundle(d).cfg
        for i in range(c.n_layers):
            kind = B.layer_kind(c, i)
            want = 4 * sum(n for _, n in B.layer_vectors(c, kind))
            want += sum(B.mat_nbytes(r, cols, c.weight_format) for _, r, cols in B.layer_mats(c, kind))
            assert os.path.getsize(os.path.join(d, f"L{i:02d}.BIN")) == want


def test_tiny_qwen_covers_the_architecture(built):
    c = B.Bundle(built["tiny-qwen", "q8"]).cfg
    assert set(c.layer_types) == {B.LAYER_FULL, B.LAYER_LINEAR}
    assert c.flags == B.FLAG_ATTN_GATE | B.FLAG_QK_NORM
    assert c.n_heads > c.n_kv_heads                              # GQA
    assert c.linear_num_v_heads > c.linear_num_k_heads           # value heads share key heads
    assert c.rope_rotary_dim < c.head_dim                        # partial RoPE
    assert c.head_dim * c.n_heads != c.dim                       # head_dim independent of dim
    with open(os.path.join(built["tiny-qwen", "q8"], "LTY.BIN"), "rb") as f:
        assert struct.unpack("<5I", f.read()) == (4, 1, 1, 1, 0)


def test_deterministic_by_seed(built):
    d1, d2, d3 = built["tiny-qwen", "q8"], built["again"], built["seed9"]
    for n in ["CFG.BIN", "EMB.BIN", "L00.BIN", "L03.BIN", "NRM.BIN", "EXP.BIN"]:
        assert filecmp.cmp(os.path.join(d1, n), os.path.join(d2, n), shallow=False), n
    assert not filecmp.cmp(os.path.join(d1, "L00.BIN"), os.path.join(d3, "L00.BIN"), shallow=False)


def test_weights_are_sane(built):
    b = B.Bundle(built["tiny-qwen", "f32"])
    e = b.emb.dense()
    assert 0.05 < e.std() < 0.2
    L = b.layers[0]
    w = L["in_proj_qkv"].dense()
    assert abs(w.std() * np.sqrt(w.shape[1]) - 1) < 0.1      # N(0, 1/sqrt(fan_in))
    assert abs(np.mean(L["input_norm"]) - 1) < 0.05
    ref = R.Reference.load(built["tiny-qwen", "f32"])
    out = ref.generate([1, 2, 3, 4], 20)
    h = ref.hidden_states()
    assert np.all(np.isfinite(h)) and np.abs(h).max() < 1e3
    assert len(set(out)) > 5            # not stuck repeating one token


def test_q8_bundle_quantisation_matches_course_rule(built):
    b = B.Bundle(built["tiny-llama", "q8"])
    f = B.Bundle(built["tiny-llama", "f32"])
    wq, wf = b.layers[0]["q_proj"], f.layers[0]["q_proj"].dense()
    np.testing.assert_allclose(wq.scale, np.abs(wf).max(axis=1) / 127, rtol=1e-6)
    assert np.abs(wq.q).max() == 127
    np.testing.assert_allclose(wq.dense(), wf, atol=float(wq.scale.max()) / 2 + 1e-7)


def test_smol135m_generates_and_streams(tmp_path):
    import time
    out = str(tmp_path / "smol")
    t0 = time.time()
    assert M.main(["--preset", "smol135m", "--out", out, "--predict", "0"]) == 0
    took = time.time() - t0
    print(f"smol135m q8 generated in {took:.1f}s (real time)")
    # Streaming keeps this to seconds; the bound only catches a hang or a
    # quadratic slip, never a slow or busy host.
    assert took < 900
    b = B.Bundle(out)
    assert b.cfg.version == 1 and b.cfg.n_layers == 30
    assert os.path.getsize(os.path.join(out, "EMB.BIN")) == 49152 * 4 + 49152 * 576
    assert os.path.getsize(os.path.join(out, "L29.BIN")) == \
        4 * 2 * 576 + sum(B.mat_nbytes(r, c, B.FMT_Q8) for _, r, c in B.layer_mats(b.cfg, "llama"))
    info = json.load(open(os.path.join(out, "INFO.TXT")))
    assert info["expected_tokens"] == [] and "skipped" in info["expected_note"]


def test_tokenizer_becomes_tok_bin_and_must_fit_the_vocab(tmp_path):
    tok105 = os.path.join(os.environ.get("KAI_SHARED_MODELS", os.path.join(ROOT, "..", "shared", "models")),
                          "babyllama-tok105", "tok105.bin")
    if not os.path.exists(tok105):
        pytest.skip(f"{tok105} not found (set KAI_SHARED_MODELS)")
    import tokbin
    out = tmp_path / "m"
    assert M.main(["--preset", "tiny-llama", "--out", str(out), "--predict", "0", "--tokenizer", tok105]) == 0
    hdr = tokbin.read_header((out / "TOK.BIN").read_bytes())
    assert (hdr["kind"], hdr["vocab_size"], hdr["eos0"]) == (tokbin.KIND_SCORES, 105, 2)
    tok512 = os.path.join(os.path.dirname(os.path.dirname(tok105)), "stories260K", "tok512.bin")
    if os.path.exists(tok512):      # 512 tokens do not fit tiny-llama's 320
        assert M.main(["--preset", "tiny-llama", "--out", str(out), "--predict", "0",
                       "--tokenizer", tok512]) == 1
    assert M.main(["--preset", "tiny-llama", "--out", str(out), "--predict", "0"]) == 0
    assert not (out / "TOK.BIN").exists()           # no stale tokenizer beside new weights
