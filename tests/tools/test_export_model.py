"""tools/export_model.py: Hugging Face and llama2.c checkpoints into bundles."""
import json
import os
import struct
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import bundle as B          # noqa: E402
import export_model as X    # noqa: E402
import llm_reference as R   # noqa: E402
import make_model as M      # noqa: E402

SHARED = os.environ.get("KAI_SHARED_MODELS", os.path.join(ROOT, "..", "shared", "models"))
STORIES = os.path.join(SHARED, "stories260K", "stories260K.bin")
BABY = os.path.join(SHARED, "babyllama-tok105", "model.bin")
PROMPT = [1, 17, 42, 99, 7, 250]
WEIGHT_FILES = ["EMB.BIN", "NRM.BIN"]


def need(path):
    if not os.path.exists(path):
        pytest.skip(f"{path} not found (set KAI_SHARED_MODELS to the shared models directory)")


def same_files(a, b, names):
    for n in names:
        with open(os.path.join(a, n), "rb") as f1, open(os.path.join(b, n), "rb") as f2:
            assert f1.read() == f2.read(), n


def bundle_files(d, cfg):
    names = ["CFG.BIN", "EMB.BIN", "NRM.BIN", "ROP.BIN"] + [f"L{i:02d}.BIN" for i in range(cfg.n_layers)]
    return names + (["LTY.BIN"] if cfg.is_qwen else [])


@pytest.fixture(scope="module", params=["tiny-llama", "tiny-qwen"])
def synth(request, tmp_path_factory):
    """An original f32 and q8 bundle plus a sharded bf16 and a single-file f32 HF checkpoint."""
    p = request.param
    d = tmp_path_factory.mktemp(p)
    o = {"preset": p}
    for dt in ("f32", "q8"):
        o[dt] = str(d / f"orig-{dt}")
    o["hf_bf16"] = str(d / "hf-bf16")
    o["hf_f32"] = str(d / "hf-f32")
    assert M.main(["--preset", p, "--out", o["f32"], "--dtype", "f32", "--hf-out", o["hf_bf16"],
                   "--shard-mb", "0.1"]) == 0
    assert M.main(["--preset", p, "--out", o["q8"], "--dtype", "q8", "--hf-out", o["hf_f32"],
                   "--hf-dtype", "f32"]) == 0
    o["rsl"] = str(B.Bundle(o["f32"]).cfg.runtime_seq_len)
    return o


def export_hf(src, out, dtype, rsl):
    assert X.main(["--from", "hf", src, "--out", out, "--dtype", dtype, "--runtime-seq-len", rsl,
                   "--prompt-ids", " ".join(map(str, PROMPT)), "--predict", "8"]) == 0


def test_hf_checkpoint_layout(synth):
    if synth["preset"] == "tiny-qwen":
        conf = json.load(open(os.path.join(synth["hf_bf16"], "config.json")))
        assert conf["model_type"] == "qwen3_5" and "text_config" in conf
        assert conf["text_config"]["layer_types"].count("full_attention") == 1
        idx = json.load(open(os.path.join(synth["hf_bf16"], "model.safetensors.index.json")))
        assert all(k.startswith("model.language_model.") for k in idx["weight_map"])
        assert len(set(idx["weight_map"].values())) > 1
        # zero-centred norms: HF holds w, the bundle 1 + w
        st = B.SafetensorsReader(synth["hf_bf16"])
        w = st.get("model.language_model.layers.0.input_layernorm.weight")
        b = B.Bundle(synth["f32"]).layers[0]["input_norm"]
        np.testing.assert_array_equal(w + np.float32(1), b)
        assert abs(float(np.mean(w))) < 0.1
    else:
        assert os.path.exists(os.path.join(synth["hf_f32"], "model.safetensors"))
        conf = json.load(open(os.path.join(synth["hf_f32"], "config.json")))
        assert conf["model_type"] == "llama" and conf["tie_word_embeddings"]


