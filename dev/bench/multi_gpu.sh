#!/usr/bin/env bash
# multi_gpu.sh: translate's throughput on 1, 2 and 4 GPUs of one host, in one
# process (--devices) and through mpirun (--mpi, one rank a GPU), with every
# output checked byte-identical to the one-GPU output (issue #20;
# docs/performance.md, "Multi-GPU and MPI").
#
#   dev/bench/multi_gpu.sh BUILD_DIR MODEL OUT_DIR [GPUS] [BATCH]
#
# GPUS: the GPU counts, comma-separated (default 1,2,4, those above the GPUs
# visible left out; 1 is always run: it is the reference). BATCH: the
# --batch-size (default: default, translate's own: 2048 for a file on CUDA). The input is Multi30k's training source
# (SRC, default .carry/data/multi30k/train.de.gz, 29,000 lines) repeated to
# LINES lines (default 203,000). Every run is beam 5 on CUDA:
#   cuda xN   translate --devices 0,..,N-1 (N = 1: --devices 0)
#   mpi xN    mpirun -np N --bind-to none translate --mpi, each rank seeing
#             one GPU (CUDA_VISIBLE_DEVICES = its local rank, by a wrapper)
# for each count, REPEAT times (default 3), the configurations interleaved
# (one round of all, then the next), after one untimed warm-up with
# --devices on every GPU. Each run is timed three ways:
#   wall      around the whole process (model load, CUDA start-up and the
#             warm-up of each translator included; mpirun's too)
#   pipeline  the translation itself, from the first line read to the last
#             written, all translators at once: translate --progress's final
#             line (lines / lines/s). Under mpirun only rank 0 reports, for
#             its shard: its rate times the ranks is given, an estimate
#   decode    --timing's decode_seconds_summed: the translators' decode
#             times summed (the GPUs' busy time, not wall time; not under
#             --mpi, which refuses --timing)
# and, from --timing, the start-up (process start to every translator
# ready) and the first output line (startup_s, first_output_s).
# Env: PRECISION (--precision, default auto, translate's default), MAXI_BATCH (--maxi-batch; default
# the engine's, 8 x BATCH), REPEAT, LINES, SRC, WORK (inputs and outputs,
# default /tmp/nmt-multi-gpu: they are too big for OUT_DIR), MPI=0 (no mpirun
# runs), BUDGET_S (default 420: runs that would start later are skipped, said
# so), RUN_TIMEOUT_S (default 180 a run), NMT_BENCH_COMMIT (the commit for the
# table where the copy has no .git), NMT_BENCH_DEVICE=cpu (a dry run of
# this script on the CPU: --workers N and no GPU wrapper; for checking the
# script, not for numbers).
# Open MPI: the system's, or .carry/mpi (dev/prepare-device-mpi.sh) through
# dev/carry-env.sh; BUILD_DIR must be configured with it (docs/scale-out.md).
# Writes to OUT_DIR: multi_gpu.jsonl (a record a run, then a summary record a
# configuration), multi_gpu.md (the table, with date, commit, GPUs and the
# command), multi_gpu.log (the runs' stderr tails, nvidia-smi topo -m) and
# multi_gpu.png (dev/bench/plot_multi_gpu.py, when matplotlib is there;
# otherwise run it elsewhere on multi_gpu.jsonl). Exits 1 when an output
# differs from the one-GPU output or a run failed.
set -uo pipefail
usage="usage: dev/bench/multi_gpu.sh BUILD_DIR MODEL OUT_DIR [GPUS] [BATCH]"
build=${1:?$usage} model=${2:?$usage} out=${3:?$usage}
gpus_arg=${4:-1,2,4}
batch=${5:-default}
root=$(cd "$(dirname "$0")/../.." && pwd)
precision=${PRECISION:-auto}
repeat=${REPEAT:-3}
lines=${LINES:-203000}
src=${SRC:-$root/.carry/data/multi30k/train.de.gz}
work=${WORK:-/tmp/nmt-multi-gpu}
budget=${BUDGET_S:-420}
run_timeout=${RUN_TIMEOUT_S:-180}
device=${NMT_BENCH_DEVICE:-cuda}
# NVLink multicast stays off on the shared GPU hosts (the device's rule);
# mpirun passes the environment to its ranks.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# shellcheck source=../carry-env.sh
source "$root/dev/carry-env.sh"
use_carried_deps "$root"
# A program on PATH that can run (bash's command -v also names one that cannot).
have() {
    local d IFS=:
    for d in $PATH; do
        [ -f "$d/$1" ] && [ -x "$d/$1" ] && return 0
    done
    return 1
}
have mpirun || use_carried_mpi "$root"
# Single-copy transfers (CMA) are not allowed in every container; the ranks
# exchange a few numbers only.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

