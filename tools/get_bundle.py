#!/usr/bin/python3
"""Provide a model bundle directory for an image: the course's zip if the user
put it there, else an unpacked bundle under PREMODEL_ROOT, else the project's
own synthetic model of the same shape (tools/make_model.py).

    get_bundle.py --name SMOL --archive models/smol.zip --premodel models/SMOL \
                  --preset smol135m --out build/assets/SMOL
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def from_archive(archive, name, out):
    """The course's zip holds NAME/ with the bundle files (or the files at its root)."""
    with zipfile.ZipFile(archive) as z, tempfile.TemporaryDirectory(dir=os.path.dirname(out) or ".") as tmp:
        z.extractall(tmp)
        for candidate in (os.path.join(tmp, name), tmp):
            if os.path.isfile(os.path.join(candidate, "CFG.BIN")):
                shutil.rmtree(out, ignore_errors=True)
                shutil.move(candidate, out)
                return
        sys.exit(f"get_bundle: {archive} has no {name}/CFG.BIN")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", required=True)
    ap.add_argument("--archive", required=True)
    ap.add_argument("--premodel", required=True)
    ap.add_argument("--preset", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)

    if os.path.isfile(args.archive):
        print(f"get_bundle: {args.name} from the course archive {args.archive}")
        from_archive(args.archive, args.name, args.out)
    elif os.path.isfile(os.path.join(args.premodel, "CFG.BIN")):
        print(f"get_bundle: {args.name} from {args.premodel}")
        shutil.rmtree(args.out, ignore_errors=True)
        shutil.copytree(args.premodel, args.out)
    else:
        print(f"get_bundle: no {args.archive} or {args.premodel}/CFG.BIN; "
              f"building the synthetic '{args.preset}' model (real shape, meaningless text)")
        subprocess.check_call([sys.executable, os.path.join(HERE, "make_model.py"),
                               "--preset", args.preset, "--out", args.out])


if __name__ == "__main__":
    main()
