#!/usr/bin/env bash
# host_pipeline.sh: the host pipeline's own speed (docs/performance.md, "Host
# pipeline"): translate --dry-run (read, tokenize, echo through the
# detokenizer, format, write; no translator) over Multi30k's training source
# repeated, at each --host-threads count.
#
#   dev/bench/host_pipeline.sh BUILD_DIR MODEL OUT_DIR [THREADS]
#
# THREADS: the --host-threads counts, comma-separated (default 1,2,4,8,16
# and the cores, those above the cores left out). Env: SRC (default
# .carry/data/multi30k/train.de.gz), LINES (default 3,045,000: 105 copies),
# WINDOW (--maxi-batch, default 16384: the default window of a file on
# CUDA, 8 x 2048), REPEAT (default 3: the best is reported), WORK (default
# /tmp/nmt-host-pipeline). Each run's lines/s is --timing's
# lines_per_second (pipeline start to the last line written); CPU seconds
# are the process's user + system time (/usr/bin/time), start-up included.
# Writes OUT_DIR/host_pipeline.md (the table, with date, commit, CPU and the
# command) and host_pipeline.jsonl; exits 1 when a run fails or its output
# has another line count than the input.
set -uo pipefail
usage="usage: dev/bench/host_pipeline.sh BUILD_DIR MODEL OUT_DIR [THREADS]"
build=${1:?$usage} model=${2:?$usage} out=${3:?$usage}
root=$(cd "$(dirname "$0")/../.." && pwd)
cores=$(nproc)
threads_arg=${4:-1,2,4,8,16,$cores}
src=${SRC:-$root/.carry/data/multi30k/train.de.gz}
lines=${LINES:-3045000}
window=${WINDOW:-16384}
repeat=${REPEAT:-3}
work=${WORK:-/tmp/nmt-host-pipeline}
T=$build/translate
[ -x "$T" ] || { echo "no $T" >&2; exit 2; }
[ -f "$src" ] || { echo "no $src (Multi30k's train.de.gz: docs/evaluation.md, Data)" >&2; exit 2; }
mkdir -p "$out" "$work"
in=$work/input.de
if [ ! -f "$in" ] || [ "$(wc -l < "$in")" -ne "$lines" ]; then
    python3 "$root/dev/bench/repeat_lines.py" "$src" "$lines" "$in"
fi
jsonl=$out/host_pipeline.jsonl
: > "$jsonl"
failures=0
counts=$(tr ',' '\n' <<< "$threads_arg" | awk -v c="$cores" '$1 >= 1 && $1 <= c' | sort -nu)
for n in $counts; do
    for rep in $(seq 1 "$repeat"); do
        /usr/bin/time -f "%U %S" -o "$work/time.txt" "$T" -m "$model" --dry-run --quiet \
            --maxi-batch "$window" --host-threads "$n" -i "$in" -o "$work/out.txt" \
            --timing "$work/timing.json" 2> "$work/err.txt"
        code=$?
        got=$(wc -l < "$work/out.txt")
        if [ "$code" -ne 0 ] || [ "$got" -ne "$lines" ]; then
            echo "--host-threads $n: exit $code, $got lines out: $(tail -2 "$work/err.txt")" >&2
            failures=$((failures + 1))
            continue
        fi
        python3 - "$jsonl" "$n" "$rep" "$work/timing.json" "$work/time.txt" << 'PY'
import json, sys
path, n, rep, timing, cpu = sys.argv[1:6]
t = json.load(open(timing))
user, system = map(float, open(cpu).read().split()[-2:])
rec = {"threads": int(n), "rep": int(rep), "lines": t["lines"],
       "lines_per_second": t["lines_per_second"], "pipeline_s": t["pipeline_seconds"],
       "cpu_s": round(user + system, 3), "startup_s": t["startup_seconds"]}
with open(path, "a") as f:
    f.write(json.dumps(rec) + "\n")
PY
    done
done
commit=$(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown)
cpu_name=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)
python3 - "$jsonl" "$out/host_pipeline.md" "$commit" "$cpu_name" "$cores" "$lines" "$window" \
    "dev/bench/host_pipeline.sh $build $model $out $threads_arg" << 'PY'
import datetime, json, sys
path, md, commit, cpu, cores, lines, window, command = sys.argv[1:9]
runs = [json.loads(l) for l in open(path)]
best = {}
for r in runs:
    if r["threads"] not in best or r["lines_per_second"] > best[r["threads"]]["lines_per_second"]:
        best[r["threads"]] = r
when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
with open(md, "w") as f:
    f.write(f"{when}, commit {commit}, {cpu} ({cores} cores); translate --dry-run, "
            f"{int(lines):,} lines (Multi30k train.de repeated), windows of {window}; best "
            f"of the runs. `{command}`\n\n")
    f.write("| --host-threads | lines/s | pipeline s | CPU s (all) | CPU us a line |\n")
    f.write("| ---: | ---: | ---: | ---: | ---: |\n")
    for n, r in sorted(best.items()):
        f.write(f"| {n} | {r['lines_per_second']:,.0f} | {r['pipeline_s']:.2f} | "
                f"{r['cpu_s']:.2f} | {1e6 * r['cpu_s'] / r['lines']:.2f} |\n")
print(open(md).read())
PY
[ "$failures" -eq 0 ]