@pytest.mark.parametrize("hf", ["hf_bf16", "hf_f32"])
def test_round_trip_f32(synth, hf, tmp_path):
    out = str(tmp_path / "ex")
    export_hf(synth[hf], out, "f32", synth["rsl"])
    orig = R.Reference.load(synth["f32"])
    ex = R.Reference.load(out)
    assert ex.cfg.version == 3 and ex.cfg.weight_format == B.FMT_F32
    same_files(synth["f32"], out, bundle_files(out, ex.cfg))
    a = orig.generate(PROMPT, 12)
    b = ex.generate(PROMPT, 12)
    assert a == b
    np.testing.assert_allclose(orig.hidden_states(), ex.hidden_states(), atol=1e-4, rtol=0)
    assert B.Bundle(out).sample() == (PROMPT, ex.generate(PROMPT, 8))


@pytest.mark.parametrize("hf", ["hf_bf16", "hf_f32"])
def test_round_trip_q8(synth, hf, tmp_path):
    out = str(tmp_path / "ex")
    export_hf(synth[hf], out, "q8", synth["rsl"])
    ex = R.Reference.load(out)
    assert ex.cfg.version == (2 if ex.cfg.is_qwen else 1)
    same_files(synth["q8"], out, bundle_files(out, ex.cfg))
    assert R.Reference.load(synth["q8"]).generate(PROMPT, 12) == ex.generate(PROMPT, 12)


def test_text_only_prefix_and_skipped_parts(tmp_path):
    """A qwen3_5 save with `model.` prefix plus model.visual.* / mtp.* tensors exports the same."""
    synth = {"f32": str(tmp_path / "orig"), "hf_f32": str(tmp_path / "hf0"), "rsl": "64"}
    assert M.main(["--preset", "tiny-qwen", "--out", synth["f32"], "--dtype", "f32",
                   "--hf-out", synth["hf_f32"], "--hf-dtype", "f32", "--predict", "0"]) == 0
    st = B.SafetensorsReader(synth["hf_f32"])
    names = st.names()
    specs = [(n.replace("model.language_model.", "model."), st.shape(n)) for n in names]
    specs += [("model.visual.blocks.0.attn.qkv.weight", (4, 4)), ("mtp.fc.weight", (2, 3))]
    hf = str(tmp_path / "hf")
    w = B.SafetensorsWriter(hf, specs, "F16")
    for (new, shape), n in zip(specs, names):
        w.write(new, st.get(n))
    w.write("model.visual.blocks.0.attn.qkv.weight", np.ones((4, 4), np.float32))
    w.write("mtp.fc.weight", np.ones((2, 3), np.float32))
    w.close()
    with open(os.path.join(synth["hf_f32"], "config.json")) as f:
        conf = json.load(f)
    with open(os.path.join(hf, "config.json"), "w") as f:
        json.dump(conf, f)
    out = str(tmp_path / "ex")
    export_hf(hf, out, "f32", synth["rsl"])
    # F16 loses precision: compare behaviour, not bytes
    a = R.Reference.load(synth["f32"])
    b = R.Reference.load(out)
    a.generate(PROMPT, 4)
    b.generate(PROMPT, 4)
    np.testing.assert_allclose(a.hidden_states(), b.hidden_states(), atol=0.2)


def test_unsupported_checkpoints_fail_cleanly(tmp_path, capsys):
    d = tmp_path / "hf"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    assert X.main(["--from", "hf", str(d), "--out", str(tmp_path / "o")]) == 1
    assert "unsupported model_type" in capsys.readouterr().err
    conf = X.hf_config(M.make_config("tiny-llama", "q8"))
    conf["tie_word_embeddings"] = False
    (d / "config.json").write_text(json.dumps(conf))
    assert X.main(["--from", "hf", str(d), "--out", str(tmp_path / "o")]) == 1
    assert "untied" in capsys.readouterr().err


# ---------------------------------------------------------------- llama2.c

