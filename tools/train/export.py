"""Turns a training run's checkpoint into everything downstream needs.

    /usr/bin/python3 tools/train/export.py --out OUTDIR [--slice-dir DIR]

Writes into OUTDIR:
  manifest.json + weights.f32  the float weights for `bitnet-model import` (format documented in
                               tools/model_import.hpp): little-endian f32, [out, in] row-major
  eval.json                    held-out perplexity with inference numerics, run facts
  loss.png                     the loss curve
  samples.json                 greedy and sampled continuations of a few prompts (PyTorch)
and, with --slice-dir, the CI slice of the held-out split with its PyTorch perplexity
(heldout_slice.json), which tests/model/default_model_test.cpp checks the engine against.
"""

import argparse
import json
import math
import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bitnet  # noqa: E402
import bpe  # noqa: E402
import corpus  # noqa: E402
import plot  # noqa: E402

SLICE_WINDOWS = 2
# Text the C++ tokenizer must split exactly as ours: contractions, digits, whitespace runs,
# non-ASCII letters and symbols, emoji.
TOKENIZER_CASES = [
    "Hello, world!",
    "I'm sure they'RE fine; we'LL see. Don't you've?",
    "12345 and 1,000,000 and 3.14159",
    "  leading spaces,   inner runs\n\n\tand a tab\n",
    "na\u00efve caf\u00e9 \u2014 \u201cquotes\u201d \u00bfqu\u00e9? \U0001f600 \u65e5\u672c\u8a9e",
    "line one\r\nline two\r\n",
    "trailing space ",
    "--\tMark Twain",
    "",
]
TOKENIZER_DOCS = 40

PROMPTS = [
    "The meaning of life is",
    "A programmer is",
    "Never trust a",
    "Love is",
    "The best way to",
]


def load(out):
    ck = torch.load(os.path.join(out, "checkpoint.pt"))
    c = bitnet.Config(**ck["config"])
    model = bitnet.BitNet(c)
    model.load_state_dict(ck["state"])
    model.eval()
    tok = bpe.Tokenizer.load(os.path.join(out, "tokenizer.json"))
    return ck, c, model, tok


def write_float_export(out, c, model, name):
    tensors, offset = [], 0
    with open(os.path.join(out, "weights.f32"), "wb") as f:
        for tname, t in model.tensors().items():
            entry = {"name": tname, "shape": list(t.shape), "offset": offset}
            if t.dim() == 2 and tname != "token_embd":
                # The float32 value BitLinear divides by, so the importer can reproduce W / s.
                entry["absmean"] = float(t.abs().mean().clamp(min=1e-5))
            data = t.numpy().astype("<f4").tobytes()
            f.write(data)
            offset += len(data)
            tensors.append(entry)
    manifest = {
        "format": "bitnet-serve-float-weights",
        "version": 1,
        "architecture": "bitnet-b1.58",
        "name": name,
        "data": "weights.f32",
        "tokenizer": "tokenizer.json",
        "config": {k: v for k, v in c.to_dict().items()},
        "tensors": tensors,
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


@torch.no_grad()
def generate(model, tok, prompt, n_new, temperature=0.0, top_k=40, seed=0):
    """Samples with inference numerics; temperature 0 is greedy. Stops at EOS."""
    g = torch.Generator().manual_seed(seed)
    ids = tok.encode(prompt, add_bos=True)
    out = []
    for _ in range(n_new):
        ctx = torch.tensor([ids[-model.c.n_ctx:]])
        logits = model(ctx, infer_numerics=True)[0, -1].double()
        if temperature == 0.0:
            nxt = int(logits.argmax())
        else:
            v, i = torch.topk(logits / temperature, top_k)
            nxt = int(i[torch.multinomial(torch.softmax(v, -1), 1, generator=g)])
        if nxt == tok.eos_id:
            break
        ids.append(nxt)
        out.append(nxt)
    return tok.decode(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--slice-dir", default=None)
    p.add_argument("--name", default="bitnet-serve fortunes-5m")
    a = p.parse_args()
    run(a.out, a.slice_dir, a.name)


def run(out, slice_dir=None, name="bitnet-serve fortunes-5m"):
    import train  # for heldout_windows / window_nll

    torch.set_num_threads(2)
    ck, c, model, tok = load(out)
    write_float_export(out, c, model, name)

    _, heldout_docs = corpus.split(corpus.load_documents())
    windows, window_docs = train.heldout_windows(tok, heldout_docs, c.n_ctx)
    nll_q, n = train.window_nll(model, windows, infer_numerics=True)
    nll_f, _ = train.window_nll(model, windows, infer_numerics=False)
    slice_windows = windows[:SLICE_WINDOWS]
    s_nll, s_n = train.window_nll(model, slice_windows, infer_numerics=True)

    log = [json.loads(line) for line in open(os.path.join(out, "train-log.jsonl"))]
    ev = {
        "heldout_documents": len(heldout_docs),
        "heldout_tokens_predicted": n,
        "heldout_perplexity_inference_numerics": math.exp(nll_q / n),
        "heldout_perplexity_training_numerics": math.exp(nll_f / n),
        "slice_tokens_predicted": s_n,
        "slice_perplexity": math.exp(s_nll / s_n),
        "n_params": ck["n_params"],
        "train_seconds": ck["train_seconds"],
        "train_tokens_corpus": ck["train_tokens"],
        "train_tokens_seen": ck["steps_tokens"],
        "final_train_loss": log[-1]["loss"],
        "args": ck["args"],
        "torch": torch.__version__,
    }
    with open(os.path.join(out, "eval.json"), "w") as f:
        json.dump(ev, f, indent=1)
    print(json.dumps(ev, indent=1))

    plot.loss_curve(log, os.path.join(out, "loss.png"))

    samples = []
    for i, pr in enumerate(PROMPTS):
        samples.append({
            "prompt": pr,
            "greedy": generate(model, tok, pr, 48),
            "sampled_t0.8_top40": generate(model, tok, pr, 48, temperature=0.8, seed=i),
        })
    with open(os.path.join(out, "samples.json"), "w") as f:
        json.dump(samples, f, indent=1, ensure_ascii=False)
    for s in samples:
        print(json.dumps(s, ensure_ascii=False))

    if slice_dir:
        os.makedirs(slice_dir, exist_ok=True)
        docs_per_window = window_docs[:SLICE_WINDOWS]
        data = {
            "about": "First held-out windows of the default model's corpus (tools/train); "
                     "each window is [BOS doc EOS]..., each document's part cut to n_ctx.",
            "n_ctx": c.n_ctx,
            "windows": [{"documents": d, "tokens": w} for d, w in zip(docs_per_window,
                                                                      slice_windows)],
            "pytorch": {
                "numerics": "int8 absmax activations, F16 embedding/K/V/q/probabilities/final "
                            "norm output (decode-step rounding, spec 3.6)",
                "nll_sum": s_nll,
                "tokens_predicted": s_n,
                "perplexity": math.exp(s_nll / s_n),
            },
        }
        texts = TOKENIZER_CASES + heldout_docs[:TOKENIZER_DOCS]
        data["tokenizer_cases"] = [{"text": t, "ids": tok.encode(t)} for t in texts]
        with open(os.path.join(slice_dir, "heldout_slice.json"), "w") as f:
            json.dump(data, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
