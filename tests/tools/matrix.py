"""The interpreter matrix the harnesses run on: LABEL<TAB>COMMAND<TAB>KIND
lines, from a file (build/interpreters.txt) or from
tests/provision/interpreters.sh when there is none."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read(listing=None):
    """[(label, command, kind)] in the listing's order."""
    if listing and os.path.isfile(listing):
        with open(listing) as f:
            text = f.read()
    else:
        script = os.path.join(ROOT, "tests", "provision", "interpreters.sh")
        text = subprocess.run(["bash", script], stdout=subprocess.PIPE,
                              universal_newlines=True).stdout
    rows = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0] and not parts[0].startswith("#"):
            rows.append(tuple(parts))
    return rows