T=$build/translate
[ -x "$T" ] || { echo "no $T" >&2; exit 2; }
[ -f "$model" ] || { echo "no model $model" >&2; exit 2; }
[ -f "$src" ] || { echo "no $src (Multi30k's train.de.gz: docs/evaluation.md, Data)" >&2; exit 2; }
mkdir -p "$out" "$work"
started=$SECONDS
log=$out/multi_gpu.log
jsonl=$out/multi_gpu.jsonl
: > "$log"
: > "$jsonl"

# GPUs visible, and the counts to run.
if [ "$device" = cuda ]; then
    visible=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU')
    if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
        n_cvd=$(tr ',' '\n' <<< "$CUDA_VISIBLE_DEVICES" | grep -c .)
        [ "$n_cvd" -lt "$visible" ] && visible=$n_cvd
    fi
else
    visible=$(nproc)
fi
counts=(1)
for n in ${gpus_arg//,/ }; do
    if [ "$n" -gt 1 ] && [ "$n" -le "$visible" ]; then
        counts+=("$n")
    elif [ "$n" -gt "$visible" ]; then
        echo "$n GPUs asked for, $visible visible: left out" | tee -a "$log"
    fi
done
mpi=${MPI:-1}
if [ "$mpi" != 0 ]; then
    if ! have mpirun; then
        echo "no mpirun (system or .carry/mpi): no MPI runs" | tee -a "$log"
        mpi=0
    elif ! grep -q 'libmpi\.so' <<< "$(ldd "$T" 2>&1)"; then
        echo "$T is built without MPI (configure with mpicc found): no MPI runs" | tee -a "$log"
        mpi=0
    fi
fi

# The input: SRC repeated to LINES lines.
in=$work/input.de
if [ ! -f "$in" ] || [ "$(wc -l < "$in")" -ne "$lines" ]; then
    python3 "$root/dev/bench/repeat_lines.py" "$src" "$lines" "$in"
fi
echo "input: $in, $(wc -l < "$in") lines, $(wc -c < "$in") bytes (from $src)" | tee -a "$log"

opts=(-m "$model" --beam 5 --progress -i "$in")
[ "$batch" != default ] && opts+=(--batch-size "$batch")
if [ "$device" = cuda ]; then
    opts+=(--device cuda --precision "$precision")
else
    opts+=(--device cpu)
fi
[ -n "${MAXI_BATCH:-}" ] && opts+=(--maxi-batch "$MAXI_BATCH")

# One GPU a rank: the local rank's entry of CUDA_VISIBLE_DEVICES (or its
# ordinal), so that every rank's --device cuda is a different GPU.
wrapper=$work/rank-gpu.sh
cat > "$wrapper" << 'SH'
#!/usr/bin/env bash
r=${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-0}}
if [ "${NMT_BENCH_DEVICE:-cuda}" = cuda ]; then
    if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
        IFS=, read -ra list <<< "$CUDA_VISIBLE_DEVICES"
        export CUDA_VISIBLE_DEVICES=${list[$r]}
    else
        export CUDA_VISIBLE_DEVICES=$r
    fi
fi
exec "$@"
SH
chmod +x "$wrapper"

