#!/usr/bin/env python3
"""Trains a model-v1 network (pynmt.network) with teacher forcing.

Adam with gradient-norm clipping, label smoothing and dropout; batches of
about --batch-tokens target tokens drawn from length buckets (little padding,
so the per-step Python loop of the input-fed decoder wastes little); after
every epoch the validation perplexity and the validation BLEU of a greedy
decode with the same batched search the reference decoder uses (sacreBLEU
against the raw references, so the number means what the final one means).
The learning rate is halved when validation perplexity does not improve
(smooth from the first epoch, unlike BLEU, which sits near 0 early on and
would decay the rate before anything is learned); the best checkpoint is the
one of the best validation BLEU, and training stops early after --patience
epochs without a BLEU gain, and --time-budget makes it stop
cleanly (validated and saved) before the budget runs out.

Checkpoints (save-dir/last.pt each epoch, save-dir/best.pt at the best
validation BLEU) hold the weights, the vocabularies, the hyper-parameters as
model.bin stores them, the optimizer and RNG states (for --resume) and the
history; python/export/export.py turns one into model.bin.

--init-model MODEL.bin starts from an engine model file's weights and
vocabularies (fine-tuning; its hyper-parameters replace the model options).
--prune-sparsity S prunes the LSTM, attention and output matrices gradually
by magnitude (pruning.py: Zhu & Gupta's cubic schedule from --prune-start to
--prune-end, every --prune-every steps); the masks are re-applied after every
optimizer step and saved in the checkpoint ("pruning"), and export.py writes
the pruned matrices the file may store sparse to section SPRS.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import preprocess  # noqa: E402
from pruning import GradualPruner  # noqa: E402
from pynmt.network import BOS, EOS, PAD, NMTNetwork, count_parameters, load_checkpoint  # noqa: E402,E501
from pynmt.search import SearchConfig  # noqa: E402
from pynmt.translator import Translator  # noqa: E402


class Logger:
    """Prints with the elapsed time and appends the same line to save-dir/train.log."""

    def __init__(self, path: str, t0: float):
        self.file = open(path, "a", encoding="utf-8")
        self.t0 = t0

    def __call__(self, msg: str) -> None:
        line = f"[{time.time() - self.t0:7.1f}s] {msg}"
        print(line, flush=True)
        self.file.write(line + "\n")
        self.file.flush()


def make_batches(split, batch_tokens: int, rng: random.Random) -> list[list[int]]:
    """Length-bucketed batches: sort by (target, source) length with random ties,
    cut when the padded target tokens (EOS included) would pass batch_tokens,
    then shuffle the batch order."""
    keys = [(len(t), len(s), rng.random(), i)
            for i, (s, t) in enumerate(zip(split.src_words, split.tgt_ids))]
    keys.sort()
    batches, current, longest = [], [], 0
    for tlen, _, _, i in keys:
        longest_new = max(longest, tlen + 1)
        if current and longest_new * (len(current) + 1) > batch_tokens:
            batches.append(current)
            current, longest_new = [], tlen + 1
        current.append(i)
        longest = longest_new
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches


def collate(split, ids: list[int], device):
    """Padded tensors: source words/cases/lengths, decoder input (BOS y) and output (y EOS)."""
    n = len(ids)
    S = max(len(split.src_words[i]) for i in ids)
    T = max(len(split.tgt_ids[i]) for i in ids) + 1
    words = torch.full((n, S), PAD, dtype=torch.long)
    cases = torch.zeros((n, S), dtype=torch.long)
    tgt_in = torch.full((n, T), PAD, dtype=torch.long)
    tgt_out = torch.full((n, T), PAD, dtype=torch.long)
    lengths = torch.zeros(n, dtype=torch.long)
    for r, i in enumerate(ids):
        w, c, y = split.src_words[i], split.src_cases[i], split.tgt_ids[i]
        words[r, :len(w)] = torch.tensor(w)
        cases[r, :len(c)] = torch.tensor(c)
        lengths[r] = len(w)
        tgt_in[r, :len(y) + 1] = torch.tensor([BOS] + y)
        tgt_out[r, :len(y) + 1] = torch.tensor(y + [EOS])
    nb = dict(non_blocking=True)
    return (words.to(device, **nb), cases.to(device, **nb), lengths,
            tgt_in.to(device, **nb), tgt_out.to(device, **nb))


def autocast(args, device):
    enabled = args.amp == "bf16" and device.type == "cuda"
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=enabled)


@torch.no_grad()
def validate(net, split, translator, args, device, log) -> dict:
    """Perplexity (no smoothing) and greedy-decode sacreBLEU on the validation split."""
    import sacrebleu
    t = time.time()
    net.eval()
    nll, ntok = 0.0, 0
    order = sorted(range(len(split.src_words)), key=lambda i: len(split.tgt_ids[i]))
    for b in range(0, len(order), 128):
        words, cases, lengths, tgt_in, tgt_out = collate(split, order[b:b + 128], device)
        with autocast(args, device):
            logits = net(words, cases, lengths, tgt_in)
        nll += F.cross_entropy(logits.float().view(-1, logits.shape[-1]), tgt_out.view(-1),
                               ignore_index=PAD, reduction="sum").item()
        ntok += int((tgt_out != PAD).sum())
    config = SearchConfig(beam=args.valid_beam, n_best=1)
    outs = translator.translate(split.src_lines, config, batch_size=args.valid_batch_size)
    hyps = [o[0].text if o else "" for o in outs]
    bleu = sacrebleu.corpus_bleu(hyps, [split.tgt_lines])
    net.train()
    return {"valid_ppl": math.exp(min(nll / max(1, ntok), 50.0)), "valid_bleu": bleu.score,
            "valid_time": time.time() - t, "sample": hyps[:2]}


def save_checkpoint(path: str, state: dict) -> None:
    """Writes then renames, so an interrupted save never leaves a broken file."""
    tmp = path + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    preprocess.add_data_args(p)
    g = p.add_argument_group("model")
    g.add_argument("--emb-size", type=int, default=256)
    g.add_argument("--hidden-size", type=int, default=512)
    g.add_argument("--layers", type=int, default=2, help="encoder and decoder layers")
    g.add_argument("--dec-init", choices=["encoder", "zeros"], default="encoder")
    g.add_argument("--param-init", type=float, default=0.1, help="uniform(-x, x) init")
    g = p.add_argument_group("training")
    g.add_argument("--dropout", type=float, default=0.3)
    g.add_argument("--label-smoothing", type=float, default=0.1)
    g.add_argument("--lr", type=float, default=1e-3)
    g.add_argument("--lr-decay", type=float, default=0.5, help="factor when valid ppl stalls")
    g.add_argument("--min-lr", type=float, default=1e-5, help="stop when lr falls below")
    g.add_argument("--clip", type=float, default=5.0, help="max gradient norm")
    g.add_argument("--batch-tokens", type=int, default=2000, help="padded target tokens a batch")
    g.add_argument("--max-epochs", type=int, default=25)
    g.add_argument("--patience", type=int, default=4, help="early stop after N epochs w/o gain")
    g.add_argument("--time-budget", type=float, default=0,
                   help="seconds from start for the whole run (0: none); stops cleanly before")
    g.add_argument("--seed", type=int, default=1234)
    g.add_argument("--amp", choices=["none", "bf16"], default="none",
                   help="bf16 autocast on CUDA (weights stay fp32)")
    g.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    g.add_argument("--log-interval", type=int, default=50, help="batches between progress lines")
    g.add_argument("--valid-beam", type=int, default=1, help="beam of the per-epoch BLEU decode")
    g.add_argument("--valid-batch-size", type=int, default=128)
    g.add_argument("--no-validate", action="store_true",
                   help="skip the per-epoch validation; every saved checkpoint counts as best")
    g.add_argument("--max-steps", type=int, default=0, help="stop after N steps (0: no limit)")
    g = p.add_argument_group("pruning (gradual magnitude, Zhu & Gupta 2017)")
    g.add_argument("--prune-sparsity", type=float, default=0.0,
                   help="final fraction of zeros in each pruned matrix (0: no pruning)")
    g.add_argument("--prune-start", type=int, default=0, help="step the schedule starts at")
    g.add_argument("--prune-end", type=int, default=1000, help="step it reaches the sparsity")
    g.add_argument("--prune-every", type=int, default=100, help="steps between pruning steps")
    g.add_argument("--prune-tensors", default="all",
                   help="all (LSTM, attention, output matrices), sparse (those model.bin may "
                        "store sparse: decoder LSTM, attention, output) or a comma list of names")
    g = p.add_argument_group("files")
    g.add_argument("--save-dir", required=True)
    g.add_argument("--resume", action="store_true", help="continue from save-dir/last.pt")
    g.add_argument("--init-model", metavar="MODEL.bin",
                   help="start from this engine model file's weights and vocabularies")
    return p.parse_args(argv)


def main(argv=None) -> int:
    t0 = time.time()
    args = parse_args(argv)
    os.makedirs(args.save_dir, exist_ok=True)
    log = Logger(os.path.join(args.save_dir, "train.log"), t0)
    device = torch.device(args.device)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    if device.type == "cuda":
        # TF32 GEMMs: a free speed-up at these sizes; the exported weights are fp32 anyway.
        torch.set_float32_matmul_precision("high")
        torch.backends.cudnn.allow_tf32 = True

    resume = None
    last_path = os.path.join(args.save_dir, "last.pt")
    if args.resume:
        if not os.path.exists(last_path):
            log(f"--resume: {last_path} does not exist")
            return 2
        resume = load_checkpoint(last_path)
        log(f"resuming from {last_path} after epoch {resume['epoch']}")
    log("args: " + json.dumps(vars(args), sort_keys=True))
    init = None
    if args.init_model and not resume:
        from pynmt.modelfile import read_model
        init = read_model(args.init_model)  # (hparams, src_vocab, tgt_vocab, tensors)
        if init[0].get("tokenizer", "engine") != "engine":
            log(f"--init-model: tokenizer={init[0]['tokenizer']}; this trainer uses the engine's")
            return 2
        log(f"initializing from {args.init_model}: {init[0]}")
    vocabs = ((resume["src_vocab"], resume["tgt_vocab"]) if resume else
              (init[1], init[2]) if init else (None, None))

    data = preprocess.prepare_from_args(args, log, src_vocab=vocabs[0], tgt_vocab=vocabs[1])

    if init:
        net = NMTNetwork.from_hparams(init[0], dropout=args.dropout)
        net.from_file_tensors(init[3])
    elif resume:
        net = NMTNetwork.from_hparams(resume["hparams"], dropout=args.dropout)
    else:
        net = NMTNetwork(len(data.src_vocab), len(data.tgt_vocab), args.emb_size,
                         args.hidden_size, args.layers, args.layers, args.dropout, args.dec_init)
        net.init_uniform(args.param_init, seed=args.seed)
    net.to(device)
    pruner = None
    if args.prune_sparsity > 0:
        pruner = GradualPruner(net, args.prune_sparsity, args.prune_start, args.prune_end,
                               args.prune_every, args.prune_tensors)
        log(f"pruning {len(pruner.names)} matrices to {args.prune_sparsity:.0%} zeros, steps "
            f"{args.prune_start}..{args.prune_end} every {args.prune_every}: "
            + ", ".join(pruner.names))
    optimizer = torch.optim.Adam(net.parameters(), lr=args.lr)
    n_params = count_parameters(net)
    sizes = net.hparams()  # --init-model's and --resume's replace the size options
    log(f"model: {n_params / 1e6:.2f}M parameters ({2 * n_params / 1e6:.1f} MB as fp16), "
        f"E={sizes['emb_size']} H={sizes['hidden_size']} layers={sizes['enc_layers']} on {device}"
        + (f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else ""))

    history, epoch, step, best_bleu, stale, best_ppl = [], 0, 0, -1.0, 0, float("inf")
    rng = random.Random(args.seed)
    if resume:
        net.load_state_dict(resume["model"])
        optimizer.load_state_dict(resume["optimizer"])
        history, epoch, step = resume["history"], resume["epoch"], resume["step"]
        best_bleu, stale = resume["best_bleu"], resume["stale"]
        best_ppl = min((r["valid_ppl"] for r in history), default=float("inf"))
        rng.setstate(resume["rng"])
        torch.set_rng_state(resume["torch_rng"])
        if pruner and resume.get("pruning"):
            pruner.load_state_dict(resume["pruning"])
    translator = Translator(net, data.src_vocab, data.tgt_vocab)
    lr = optimizer.param_groups[0]["lr"]
    reserve = 30.0  # seconds kept for the last validation and save; measured after epoch 1
    stop_reason = None
    net.train()

    while epoch < args.max_epochs and stop_reason is None:
        epoch += 1
        t_epoch = time.time()
        batches = make_batches(data.train, args.batch_tokens, rng)
        loss_sum, tok_sum, t_log, tok_log, loss_log = 0.0, 0, time.time(), 0, 0.0
        n_batches = 0
        for bi, ids in enumerate(batches):
            if args.time_budget and time.time() - t0 > args.time_budget - reserve:
                stop_reason = f"time budget ({args.time_budget:.0f}s) in epoch {epoch}"
                break
            if args.max_steps and step >= args.max_steps:
                stop_reason = f"--max-steps {args.max_steps} reached in epoch {epoch}"
                break
            words, cases, lengths, tgt_in, tgt_out = collate(data.train, ids, device)
            with autocast(args, device):
                logits = net(words, cases, lengths, tgt_in)
            n_tok = int(sum(len(data.train.tgt_ids[i]) + 1 for i in ids))
            loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), tgt_out.view(-1),
                                   ignore_index=PAD, label_smoothing=args.label_smoothing,
                                   reduction="sum")
            optimizer.zero_grad(set_to_none=True)
            (loss / n_tok).backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), args.clip)
            optimizer.step()
            step += 1
            if pruner and not pruner.update(step):
                pruner.apply()  # Adam moved the pruned weights: back to zero
            elif pruner:
                log(f"step {step}: pruned to {pruner.current:.4f} sparsity")
            n_batches += 1
            loss_val = loss.item()
            loss_sum += loss_val
            tok_sum += n_tok
            loss_log += loss_val
            tok_log += n_tok
            if (bi + 1) % args.log_interval == 0:
                dt = time.time() - t_log
                log(f"epoch {epoch} batch {bi + 1}/{len(batches)} step {step} "
                    f"loss {loss_log / tok_log:.3f} {tok_log / dt:,.0f} tgt tok/s lr {lr:.2e}"
                    + (f" sparsity {pruner.current:.3f}" if pruner else ""))
                t_log, tok_log, loss_log = time.time(), 0, 0.0
        train_time = time.time() - t_epoch
        if tok_sum == 0:
            epoch -= 1
            break

        t_save = time.time()
        if args.no_validate:
            v = {"valid_ppl": float("nan"), "valid_bleu": float("nan"), "valid_time": 0.0,
                 "sample": [""]}
        else:
            v = validate(net, data.valid, translator, args, device, log)
        improved = args.no_validate or v["valid_bleu"] > best_bleu
        if improved:
            best_bleu, stale = v["valid_bleu"], 0
        else:
            stale += 1
        record = {"epoch": epoch, "step": step, "lr": lr, "train_loss": loss_sum / tok_sum,
                  "train_time": train_time, "train_tok_per_s": tok_sum / train_time,
                  "batches": n_batches,
                  "valid_ppl": v["valid_ppl"], "valid_bleu": v["valid_bleu"],
                  "valid_time": v["valid_time"], "best": improved,
                  "elapsed": time.time() - t0}
        if pruner:
            record["sparsity"] = pruner.current
        history.append(record)
        log(f"epoch {epoch} done: train loss {record['train_loss']:.3f} "
            f"({train_time:.1f}s, {record['train_tok_per_s']:,.0f} tok/s), valid ppl "
            f"{v['valid_ppl']:.2f}, valid BLEU {v['valid_bleu']:.2f} (greedy, "
            f"{v['valid_time']:.1f}s){' *best*' if improved else ''}, lr {lr:.2e}")
        log(f"  sample: {v['sample'][0]!r}")
        if args.no_validate or v["valid_ppl"] < best_ppl:
            best_ppl = v["valid_ppl"]
        else:
            lr *= args.lr_decay
            for g in optimizer.param_groups:
                g["lr"] = lr
        if stop_reason is None:
            if stale >= args.patience:
                stop_reason = f"no validation BLEU gain for {stale} epochs"
            elif lr < args.min_lr:
                stop_reason = f"lr {lr:.1e} below --min-lr"
        state = {"model": net.state_dict(), "hparams": net.hparams(),
                 "src_vocab": data.src_vocab, "tgt_vocab": data.tgt_vocab,
                 "optimizer": optimizer.state_dict(), "epoch": epoch, "step": step,
                 "best_bleu": best_bleu, "stale": stale, "history": history,
                 "args": vars(args), "rng": rng.getstate(), "torch_rng": torch.get_rng_state(),
                 "pruning": pruner.state_dict() if pruner else None}
        save_checkpoint(last_path, state)
        if improved:
            save_checkpoint(os.path.join(args.save_dir, "best.pt"), state)
        with open(os.path.join(args.save_dir, "history.json"), "w") as f:
            json.dump(history, f, indent=1)
        # Keep enough time for one more validation and save (plus a margin).
        reserve = 1.5 * (time.time() - t_save) + 5.0
        if (stop_reason is None and args.time_budget and
                time.time() - t0 + reserve + 0.25 * train_time > args.time_budget):
            stop_reason = f"time budget ({args.time_budget:.0f}s): no room for a useful epoch"

    stop_reason = stop_reason or f"--max-epochs {args.max_epochs} reached"
    best = max(history, key=lambda r: r["valid_bleu"]) if history and not args.no_validate \
        else None
    log(f"stopped: {stop_reason}; {epoch} epochs, {step} steps, {time.time() - t0:.0f}s")
    if pruner:
        zeros = sum(z for z, _ in pruner.stats().values())
        size = sum(n for _, n in pruner.stats().values())
        log(f"pruned matrices: {zeros} of {size} entries zero ({zeros / size:.2%}), schedule at "
            f"{pruner.current:.4f} of {pruner.sparsity}")
    if best:
        log(f"best: epoch {best['epoch']} valid BLEU {best['valid_bleu']:.2f} (greedy) "
            f"ppl {best['valid_ppl']:.2f} -> {os.path.join(args.save_dir, 'best.pt')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
