#!/usr/bin/python3
"""Downloads SmolLM2-135M and SmolLM2-135M-Instruct from the Hugging Face Hub,
verifies every file, and exports each to a kai bundle (with TOK.BIN).

    fetch_model.py [--base-url URL] [--revision REV] [--model NAME ...]
                   [--download-dir DIR] [--bundle-root DIR] [--dtype q8|f32]
                   [--sums FILE] [--predict N] [--runtime-seq-len N]

`make fetch-smol` runs this, then packs the bundles into an image.

Where the expected checksums come from: the Hub's own metadata for the pinned
commit, `GET {base}/api/models/{repo}/revision/{rev}?blobs=true`, which lists
every file with its git blob id (SHA-1 of "blob <size>\\0" + content) and, for
files stored in Git LFS (the weights), their SHA-256 and size. The download
uses the commit id from that answer (`resolve/{sha}/FILE`), so metadata and
bytes belong to the same revision. A sums file (--sums, `sha256sum` format,
lines "<sha256>  <repo>/<file>") pins SHA-256 values independently of the Hub;
its entries are checked in addition. A file that does not match is deleted
and named in the error; nothing is exported then.

Offline (the Hub cannot be reached) the tool says so and exits with status 2
before writing anything. Exit status 1: any other failure (bad checksum,
HTTP error, export error). The base URL defaults to https://huggingface.co;
KAI_HF_BASE_URL or --base-url point it at a mirror (the tests use a local
http.server).
"""
import argparse
import hashlib
import json
import os
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

DEFAULT_BASE = "https://huggingface.co"
# kai name -> Hub repository; the bundle directory is the repository's base name.
MODELS = {
    "smol135m": "HuggingFaceTB/SmolLM2-135M",
    "smol135m-instruct": "HuggingFaceTB/SmolLM2-135M-Instruct",
}
NEEDED = ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
OPTIONAL = ["generation_config.json"]       # carries eos_token_id for TOK.BIN when present
CHUNK = 1 << 20


class FetchError(Exception):
    pass


class Offline(FetchError):
    pass


def git_blob_sha1(path):
    h = hashlib.sha1()
    h.update(b"blob %d\0" % os.path.getsize(path))
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def open_url(url, timeout):
    try:
        return urllib.request.urlopen(url, timeout=timeout)
    except urllib.error.HTTPError as e:
        raise FetchError(f"{url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise Offline(f"cannot reach {url} ({reason})") from None


def repo_metadata(base, repo, revision, timeout):
    """(commit sha, {file: sibling dict}) from the Hub's API."""
    url = f"{base}/api/models/{repo}/revision/{revision}?blobs=true"
    with open_url(url, timeout) as r:
        try:
            meta = json.load(r)
        except ValueError:
            raise FetchError(f"{url}: not JSON") from None
    sha = meta.get("sha")
    if not isinstance(sha, str) or not sha:
        raise FetchError(f"{url}: no commit sha in the answer")
    return sha, {s["rfilename"]: s for s in meta.get("siblings", []) if "rfilename" in s}


def read_sums(path):
    """{"repo/file": sha256} from a sha256sum-style file."""
    sums = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) != 2 or len(parts[0]) != 64:
                raise FetchError(f"{path}:{n}: expected '<sha256>  <repo>/<file>'")
            sums[parts[1].lstrip("*")] = parts[0].lower()
    return sums


def verify(path, label, sibling, pinned):
    """Raises FetchError naming the file when it differs from what is expected."""
    size = os.path.getsize(path)
    lfs = sibling.get("lfs") or {}
    want_size = lfs.get("size", sibling.get("size"))
    if want_size is not None and size != int(want_size):
        raise FetchError(f"checksum mismatch for {label}: size {size} bytes, the Hub says {want_size}")
    if lfs.get("sha256"):
        got = sha256_file(path)
        if got != lfs["sha256"].lower():
            raise FetchError(f"checksum mismatch for {label}: sha256 {got}, the Hub's LFS metadata says "
                             f"{lfs['sha256']}")
    elif sibling.get("blobId"):
        got = git_blob_sha1(path)
        if got != sibling["blobId"].lower():
            raise FetchError(f"checksum mismatch for {label}: git blob id {got}, the Hub says "
                             f"{sibling['blobId']}")
    else:
        raise FetchError(f"{label}: the Hub's metadata has no checksum for it; refusing an unverified file")
    if pinned is not None:
        got = sha256_file(path)
        if got != pinned:
            raise FetchError(f"checksum mismatch for {label}: sha256 {got}, the sums file says {pinned}")


