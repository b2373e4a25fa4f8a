"""A small byte-level BPE tokenizer: training, encoding, decoding, and tokenizer.json output.

It behaves like Llama 3's tokenizer (`tokenizer.ggml.pre = llama-bpe` in GGUF): the text is split
with the Llama-3 regex, each piece is mapped byte by byte to GPT-2's printable code points, a piece
that is a whole vocabulary entry becomes that token (`ignore_merges`), and any other piece is merged
pairwise, lowest merge rank first and leftmost first on equal rank (llama.cpp `llm_tokenizer_bpe`).

Ids: 0..255 are the single bytes (id = byte value), then one id per merge in merge order, then the
special tokens at the end.
"""

import collections
import heapq
import json

import regex

# Llama 3's split regex exactly as its tokenizer.json spells it (the C++ importer recognises this
# spelling and writes `tokenizer.ggml.pre = llama-bpe`).
LLAMA3_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
BOS = "<|begin_of_text|>"
EOS = "<|end_of_text|>"
SPECIALS = [BOS, EOS]

_SPLIT = regex.compile(LLAMA3_REGEX)


def bytes_to_unicode():
    """GPT-2's byte -> printable code point table (docs/GGUF-FORMAT.md §5.1)."""
    keep = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + extra)
            extra += 1
    return table


BYTE_TO_CHAR = bytes_to_unicode()
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}


def pretokenize(text):
    return _SPLIT.findall(text)


def to_symbols(piece):
    return "".join(BYTE_TO_CHAR[b] for b in piece.encode("utf-8"))


def train(texts, vocab_size, log=print):
    """Learns vocab_size - 256 - len(SPECIALS) merges. Deterministic: ties go to the pair whose
    (left, right) strings sort first."""
    n_merges = vocab_size - 256 - len(SPECIALS)
    counts = collections.Counter()
    for t in texts:
        counts.update(pretokenize(t))
    words = [list(to_symbols(w)) for w in counts]
    freqs = list(counts.values())

    pair_count = collections.Counter()
    pair_where = collections.defaultdict(set)
    for i, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pair_count[(a, b)] += freqs[i]
            pair_where[(a, b)].add(i)
    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)

    merges = []
    while len(merges) < n_merges and heap:
        negc, pair = heapq.heappop(heap)
        if pair_count.get(pair, 0) != -negc or negc == 0:
            continue  # stale entry
        merges.append(pair)
        merged = pair[0] + pair[1]
        touched = collections.Counter()
        for i in pair_where.pop(pair):
            w, f = words[i], freqs[i]
            for a, b in zip(w, w[1:]):
                pair_count[(a, b)] -= f
                touched[(a, b)] += 0
            out, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == pair[0] and w[j + 1] == pair[1]:
                    out.append(merged)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for a, b in zip(out, out[1:]):
                pair_count[(a, b)] += f
                pair_where[(a, b)].add(i)
                touched[(a, b)] += 0
        pair_count.pop(pair, None)
        for p in touched:
            c = pair_count.get(p, 0)
            if c > 0:
                heapq.heappush(heap, (-c, p))
            else:
                pair_count.pop(p, None)
        if log and len(merges) % 500 == 0:
            log(f"bpe: {len(merges)} merges")
    return merges


class Tokenizer:
    def __init__(self, merges):
        self.merges = [tuple(m) for m in merges]
        self.vocab = {BYTE_TO_CHAR[b]: b for b in range(256)}
        for a, b in self.merges:
            self.vocab[a + b] = len(self.vocab)
        for s in SPECIALS:
            self.vocab[s] = len(self.vocab)
        self.id_to_token = {i: t for t, i in self.vocab.items()}
        self.rank = {m: r for r, m in enumerate(self.merges)}
        self.bos_id = self.vocab[BOS]
        self.eos_id = self.vocab[EOS]
        self._cache = {}

    def __len__(self):
        return len(self.vocab)

    def _encode_piece(self, piece):
        sym = to_symbols(piece)
        if sym in self.vocab:
            return [self.vocab[sym]]
        parts = list(sym)
        while len(parts) > 1:
            best, best_rank = -1, None
            for j in range(len(parts) - 1):
                r = self.rank.get((parts[j], parts[j + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = j, r
            if best < 0:
                break
            parts[best : best + 2] = [parts[best] + parts[best + 1]]
        return [self.vocab[p] for p in parts]

    def encode(self, text, add_bos=False):
        ids = [self.bos_id] if add_bos else []
        for piece in pretokenize(text):
            got = self._cache.get(piece)
            if got is None:
                got = self._cache[piece] = self._encode_piece(piece)
            ids.extend(got)
        return ids

    def decode(self, ids):
        out = bytearray()
        for i in ids:
            t = self.id_to_token[i]
            if t in SPECIALS:
                continue
            out.extend(CHAR_TO_BYTE[c] for c in t)
        return out.decode("utf-8", errors="replace")

    def to_hf_json(self):
        added = [
            {
                "id": self.vocab[s],
                "content": s,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for s in SPECIALS
        ]
        byte_level = {"add_prefix_space": False, "trim_offsets": True, "use_regex": False}
        return {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": added,
            "normalizer": None,
            "pre_tokenizer": {
                "type": "Sequence",
                "pretokenizers": [
                    {
                        "type": "Split",
                        "pattern": {"Regex": LLAMA3_REGEX},
                        "behavior": "Isolated",
                        "invert": False,
                    },
                    dict(type="ByteLevel", **byte_level),
                ],
            },
            "post_processor": {
                "type": "TemplateProcessing",
                "single": [
                    {"SpecialToken": {"id": BOS, "type_id": 0}},
                    {"Sequence": {"id": "A", "type_id": 0}},
                ],
                "pair": [
                    {"SpecialToken": {"id": BOS, "type_id": 0}},
                    {"Sequence": {"id": "A", "type_id": 0}},
                    {"SpecialToken": {"id": BOS, "type_id": 1}},
                    {"Sequence": {"id": "B", "type_id": 1}},
                ],
                "special_tokens": {BOS: {"id": BOS, "ids": [self.bos_id], "tokens": [BOS]}},
            },
            "decoder": dict(type="ByteLevel", **byte_level),
            "model": {
                "type": "BPE",
                "dropout": None,
                "unk_token": None,
                "continuing_subword_prefix": None,
                "end_of_word_suffix": None,
                "fuse_unk": False,
                "byte_fallback": False,
                "ignore_merges": True,
                "vocab": {t: i for t, i in self.vocab.items() if t not in SPECIALS},
                "merges": [a + " " + b for a, b in self.merges],
            },
        }

    def save(self, tokenizer_path, config_path, context_length):
        with open(tokenizer_path, "w", encoding="utf-8") as f:
            json.dump(self.to_hf_json(), f, ensure_ascii=False, indent=1)
        config = {
            "bos_token": BOS,
            "eos_token": EOS,
            "add_bos_token": True,
            "add_eos_token": False,
            "model_max_length": context_length,
            "tokenizer_class": "PreTrainedTokenizerFast",
        }
        with open(config_path, "w", encoding="utf-8") as f:
            json.dump(config, f, indent=1)

    @staticmethod
    def load(tokenizer_path):
        with open(tokenizer_path, encoding="utf-8") as f:
            model = json.load(f)["model"]
        return Tokenizer([tuple(m.split(" ", 1)) for m in model["merges"]])