# The command of a configuration (mode devices|mpi, N) into the array cmd.
command_for() {
    local mode=$1 n=$2 out_file=$3 timing=$4
    if [ "$mode" = devices ]; then
        cmd=("$T" "${opts[@]}" -o "$out_file" --timing "$timing")
        if [ "$device" = cuda ]; then
            cmd+=(--devices "$(seq -s, 0 $((n - 1)))")
        elif [ "$n" -gt 1 ]; then
            cmd+=(--workers "$n")
        fi
    else
        cmd=(mpirun -np "$n" --bind-to none --oversubscribe -x NCCL_NVLS_ENABLE
             -x NMT_BENCH_DEVICE "$wrapper" "$T" --mpi "${opts[@]}" -o "$out_file")
    fi
}

# Seconds since the epoch, to the nanosecond.
now() { date +%s.%N; }

# The last progress line's lines and lines/s: "translate: N lines, R lines/s, ...".
progress_of() {
    tr '\r' '\n' < "$1" | sed -n 's/^translate: \([0-9]*\) lines, \([0-9.]*\) lines\/s.*/\1 \2/p' |
        tail -1
}

reference=$work/reference.en # the first one-GPU run's output
rm -f "$reference"
export NMT_BENCH_DEVICE=$device # for the rank wrapper
failures=0
run_one() { # MODE N REP (REP 0: the warm-up)
    local mode=$1 n=$2 rep=$3
    local label
    label=$([ "$mode" = devices ] && echo "$device" || echo mpi)x$n
    local out_file=$work/$label.en timing=$work/$label-$rep.timing.json err=$work/$label-$rep.err
    rm -f "$out_file" "$timing"
    command_for "$mode" "$n" "$out_file" "$timing"
    local t0 t1 code
    t0=$(now)
    timeout "$run_timeout" "${cmd[@]}" > /dev/null 2> "$err"
    code=$?
    t1=$(now)
    {
        echo "== $label rep $rep: exit $code, $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}') s: ${cmd[*]}"
        tr '\r' '\n' < "$err" | grep -v '^translate: [0-9]* lines, ' | tail -5
    } >> "$log"
    [ "$rep" = 0 ] && return 0
    local progress identical=null decode=null startup=null first=null
    progress=$(progress_of "$err")
    if [ -f "$timing" ]; then
        read -r decode startup first < <(python3 -c 'import json, sys; t = json.load(open(sys.argv[1])); print(t["decode_seconds_summed"], t["startup_seconds"], t["first_output_seconds"])' "$timing" 2> /dev/null || echo null null null)
    fi
    if [ "$code" -eq 0 ] && [ -f "$out_file" ]; then
        if [ "$label" = "${device}x1" ] && [ ! -f "$reference" ]; then
            cp "$out_file" "$reference"
        fi
        if [ -f "$reference" ]; then
            cmp -s "$reference" "$out_file" && identical=true || identical=false
        fi
    fi
    if [ "$code" -ne 0 ] || [ "$identical" = false ]; then
        failures=$((failures + 1))
        echo "$label rep $rep: exit $code, identical to ${device}x1: $identical" | tee -a "$log"
    fi
    python3 - "$jsonl" "$label" "$mode" "$n" "$rep" "$lines" "$t0" "$t1" "$code" "$identical" \
        "$decode" "${progress:-}" "$startup" "$first" << 'PY'
import json, sys
(path, label, mode, n, rep, lines, t0, t1, code, identical, decode, progress, startup,
 first) = sys.argv[1:15]
n, lines = int(n), int(lines)
wall = float(t1) - float(t0)
rec = {"record": "run", "config": label, "mode": mode, "gpus": n, "rep": int(rep),
       "lines": lines, "exit": int(code), "identical": json.loads(identical),
       "wall_s": round(wall, 4), "wall_lines_per_s": round(lines / wall, 3)}
if progress:
    p_lines, p_rate = progress.split()
    p_lines, p_rate = int(p_lines), float(p_rate)
    if mode == "mpi":  # rank 0's shard only
        rec["rank0_lines"], rec["rank0_lines_per_s"] = p_lines, p_rate
        rec["pipeline_lines_per_s"] = round(p_rate * n, 1)
        rec["pipeline_estimated"] = True
    else:
        rec["pipeline_lines_per_s"] = p_rate
        rec["pipeline_s"] = round(p_lines / p_rate, 4) if p_rate > 0 else None
for key, value in (("startup_s", startup), ("first_output_s", first)):
    if value not in ("null", "None"):
        rec[key] = float(value)
if decode != "null":
    rec["decode_s"] = float(decode)
    rec["decode_lines_per_s_per_gpu"] = round(lines / float(decode), 1) if float(decode) > 0 else None
with open(path, "a") as f:
    f.write(json.dumps(rec) + "\n")
PY
}

