"""Training corpus: the BSD fortune data files that Debian ships in `fortunes` and `fortunes-min`.

Why these: short, self-contained English texts (quotations, jokes, short poems) whose licence
(the fortune-mod BSD licence, see /usr/share/doc/fortunes/copyright) lets us ship a model trained
on them and a small slice of them as test data. `fortunes-off` (offensive) is not used.

Each fortune is one document. Whitespace is normalised a little so that the tokenizer does not
spend its vocabulary on layout: trailing spaces go, a line's leading run of spaces/tabs becomes one
tab, other tabs become spaces. The held-out split is chosen by a hash of the document text, so it
does not depend on file order or on which other files are present.
"""

import hashlib
import os
import re

FORTUNE_DIR = "/usr/share/games/fortunes"
# Pictures and text that is not English prose.
SKIP_FILES = {"ascii-art", "translate-me"}
MAX_DOC_CHARS = 2000
HELDOUT_PERCENT = 2
# Control characters other than tab and newline (the files use backspace for overstrike).
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def normalise(text):
    lines = []
    for line in text.split("\n"):
        line = line.rstrip()
        m = re.match(r"[ \t]+", line)
        body = line[m.end():] if m else line
        body = CONTROL.sub("", body.replace("\t", " "))
        lines.append(("\t" if m and body else "") + body)
    return "\n".join(lines).strip("\n")


def fortune_files(directory=FORTUNE_DIR):
    names = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if "." in name or name in SKIP_FILES or os.path.islink(path) or not os.path.isfile(path):
            continue
        names.append(path)
    return names


def load_documents(directory=FORTUNE_DIR):
    """All documents in a fixed order (file name, then position in the file), de-duplicated."""
    docs, seen = [], set()
    for path in fortune_files(directory):
        with open(path, encoding="utf-8", errors="replace") as f:
            raw = f.read()
        for chunk in re.split(r"^%$", raw, flags=re.M):
            doc = normalise(chunk)
            if not doc or len(doc) > MAX_DOC_CHARS or doc in seen:
                continue
            seen.add(doc)
            docs.append(doc)
    return docs


def is_heldout(doc):
    h = int.from_bytes(hashlib.sha256(doc.encode("utf-8")).digest()[:8], "little")
    return h % 100 < HELDOUT_PERCENT


def split(docs):
    train = [d for d in docs if not is_heldout(d)]
    heldout = [d for d in docs if is_heldout(d)]
    return train, heldout
