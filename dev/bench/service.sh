#!/usr/bin/env bash
# service.sh: the service and nmt-server against offline translate, at the
# service defaults (auto precision: fp16 for the shipped model; batch 256,
# two workers a GPU), side by side in one run (docs/perf/service.md,
# "Defaults").
#
#   dev/bench/service.sh BUILD_DIR MODEL SOURCE [REPS]
#
# Every answer is compared bit for bit (text, score and log-probability)
# with the offline translation of its line at batch 1: bench_service
# translates the lines at batch 1 itself (--reference-batch 1, the first
# repetition; later ones take batch 256, the same bits by batch invariance),
# and nmt-server's answers are checked against `translate --batch-size 1
# --scores` (dev/eval/loadgen --ref-scores). Offline's best batch size is
# 2048 ("of offline" below). Per repetition (default 3):
#   C service, closed loops of 256 and 1024 clients, the defaults and one
#   worker a GPU; nmt-server, closed loops of 256 and 1024 clients (16 load
#   processes), the defaults.
# Prints the medians; the JSON lines go to $OUT/service.jsonl (or /tmp).
set -euo pipefail
build=$1 model=$2 src=$3 reps=${4:-3}
out=${OUT:-/tmp}
jsonl=$out/service.jsonl
: > "$jsonl"
lines=$(wc -l < "$src")
port=${NMT_BENCH_PORT:-5077}
"$build/translate" -m "$model" --batch-size 1 --scores -i "$src" -o "$out/service-ref.tsv"
service() { # TAG OPTIONS...
    local tag=$1
    shift
    "$build/bench_service" -m "$model" -i "$src" --device cuda "$@" --offline-batch 2048 |
        sed "s/^{/{\"config\":\"$tag\",/" >> "$jsonl"
}
server() { # TAG CLIENTS
    "$build/nmt-server" -m "$model" --port "$port" --max-connections 4096 \
        --max-connections-per-ip 0 > "$out/service-server.log" 2>&1 &
    local pid=$!
    for _ in $(seq 120); do
        curl -s "127.0.0.1:$port/health" > /dev/null 2>&1 && break
        sleep 0.5
    done
    python3 dev/eval/loadgen --url "http://127.0.0.1:$port" --src "$src" \
        --ref "$out/service-ref.tsv" --ref-scores --closed "$2" --processes 16 \
        --requests $((2 * lines)) | sed "s/^{/{\"config\":\"$1\",/" >> "$jsonl" || true
    kill -TERM "$pid"
    wait "$pid" || true
}
for rep in $(seq "$reps"); do
    ref=0
    [ "$rep" = 1 ] && ref=1
    service "service, 256 clients" --closed 256 --requests "$lines" --reference-batch $ref
    service "service, 256 clients, 1 worker" --closed 256 --requests "$lines" \
        --workers-per-device 1 --reference-batch 0
    service "service, 1024 clients" --closed 1024 --requests $((2 * lines)) --reference-batch 0
    service "service, 1024 clients, 1 worker" --closed 1024 --requests $((2 * lines)) \
        --workers-per-device 1 --reference-batch 0
    server "nmt-server, 256 clients" 256
    server "nmt-server, 1024 clients" 1024
done
python3 - "$jsonl" <<'PY'
import collections, json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
offline = statistics.median(r["offline_sents_per_s"] for r in rows if "offline_sents_per_s" in r)
groups = collections.defaultdict(list)
for r in rows:
    groups[r["config"]].append(r)
print(f"offline translate at batch 2048 (median of {sum('offline_sents_per_s' in r for r in rows)}): "
      f"{offline:,.0f} sentences/s")
print("| configuration | runs | sentences/s | of offline | p50 / p90 / p99 ms | batch fill | different, lost |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for config, runs in groups.items():
    med = lambda f: statistics.median(r[f] for r in runs)
    print(f"| {config} | {len(runs)} | {med('sents_per_s'):,.0f} | {med('sents_per_s') / offline:.2f} | "
          f"{med('p50_ms'):.1f} / {med('p90_ms'):.1f} / {med('p99_ms'):.1f} | {med('batch_fill'):.0f} | "
          f"{sum(r['different'] for r in runs)}, {sum(r['lost'] for r in runs)} |")
PY
