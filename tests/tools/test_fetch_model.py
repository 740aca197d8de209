"""tools/fetch_model.py and `make fetch-smol`, offline: a local http.server on
127.0.0.1 plays the Hugging Face Hub, serving a checkpoint made by
tools/make_model.py (tiny-llama shape, a small byte-level tokenizer) under the
two SmolLM2 repository names. No test contacts any other host."""
import functools
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import fetch_model as F  # noqa: E402
import tokbin  # noqa: E402
import tokenizer as T  # noqa: E402

PY = "/usr/bin/python3"
SHA = "0123456789abcdef0123456789abcdef01234567"      # the fake Hub's commit id
FILES = ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]


def tiny_tokenizer_json():
    """Byte-level BPE of 256 bytes + 3 merges + one special token: 260 <= tiny-llama's 320."""
    b2u = T.bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    merges = [("Ġ", "t"), ("Ġt", "h"), ("Ġth", "e")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    return {"model": {"type": "BPE", "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
            "added_tokens": [{"id": len(vocab), "content": "<|endoftext|>", "special": True}],
            "normalizer": None,
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "Digits", "individual_digits": True},
                {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}]}}


def git_blob(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A make_model.py checkpoint (HF layout) and the bundle it was made from."""
    d = tmp_path_factory.mktemp("ckpt")
    tok = d / "tokenizer.json"
    tok.write_text(json.dumps(tiny_tokenizer_json()))
    subprocess.run([PY, os.path.join(ROOT, "tools", "make_model.py"), "--preset", "tiny-llama",
                    "--out", str(d / "bundle"), "--hf-out", str(d / "hf"), "--tokenizer", str(tok),
                    "--predict", "0"], check=True, capture_output=True)
    (d / "hf" / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|endoftext|>"}))
    return d


def make_hub(root, hf_dir, corrupt=None):
    """Lays out root as the Hub's URLs for both SmolLM2 repositories."""
    for repo in F.MODELS.values():
        siblings = []
        files = root / repo / "resolve" / SHA
        files.mkdir(parents=True)
        for name in FILES:
            data = (hf_dir / name).read_bytes()
            s = {"rfilename": name, "blobId": git_blob(data), "size": len(data)}
            if name.endswith(".safetensors"):
                s["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
            siblings.append(s)
            if corrupt == name:
                data = bytearray(data)
                data[len(data) // 2] ^= 0x40      # same size, different bytes
                data = bytes(data)
            (files / name).write_bytes(data)
        api = root / "api" / "models" / repo / "revision"
        api.mkdir(parents=True)
        (api / "main").write_text(json.dumps({"sha": SHA, "siblings": siblings}))


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def hub(tmp_path):
    """start(hf_dir, corrupt=None) -> base URL of a local fake Hub."""
    servers = []

    def start(hf_dir, corrupt=None):
        root = tmp_path / f"hub{len(servers)}"
        make_hub(root, hf_dir, corrupt)
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                              functools.partial(Quiet, directory=str(root)))
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}"

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def fetch(base, tmp_path, *extra):
    return subprocess.run([PY, os.path.join(ROOT, "tools", "fetch_model.py"), "--base-url", base,
                           "--download-dir", str(tmp_path / "dl"), "--bundle-root", str(tmp_path / "models"),
                           "--predict", "0", "--runtime-seq-len", "96", *extra], capture_output=True, text=True)


def test_fetch_verifies_and_exports_both_models(checkpoint, hub, tmp_path):
    base = hub(checkpoint / "hf")
    r = fetch(base, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("verified") == 2 * len(FILES)
    for repo in F.MODELS.values():
        name = repo.split("/")[1]
        assert (tmp_path / "dl" / name / "REVISION.TXT").read_text() == f"{repo} {SHA}\n"
        out = tmp_path / "models" / name
        # make_model.py promises the HF checkpoint holds exactly its bundle's model
        for f in ["CFG.BIN", "EMB.BIN", "NRM.BIN", "L00.BIN", "L02.BIN"]:
            assert (out / f).read_bytes() == (checkpoint / "bundle" / f).read_bytes(), f
        got, made = (out / "TOK.BIN").read_bytes(), (checkpoint / "bundle" / "TOK.BIN").read_bytes()
        # the same tokenizer; the fetched one also knows its EOS from tokenizer_config.json
        assert got[:28] == made[:28] and got[64:] == made[64:]
        hdr = tokbin.read_header(got)
        assert (hdr["n_eos"], hdr["eos0"]) == (1, 259)
        assert "TOK.BIN from" in (out / "INFO.TXT").read_text()
    # a second run finds the verified files and downloads nothing
    r = fetch(base, tmp_path)
    assert r.returncode == 0 and r.stdout.count("already here, verified") == 2 * len(FILES)


@pytest.mark.parametrize("bad", ["model.safetensors", "tokenizer.json"])
def test_checksum_mismatch_is_refused_by_name(checkpoint, hub, tmp_path, bad):
    base = hub(checkpoint / "hf", corrupt=bad)
    r = fetch(base, tmp_path, "--model", "smol135m")
    assert r.returncode == 1
    assert f"checksum mismatch for HuggingFaceTB/SmolLM2-135M/{bad}" in r.stderr
    kind = "sha256" if bad.endswith(".safetensors") else "git blob id"
    assert kind in r.stderr
    dl = tmp_path / "dl" / "SmolLM2-135M"
    assert not (dl / bad).exists() and not (dl / (bad + ".part")).exists()
    assert not (tmp_path / "models").exists()       # nothing exported


def test_pinned_sums_file_is_checked_too(checkpoint, hub, tmp_path):
    base = hub(checkpoint / "hf")
    sums = tmp_path / "SUMS"
    sums.write_text("0" * 64 + "  HuggingFaceTB/SmolLM2-135M/config.json\n")
    r = fetch(base, tmp_path, "--model", "smol135m", "--sums", str(sums))
    assert r.returncode == 1
    assert "checksum mismatch for HuggingFaceTB/SmolLM2-135M/config.json" in r.stderr
    assert "the sums file says" in r.stderr


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_offline_says_so_and_stops(tmp_path):
    r = fetch(f"http://127.0.0.1:{free_port()}", tmp_path)
    assert r.returncode == 2
    assert "looks offline" in r.stderr and "cannot reach" in r.stderr
    assert not (tmp_path / "models").exists()


def test_make_fetch_smol_builds_an_image(checkpoint, hub, tmp_path):
    if not shutil.which("make"):
        pytest.skip("make not installed")
    base = hub(checkpoint / "hf")
    img = tmp_path / "fs.img"
    env = dict(os.environ, KAI_HF_BASE_URL=base)
    r = subprocess.run(["make", "-s", "fetch-smol", f"FETCH_DIR={tmp_path / 'dl'}",
                        f"FETCH_MODELS={tmp_path / 'models'}", f"FETCH_IMG={img}",
                        "FETCH_ARGS=--predict 0"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    c = subprocess.run([PY, os.path.join(ROOT, "tools", "mkfsimg.py"), "--check", str(img)],
                       capture_output=True, text=True)
    assert c.returncode == 0, c.stdout + c.stderr
    raw = img.read_bytes()
    assert b"SMOLI" in raw and b"TOK.BIN" in raw
    env["KAI_HF_BASE_URL"] = f"http://127.0.0.1:{free_port()}"
    r = subprocess.run(["make", "-s", "fetch-smol", f"FETCH_DIR={tmp_path / 'dl2'}",
                        f"FETCH_MODELS={tmp_path / 'models2'}", f"FETCH_IMG={tmp_path / 'fs2.img'}"],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "looks offline" in r.stderr
    assert not (tmp_path / "fs2.img").exists()
