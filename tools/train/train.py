"""Trains the default model: corpus -> BPE tokenizer -> BitNet b1.58 with QAT -> export.

Run with Debian's interpreter after tools/train/install-train-deps.sh:
    /usr/bin/python3 tools/train/train.py --out OUTDIR [--steps N] [--seed S]
OUTDIR receives tokenizer.json, tokenizer_config.json, checkpoint.pt, train-log.jsonl and then,
through export.py, the float weights (manifest.json + weights.f32), eval.json, the loss curve and
the test slice. `bitnet-model import` turns the export into the GGUF. Everything is a function of
the seed and the arguments (single-process CPU PyTorch is deterministic for a fixed thread count).
"""

import argparse
import json
import math
import os
import random
import sys
import time

# The machines are shared: with OpenMP's default spin-waiting, two torch threads competing with
# other processes for two cores ran 20x slower than with passive waiting. Set before torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bitnet  # noqa: E402
import bpe  # noqa: E402
import corpus  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--steps", type=int, default=800)
    p.add_argument("--batch", type=int, default=16, help="sequences per step")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--min-lr", type=float, default=3e-4)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--weight-decay", type=float, default=0.05)
    p.add_argument("--eval-every", type=int, default=250)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--layers", type=int, default=5)
    p.add_argument("--no-export", action="store_true")
    return p.parse_args()


def doc_stream(tok, docs):
    """[BOS doc EOS] back to back, and where each document starts."""
    ids, starts = [], []
    for d in docs:
        starts.append(len(ids))
        ids.append(tok.bos_id)
        ids.extend(tok.encode(d))
        ids.append(tok.eos_id)
    return torch.tensor(ids, dtype=torch.long), starts


def heldout_windows(tok, docs, n_ctx):
    """Held-out documents packed greedily into windows of at most n_ctx tokens, each window
    starting at a document's BOS (as a served prompt does); each document is [BOS doc EOS] cut to
    n_ctx tokens. Returns the windows' token ids and the documents in each."""
    windows, window_docs, cur, cur_docs = [], [], [], []
    for d in docs:
        ids = ([tok.bos_id] + tok.encode(d) + [tok.eos_id])[:n_ctx]
        if len(cur) + len(ids) > n_ctx:
            windows.append(cur)
            window_docs.append(cur_docs)
            cur, cur_docs = [], []
        cur = cur + ids
        cur_docs.append(d)
    if cur:
        windows.append(cur)
        window_docs.append(cur_docs)
    return windows, window_docs


@torch.no_grad()
def window_nll(model, windows, infer_numerics):
    """Sum of negative log-likelihoods of tokens 1.. of each window, and their count."""
    model.eval()
    total, count = 0.0, 0
    for w in windows:
        x = torch.tensor([w], dtype=torch.long)
        logp = torch.log_softmax(model(x[:, :-1], infer_numerics).double(), dim=-1)
        total -= logp[0].gather(1, x[0, 1:, None]).sum().item()
        count += len(w) - 1
    model.train()
    return total, count


def lr_at(step, a):
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    t = (step - a.warmup) / max(1, a.steps - a.warmup)
    return a.min_lr + 0.5 * (a.lr - a.min_lr) * (1 + math.cos(math.pi * t))


def main():
    a = parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(a.threads)
    random.seed(a.seed)
    torch.manual_seed(a.seed)
    t0 = time.time()

    docs = corpus.load_documents()
    train_docs, heldout_docs = corpus.split(docs)
    merges = bpe.train(train_docs, a.vocab, log=None)
    tok = bpe.Tokenizer(merges)
    c = bitnet.Config(n_vocab=len(tok), n_layer=a.layers)
    tok.save(os.path.join(a.out, "tokenizer.json"), os.path.join(a.out, "tokenizer_config.json"),
             c.n_ctx)
    order = list(range(len(train_docs)))
    random.Random(a.seed).shuffle(order)
    stream, starts = doc_stream(tok, [train_docs[i] for i in order])
    starts = [s for s in starts if s + c.n_ctx + 1 <= len(stream)]
    eval_windows, _ = heldout_windows(tok, heldout_docs, c.n_ctx)
    print(f"corpus: {len(train_docs)} train / {len(heldout_docs)} held-out documents, "
          f"{len(stream)} train tokens, {sum(len(w) for w in eval_windows)} held-out tokens "
          f"in {len(eval_windows)} windows; tokenizer {time.time() - t0:.1f}s", flush=True)

    model = bitnet.BitNet(c)
    n_params = sum(p.numel() for p in model.parameters())
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and "token_embd" not in n]
    other = [p for n, p in model.named_parameters() if not (p.dim() == 2 and "token_embd" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": other, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    gen = torch.Generator().manual_seed(a.seed)
    offsets = torch.arange(c.n_ctx + 1)
    log = open(os.path.join(a.out, "train-log.jsonl"), "w")
    print(f"model: {n_params} parameters, {a.steps} steps of {a.batch}x{c.n_ctx} tokens", flush=True)

    t_train = time.time()
    for step in range(a.steps):
        idx = torch.randint(len(starts), (a.batch,), generator=gen)
        rows = torch.tensor([starts[i] for i in idx.tolist()])[:, None] + offsets
        batch = stream[rows]
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a)
        logits = model(batch[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, c.n_vocab),
                                                 batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        rec = {"step": step + 1, "loss": round(loss.item(), 5), "lr": opt.param_groups[0]["lr"],
               "seconds": round(time.time() - t_train, 1)}
        if (step + 1) % a.eval_every == 0 or step + 1 == a.steps:
            nll, n = window_nll(model, eval_windows, infer_numerics=False)
            rec["heldout_loss"] = round(nll / n, 5)
        log.write(json.dumps(rec) + "\n")
        log.flush()
        if (step + 1) % 25 == 0 or "heldout_loss" in rec:
            print(json.dumps(rec), flush=True)

    train_seconds = time.time() - t_train
    torch.save({"config": c.to_dict(), "state": model.state_dict(), "args": vars(a),
                "n_params": n_params, "train_seconds": train_seconds,
                "train_tokens": len(stream), "steps_tokens": a.steps * a.batch * c.n_ctx},
               os.path.join(a.out, "checkpoint.pt"))
    print(f"trained in {train_seconds:.0f}s", flush=True)
    if not a.no_export:
        import export
        export.run(a.out)


if __name__ == "__main__":
    main()