def download(url, dest, timeout):
    part = dest + ".part"
    try:
        with open_url(url, timeout) as r, open(part, "wb") as f:
            for block in iter(lambda: r.read(CHUNK), b""):
                f.write(block)
    except BaseException:
        if os.path.exists(part):
            os.remove(part)
        raise
    return part


def fetch_repo(base, repo, revision, out_dir, sums, timeout, log):
    """Downloads and verifies one repository's files into out_dir."""
    sha, siblings = repo_metadata(base, repo, revision, timeout)
    missing = [f for f in NEEDED if f not in siblings]
    if missing:
        raise FetchError(f"{repo}@{sha}: the Hub lists no {', '.join(missing)}")
    os.makedirs(out_dir, exist_ok=True)
    for name in NEEDED + [f for f in OPTIONAL if f in siblings]:
        label = f"{repo}/{name}"
        dest = os.path.join(out_dir, name)
        pinned = sums.get(label)
        if os.path.exists(dest):
            try:
                verify(dest, label, siblings[name], pinned)
                log(f"  {label}: already here, verified")
                continue
            except FetchError:
                os.remove(dest)         # stale or damaged: fetch again
        part = download(f"{base}/{repo}/resolve/{sha}/{name}", dest, timeout)
        try:
            verify(part, label, siblings[name], pinned)
        except FetchError:
            os.remove(part)
            raise
        os.replace(part, dest)
        log(f"  {label}: {os.path.getsize(dest)} bytes, verified")
    with open(os.path.join(out_dir, "REVISION.TXT"), "w") as f:
        f.write(f"{repo} {sha}\n")
    return sha


def main(argv=None):
    ap = argparse.ArgumentParser(description="fetch SmolLM2-135M (+Instruct) and export kai bundles")
    ap.add_argument("--base-url", default=os.environ.get("KAI_HF_BASE_URL", DEFAULT_BASE),
                    help="Hub base URL (default: $KAI_HF_BASE_URL or https://huggingface.co)")
    ap.add_argument("--revision", default="main")
    ap.add_argument("--model", action="append", choices=sorted(MODELS),
                    help="which to fetch (repeatable; default both)")
    ap.add_argument("--download-dir", default="build/hf")
    ap.add_argument("--bundle-root", default="build/models")
    ap.add_argument("--dtype", choices=["q8", "f32"], default="q8")
    ap.add_argument("--sums", help="pinned sha256 values, lines '<sha256>  <repo>/<file>'")
    ap.add_argument("--predict", type=int, default=4, help="reference tokens for EXP.BIN (slow on 135M)")
    ap.add_argument("--runtime-seq-len", type=int, help="positions the bundle supports (export default)")
    ap.add_argument("--timeout", type=float, default=30.0)
    a = ap.parse_args(argv)
    base = a.base_url.rstrip("/")
    log = lambda s: print(s, flush=True)   # noqa: E731
    try:
        sums = read_sums(a.sums) if a.sums else {}
        fetched = []
        for name in a.model or sorted(MODELS):
            repo = MODELS[name]
            log(f"fetch_model: {repo} ({a.revision}) from {base}")
            src = os.path.join(a.download_dir, repo.split("/")[1])
            sha = fetch_repo(base, repo, a.revision, src, sums, a.timeout, log)
            fetched.append((repo, src, sha))
        import export_model
        for repo, src, sha in fetched:
            out = os.path.join(a.bundle_root, repo.split("/")[1])
            log(f"fetch_model: exporting {repo}@{sha[:12]} to {out} ({a.dtype})")
            args = ["--from", "hf", src, "--out", out, "--dtype", a.dtype, "--predict", str(a.predict)]
            if a.runtime_seq_len:
                args += ["--runtime-seq-len", str(a.runtime_seq_len)]
            if export_model.main(args) != 0:
                raise FetchError(f"export of {repo} failed (see above)")
            if not os.path.exists(os.path.join(out, "TOK.BIN")):
                raise FetchError(f"export of {repo} wrote no TOK.BIN (see the warning above)")
    except Offline as e:
        print(f"fetch_model: {e}\nfetch_model: this machine looks offline (or {base} is down); stopped, "
              f"nothing exported. Connect to the network, or point KAI_HF_BASE_URL / --base-url at a mirror.",
              file=sys.stderr)
        return 2
    except (FetchError, OSError) as e:
        print(f"fetch_model: error: {e}", file=sys.stderr)
        return 1
    log("fetch_model: done: " + ", ".join(os.path.join(a.bundle_root, r.split("/")[1]) for r, _, _ in fetched))
    return 0


if __name__ == "__main__":
    sys.exit(main())
