#!/usr/bin/env python3
"""bench_torch.py: the PyTorch baselines on the shapes of the CUDA benches.

softmax_topk: torch.topk(torch.log_softmax(x, -1), K); nhot: embedding_bag
(mode="sum", per_sample_weights); reduce: torch.sum over the axes and a
broadcast add. Timed exactly like dev/bench/bench_util.h: after warm-up a
pair of CUDA events brackets NMT_BENCH_BATCH (20) back-to-back calls, the
time per call is that over the batch, and the result is the median of
NMT_BENCH_REPEATS (20) such runs; inputs rotate over copies bigger than 2x L2. Prints JSON lines (impl "torch")
that dev/bench/summarize.py joins with the C benches. Exits 0 with a note
on stderr when torch or a GPU is missing. Same env knobs as the C benches.
"""
import json
import os
import sys


def env_list(name, default):
    v = os.environ.get(name)
    return [int(t) for t in v.split(",") if t] if v else list(default)


def main():
    try:
        import torch
    except ImportError:
        print("bench_torch.py: skipped: no torch", file=sys.stderr)
        return 0
    if not torch.cuda.is_available():
        print("bench_torch.py: skipped: no GPU", file=sys.stderr)
        return 0
    repeats = max(1, int(os.environ.get("NMT_BENCH_REPEATS", "20")))
    batch = max(1, int(os.environ.get("NMT_BENCH_BATCH", "20")))
    dev = torch.device("cuda")
    l2_flush = 128 << 20

    def time_us(fn):
        call = 0
        for _ in range(3):
            fn(call)
            call += 1
        torch.cuda.synchronize()
        times = []
        for _ in range(repeats):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(batch):
                fn(call)
                call += 1
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) * 1000.0 / batch)
        times.sort()
        n = len(times)
        return times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])

    def emit(**kw):
        print(json.dumps(kw), flush=True)

    # Copy bandwidth, the same way as the C benches (read + write bytes).
    src = torch.empty(64 << 20, dtype=torch.float32, device=dev)
    dst = torch.empty_like(src)
    us = time_us(lambda i: dst.copy_(src))
    copy_gbps = 2 * src.numel() * 4 / (us * 1e3)
    emit(bench="copy", impl="torch", median_us=us, gbps=copy_gbps)
    del src, dst

    which = os.environ.get("NMT_BENCH_TORCH", "softmax_topk,nhot,reduce").split(",")

    if "softmax_topk" in which:
        for V in env_list("NMT_BENCH_VOCABS", [10240, 32000, 50000]):
            for rows in env_list("NMT_BENCH_ROWS", [1, 5, 12, 60, 120, 512, 1024, 4000]):
                nbytes = rows * V * 4
                copies = max(1, min(65536, -(-l2_flush // nbytes)))
                block = torch.randn(copies, rows, V, device=dev) * 3  # one allocation
                xs = [block[c] for c in range(copies)]
                for K in env_list("NMT_BENCH_KS", [1, 5, 10, 50]):
                    us = time_us(lambda i: torch.topk(torch.log_softmax(xs[i % copies], -1), K, dim=-1))
                    emit(bench="softmax_topk", impl="torch", rows=rows, V=V, K=K, median_us=us,
                         bytes=nbytes, floor_us=nbytes / (copy_gbps * 1e3), copy_gbps=copy_gbps)
                del xs, block

    if "nhot" in which:
        rows, table_rows, dim = 100, 10240, 512
        copies = max(1, min(8, -(-l2_flush // (table_rows * dim * 4))))
        tables = [torch.rand(table_rows, dim, device=dev) - 0.5 for _ in range(copies)]
        for n in env_list("NMT_BENCH_NS", [1, 2, 5, 10, 50, 100]):
            r = torch.arange(rows, device=dev).repeat_interleave(n)
            e = torch.arange(n, device=dev).repeat(rows)
            cols = (r * 7919 + e * 10007) % table_rows
            offsets = torch.arange(rows, device=dev) * n
            weights = torch.full((rows * n,), 1.0 / n, device=dev)
            us = time_us(lambda i: torch.nn.functional.embedding_bag(
                cols, tables[i % copies], offsets, mode="sum", per_sample_weights=weights))
            emit(bench="nhot", impl="torch_embedding_bag", rows=rows, table_rows=table_rows,
                 dim=dim, N=n, median_us=us)
        del tables

    if "reduce" in which:
        lg = min(30, max(12, int(os.environ.get("NMT_BENCH_REDUCE_LOG2", "26"))))
        n, side = 1 << lg, 1 << (lg // 2)
        a3 = 1 << (lg // 3)
        c3 = n // (a3 * a3)
        cases = [
            ("sum rows (keep last)", [n // side, side], 1, 0),
            ("sum cols (reduce last)", [n // side, side], 2, 0),
            ("sum all", [n], 1, 0),
            ("sum axes 0,2", [a3, a3, c3], 5, 0),
            ("sum axis 1", [a3, a3, c3], 2, 0),
            ("sum last of 4", [n // 4, 4], 2, 0),
            ("bias add (y last)", [n // side, side], 2, 1),
            ("beam add (y first)", [n // side, side], 1, 1),
            ("add y over axes 0,2", [a3, a3, c3], 5, 1),
            ("add y over axis 1", [a3, a3, c3], 2, 1),
        ]
        x = torch.zeros(n, device=dev)
        for name, dims, mask, bcast in cases:
            xv = x.view(*dims)
            axes = [d for d in range(len(dims)) if mask >> d & 1]
            if bcast:
                yshape = [dims[d] if mask >> d & 1 else 1 for d in range(len(dims))]
                y = torch.zeros(yshape, device=dev)
                out = torch.empty_like(xv)
                us = time_us(lambda i: torch.add(xv, y, out=out))
                nbytes = (2 * n + y.numel()) * 4
                op = "broadcast_add"
            else:
                us = time_us(lambda i: torch.sum(xv, dim=axes))
                out_n = n
                for d in axes:
                    out_n //= dims[d]
                nbytes = (n + out_n) * 4
                op = "reduce_sum"
            gbps = nbytes / (us * 1e3)
            emit(bench="reduce", impl="torch", op=op, case=name,
                 dims="x".join(str(d) for d in dims), mask=mask, median_us=us, bytes=nbytes,
                 gbps=gbps, frac_of_copy=gbps / copy_gbps, copy_gbps=copy_gbps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
