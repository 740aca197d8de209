"""Command-line pieces the studies share (bench.py, its --open-loop sweep)."""
import os
import sys


def number_list(text, what, prog, whole=False):
    """The positive numbers of "a,b,c" (whole numbers if whole); exits with
    a message naming the option `what` if there are none or one is not."""
    try:
        vals = [(int if whole else float)(v) for v in text.split(",") if v.strip()]
    except ValueError:
        vals = []
    if not vals or min(vals) <= 0:
        sys.exit(f"{prog}: {what} {text!r}: want positive {'whole ' if whole else ''}numbers separated by commas")
    return vals


def model_name(bundle, name=None):
    """The name a bundle gets under /AI: name, or its directory's, in capitals
    without '-' and at most 15 characters (the kernel's limit)."""
    return (name or os.path.basename(os.path.normpath(bundle))).upper().replace("-", "")[:15]