# The warm-up: every GPU once (files cached, clocks up), not counted.
configs=()
for n in "${counts[@]}"; do configs+=("devices:$n"); done
if [ "$mpi" != 0 ]; then
    for n in "${counts[@]}"; do [ "$n" -gt 1 ] && configs+=("mpi:$n"); done
fi
echo "configurations: ${configs[*]}; $repeat rounds; beam 5, batch $batch, $device ($precision)" |
    tee -a "$log"
run_one devices "${counts[-1]}" 0
skipped=0
for rep in $(seq 1 "$repeat"); do
    for c in "${configs[@]}"; do
        if [ $((SECONDS - started)) -ge "$budget" ]; then
            skipped=$((skipped + 1))
            continue
        fi
        run_one "${c%%:*}" "${c##*:}" "$rep"
        echo "  ${c} rep $rep done ($((SECONDS - started)) s)"
    done
done
[ "$skipped" -gt 0 ] && echo "$skipped runs skipped: past BUDGET_S=$budget s" | tee -a "$log"
if [ "$device" = cuda ]; then
    { echo "== nvidia-smi"; nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv;
      echo "== nvidia-smi topo -m"; nvidia-smi topo -m; } >> "$log" 2>&1
fi

# The summary: medians a configuration, speed-ups over one GPU, the table.
commit=${NMT_BENCH_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown)}
gpu_name=$( [ "$device" = cuda ] && nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1)
driver=$( [ "$device" = cuda ] && nvidia-smi --query-gpu=driver_version --format=csv,noheader 2> /dev/null | head -1)
python3 - "$jsonl" "$out/multi_gpu.md" "$commit" "${gpu_name:-cpu}" "${driver:-}" "$visible" \
    "$batch" "$precision" "$lines" "$repeat" "${MAXI_BATCH:-}" "$device" \
    "dev/bench/multi_gpu.sh $build $model $out $gpus_arg $batch" << 'PY'
import datetime, json, statistics, sys
(path, md_path, commit, gpu, driver, visible, batch, precision, lines, repeat, maxi, device,
 command) = sys.argv[1:14]
runs = [json.loads(l) for l in open(path) if '"record": "run"' in l]
configs = []
for r in runs:
    if r["config"] not in configs:
        configs.append(r["config"])
def med(rs, key):
    v = [r[key] for r in rs if r.get(key) is not None and r["exit"] == 0]
    return statistics.median(v) if v else None
summary = {}
for c in configs:
    rs = [r for r in runs if r["config"] == c]
    ok = [r for r in rs if r["exit"] == 0]
    s = {"record": "summary", "config": c, "mode": rs[0]["mode"], "gpus": rs[0]["gpus"],
         "runs": len(rs), "ok": len(ok),
         "identical": (False if any(r["identical"] is False for r in rs) else
                       True if rs and all(r["identical"] is True for r in rs) else None),
         "wall_s": med(rs, "wall_s"), "wall_s_runs": [r["wall_s"] for r in rs],
         "wall_lines_per_s": med(rs, "wall_lines_per_s"),
         "pipeline_lines_per_s": med(rs, "pipeline_lines_per_s"),
         "pipeline_estimated": rs[0]["mode"] == "mpi",
         "decode_s": med(rs, "decode_s"), "startup_s": med(rs, "startup_s"),
         "first_output_s": med(rs, "first_output_s")}
    summary[c] = s