def llama2c_forward(path, tokens):
    """Logits of the last token, computed llama2.c's way (adjacent-pair RoPE, original
    row order) straight from the checkpoint: an independent check of the permutation."""
    data = open(path, "rb").read()
    dim, hidden, L, nh, nkv, vocab, seq = struct.unpack_from("<7i", data, 0)
    w = np.frombuffer(data, dtype="<f4", offset=28).astype(np.float64)
    hd = dim // nh
    kv = nkv * hd

    def take(n, shape):
        nonlocal w
        a, w = w[:n].reshape(shape), w[n:]
        return a
    emb = take(vocab * dim, (vocab, dim))
    rms_att = take(L * dim, (L, dim))
    wq = take(L * dim * dim, (L, dim, dim))
    wk = take(L * kv * dim, (L, kv, dim))
    wv = take(L * kv * dim, (L, kv, dim))
    wo = take(L * dim * dim, (L, dim, dim))
    rms_ffn = take(L * dim, (L, dim))
    w1 = take(L * hidden * dim, (L, hidden, dim))
    w2 = take(L * dim * hidden, (L, dim, hidden))
    w3 = take(L * hidden * dim, (L, hidden, dim))
    rms_final = take(dim, (dim,))

    def norm(x, g):
        return x / np.sqrt(np.mean(x * x) + 1e-5) * g

    def rope(v, pos):
        v = v.copy()
        for i in range(0, v.size, 2):
            f = 1.0 / 10000.0 ** ((i % hd) / hd)
            c, s = np.cos(pos * f), np.sin(pos * f)
            v[i], v[i + 1] = v[i] * c - v[i + 1] * s, v[i] * s + v[i + 1] * c
        return v
    kc = np.zeros((L, len(tokens), kv))
    vc = np.zeros((L, len(tokens), kv))
    for pos, t in enumerate(tokens):
        x = emb[t].copy()
        for layer in range(L):
            h = norm(x, rms_att[layer])
            q = rope(wq[layer] @ h, pos)
            kc[layer, pos] = rope(wk[layer] @ h, pos)
            vc[layer, pos] = wv[layer] @ h
            att = np.zeros(dim)
            for head in range(nh):
                g = head // (nh // nkv)
                k = kc[layer, :pos + 1, g * hd:(g + 1) * hd]
                sc = k @ q[head * hd:(head + 1) * hd] / np.sqrt(hd)
                sc = np.exp(sc - sc.max())
                sc /= sc.sum()
                att[head * hd:(head + 1) * hd] = sc @ vc[layer, :pos + 1, g * hd:(g + 1) * hd]
            x = x + wo[layer] @ att
            h = norm(x, rms_ffn[layer])
            a = w1[layer] @ h
            x = x + w2[layer] @ (a / (1 + np.exp(-a)) * (w3[layer] @ h))
    return emb @ norm(x, rms_final)


@pytest.fixture(scope="module")
def stories(tmp_path_factory):
    need(STORIES)
    d = tmp_path_factory.mktemp("stories")
    out = {}
    for dt in ("f32", "q8"):
        out[dt] = str(d / dt)
        assert X.main(["--from", "llama2c", STORIES, "--out", out[dt], "--dtype", dt]) == 0
    return out


def test_llama2c_permutation_matches_adjacent_pair_rope(stories):
    tokens = [1, 403, 407, 261, 378, 432, 383]
    ref = R.Reference.load(stories["f32"])
    ref.reset()
    for t in tokens:
        logits = ref.step(t)
    np.testing.assert_allclose(logits, llama2c_forward(STORIES, tokens), rtol=1e-9, atol=1e-9)


