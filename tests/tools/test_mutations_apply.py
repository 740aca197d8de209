"""Every mutation of tests/mutate.py still names a line that exists, once.

A mutation shows that a test can fail: it breaks one line of the source and
expects a named test to notice. When the source moves on (a line renamed,
reformatted or duplicated), the mutation no longer applies, and mutate.py
reports "does not apply" only when someone runs it, which takes QEMU boots.
Four mutations had gone stale that way unnoticed. This check is
cheap, so it runs in `make test`: it fails the commit that moves the line,
while its author still knows where the line went."""
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_mutate():
    spec = importlib.util.spec_from_file_location("mutate", os.path.join(ROOT, "tests", "mutate.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MUTATE = load_mutate()


@pytest.mark.parametrize("mutation", MUTATE.MUTATIONS, ids=lambda m: m.name)
def test_mutation_names_one_line_of_its_file(mutation):
    path = os.path.join(ROOT, mutation.path)
    assert os.path.exists(path), f"{mutation.name}: {mutation.path} does not exist"
    with open(path) as f:
        index, count = MUTATE.find_line(f.read(), mutation.line)
    assert index is not None, (f"{mutation.name}: its line is in {mutation.path} {count} times, not once; "
                               f"update the mutation to follow the code")
    assert mutation.becomes.strip() != mutation.line.strip(), f"{mutation.name} changes nothing"


def test_mutation_names_are_unique():
    names = [m.name for m in MUTATE.MUTATIONS]
    assert len(names) == len(set(names))