base = summary.get(f"{device}x1")
for c, s in summary.items():
    for key in ("wall_lines_per_s", "pipeline_lines_per_s"):  # medians of rates
        b = base.get(key) if base else None
        s[key.replace("_lines_per_s", "_speedup")] = (round(s[key] / b, 3)
                                                      if s[key] and b else None)
    if s["mode"] == "mpi":  # against the in-process run on as many GPUs
        inproc = summary.get(f"{device}x{s['gpus']}")
        if inproc and inproc["wall_lines_per_s"] and s["wall_lines_per_s"]:
            s["wall_vs_in_process"] = round(s["wall_lines_per_s"] / inproc["wall_lines_per_s"], 3)
when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
meta = {"record": "meta", "date": when, "commit": commit, "gpu": gpu, "driver": driver,
        "gpus_visible": int(visible), "lines": int(lines), "beam": 5,
        "batch_size": None if batch == "default" else int(batch),
        "precision": precision, "maxi_batch": int(maxi) if maxi else None, "repeat": int(repeat),
        "device": device, "command": command}
with open(path, "a") as f:
    f.write(json.dumps(meta) + "\n")
    for s in summary.values():
        f.write(json.dumps(s) + "\n")
def fmt(v, spec=",.0f"):
    if v is not None and spec == ",.0f" and v < 100:
        spec = ".2f"
    return "-" if v is None else format(v, spec)
with open(md_path, "w") as md:
    md.write(f"{when}, commit {commit}, {visible} x {gpu}" + (f" (driver {driver})" if driver else "")
             + f"; {int(lines):,} lines (Multi30k train.de repeated), beam 5, batch {batch}, "
             f"{precision}" + (f", maxi-batch {maxi}" if maxi else "") +
             f"; medians of {repeat} runs. `{command}`\n\n")
    md.write("| run | GPUs | wall s (runs) | lines/s, wall | speed-up, wall | lines/s, pipeline "
             "| speed-up, pipeline | decode s (sum) | start-up s | first line s "
             "| MPI / in-process, wall | output = 1 GPU |\n")
    md.write("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
             "| --- |\n")
    for c, s in summary.items():
        name = (f"`--devices` x{s['gpus']}" if s["mode"] == "devices" else f"`mpirun -np {s['gpus']}`")
        runs_s = ", ".join("%.2f" % w for w in s["wall_s_runs"])
        pipe = fmt(s["pipeline_lines_per_s"]) + (" (est.)" if s["pipeline_estimated"] else "")
        ident = {True: "identical", False: "**differs**", None: "-"}[s["identical"]]
        if s["ok"] < s["runs"]:
            ident += f" ({s['runs'] - s['ok']} failed)"
        md.write(f"| {name} | {s['gpus']} | {fmt(s['wall_s'], '.2f')} ({runs_s}) | "
                 f"{fmt(s['wall_lines_per_s'])} | {fmt(s['wall_speedup'], '.2f')}x | {pipe} | "
                 f"{fmt(s['pipeline_speedup'], '.2f')}x | {fmt(s['decode_s'], '.2f')} | "
                 f"{fmt(s['startup_s'], '.2f')} | {fmt(s['first_output_s'], '.2f')} | "
                 f"{fmt(s.get('wall_vs_in_process'), '.3f')} | {ident} |\n")
    md.write("\nwall: the whole process (model load, CUDA start-up, warm-up included); pipeline: "
             "translate --progress's last line, first line read to last written (under mpirun "
             "rank 0's shard rate x ranks, an estimate); decode: --timing's decode_seconds_summed "
             "over the GPUs; start-up and first line: --timing's startup_seconds and "
             "first_output_seconds from the process's start (none under --mpi).\n")
print(open(md_path).read())
PY
if python3 -c 'import matplotlib' 2> /dev/null; then
    python3 "$root/dev/bench/plot_multi_gpu.py" "$jsonl" "$out/multi_gpu.png" ||
        echo "plot failed: make it elsewhere from multi_gpu.jsonl" | tee -a "$log"
else
    echo "no matplotlib: dev/bench/plot_multi_gpu.py $jsonl OUT.png elsewhere" | tee -a "$log"
fi
echo "$((SECONDS - started)) s in all; $failures failed or differing runs"
[ "$failures" -eq 0 ]