def test_llama2c_bundle_contents(stories):
    for dt, version in (("f32", 3), ("q8", 1)):
        b = B.Bundle(stories[dt])
        c = b.cfg
        assert (c.version, c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size,
                c.seq_len, c.runtime_seq_len) == (version, 64, 172, 5, 8, 4, 512, 512, 256)
        pmt, exp = b.sample()
        assert pmt == [1] and len(exp) >= 40
        info = json.load(open(os.path.join(stories[dt], "INFO.TXT")))
        assert info["decoded_expected"].startswith("Once upon a time, there was a little girl named Lily.")
        assert os.path.getsize(os.path.join(stories[dt], "ROP.BIN")) == 256 * 2 * (8 // 2) * 4
    # CFG v1 is byte-compatible with the course's: 10 u32 + 2 f32
    assert os.path.getsize(os.path.join(stories["q8"], "CFG.BIN")) == 48
    # tok512.bin beside the checkpoint becomes TOK.BIN: scores kind, BOS 1 prepended, EOS 2
    import tokbin
    hdr = tokbin.read_header(open(os.path.join(stories["f32"], "TOK.BIN"), "rb").read())
    assert (hdr["kind"], hdr["vocab_size"], hdr["bos_id"], hdr["n_eos"], hdr["eos0"]) == \
        (tokbin.KIND_SCORES, 512, 1, 1, 2)
    assert hdr["flags"] & tokbin.FLAG_ADD_BOS and hdr["flags"] & tokbin.FLAG_DUMMY_PREFIX


def test_babyllama_exports(tmp_path):
    need(BABY)
    out = str(tmp_path / "baby")
    assert X.main(["--from", "llama2c", BABY, "--out", out, "--dtype", "f32", "--predict", "30"]) == 0
    info = json.load(open(os.path.join(out, "INFO.TXT")))
    assert info["config"]["vocab_size"] == 105
    text = info["decoded_expected"]
    assert text and sum(ch.isalpha() or ch in " .,'\n" for ch in text) > 0.9 * len(text), text


def test_hf_sample_prompt_uses_the_checkpoint_tokenizer(tmp_path):
    """With a tokenizer.json beside the weights, PMT.BIN is the encoded --prompt and
    INFO.TXT carries the decoded texts."""
    import tokenizer as T
    hf = str(tmp_path / "hf")
    assert M.main(["--preset", "tiny-llama", "--out", str(tmp_path / "orig"), "--hf-out", hf,
                   "--predict", "0"]) == 0
    alphabet = sorted(set(T.bytes_to_unicode().values()))
    vocab = {ch: i for i, ch in enumerate(alphabet)}
    merges = [("Ġ", "u"), ("Ġu", "p"), ("o", "n"), ("Ġ", "a")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    tj = {"model": {"type": "BPE", "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
          "added_tokens": [], "normalizer": None,
          "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}}
    with open(os.path.join(hf, "tokenizer.json"), "w") as f:
        json.dump(tj, f)
    out = str(tmp_path / "ex")
    assert X.main(["--from", "hf", hf, "--out", out, "--prompt", "Once upon a time",
                   "--predict", "5"]) == 0
    tok = T.load(os.path.join(hf, "tokenizer.json"))
    pmt, exp = B.Bundle(out).sample()
    assert pmt == tok.encode("Once upon a time") and vocab["Ġup"] in pmt and len(exp) == 5
    info = json.load(open(os.path.join(out, "INFO.TXT")))
    assert info["prompt"] == "Once upon a time"
    assert info["decoded_expected"] == tok.decode(exp)
    assert open(os.path.join(out, "PROMPT.TXT")).read() == "Once upon a time\n"
    import tokbin
    hdr = tokbin.read_header(open(os.path.join(out, "TOK.BIN"), "rb").read())
    assert (hdr["kind"], hdr["vocab_size"], hdr["n_eos"]) == (tokbin.KIND_BYTE_BPE, len(vocab), 0)
    assert info["tokenizer"].startswith("TOK.BIN from")

    # --eos sets the end-of-sequence ids; an unsupported tokenizer is a warning, not a failure,
    # and a stale TOK.BIN from an earlier export never survives beside new weights
    assert X.main(["--from", "hf", hf, "--out", out, "--predict", "0", "--eos", "3 7"]) == 0
    hdr = tokbin.read_header(open(os.path.join(out, "TOK.BIN"), "rb").read())
    assert (hdr["n_eos"], hdr["eos0"], hdr["eos1"]) == (2, 3, 7)
    tj["pre_tokenizer"] = {"type": "Metaspace"}
    with open(os.path.join(hf, "tokenizer.json"), "w") as f:
        json.dump(tj, f)
    assert X.main(["--from", "hf", hf, "--out", out, "--predict", "0", "--prompt-ids", "1 2"]) == 0
    assert not os.path.exists(os.path.join(out, "TOK.BIN"))
    info = json.load(open(os.path.join(out, "INFO.TXT")))
    assert info["tokenizer"].startswith("no TOK.BIN (pre-tokenizer Metaspace")
