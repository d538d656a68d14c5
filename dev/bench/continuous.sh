#!/usr/bin/env bash
# continuous.sh: continuous batching against batching in the service, side by
# side in one run (docs/perf/service.md, "Continuous batching").
#
#   dev/bench/continuous.sh BUILD_DIR MODEL SOURCE [REPS]
#
# For each repetition and each policy (continuous with join_every 4 and 8,
# batching with max_delay_us 500), bench_service runs a closed loop of 256
# clients (8,000 requests) and an open loop of Poisson arrivals at 6,000/s
# (12,000 requests), batch size 256, beam 5, on CUDA. Every answer is
# checked against the offline translation of its line. Prints the medians
# over the repetitions (default 3); the JSON lines go to $OUT/continuous.jsonl
# (or /tmp).
set -euo pipefail
build=$1 model=$2 src=$3 reps=${4:-3}
out=${OUT:-/tmp}/continuous.jsonl
: > "$out"
for rep in $(seq "$reps"); do
  for policy in "--continuous 1 --join-every 4" "--continuous 1 --join-every 8" \
                "--continuous 0 --max-delay-us 500"; do
    # shellcheck disable=SC2086 # the policy is several options
    "$build/bench_service" -m "$model" -i "$src" --device cuda --beam 5 $policy \
        --batch-size 256 --closed 256 --requests 8000 >> "$out"
    # shellcheck disable=SC2086
    "$build/bench_service" -m "$model" -i "$src" --device cuda --beam 5 $policy \
        --batch-size 256 --open 6000 --requests 12000 >> "$out"
  done
done
python3 - "$out" <<'PY'
import collections, json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
groups = collections.defaultdict(list)
for d in rows:
    policy = f"continuous, join_every {d['join_every']}" if d["continuous"] else "batching"
    groups[(d["mode"], policy)].append(d)
print("| load | policy | runs | sentences/s | of offline | p50 / p90 / p99 ms | different, lost |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for (mode, policy), runs in sorted(groups.items()):
    med = lambda f: statistics.median(r[f] for r in runs)
    load = "closed, 256 clients" if mode == "closed" else "open, 6,000/s"
    print(f"| {load} | {policy} | {len(runs)} | {med('sents_per_s'):,.0f} | "
          f"{med('ratio_to_offline'):.2f} | {med('p50_ms'):.1f} / {med('p90_ms'):.1f} / "
          f"{med('p99_ms'):.1f} | {sum(r['different'] for r in runs)}, "
          f"{sum(r['lost'] for r in runs)} |")
PY
