#!/usr/bin/env bash
# gpu-check.sh: the GPU gate, meant for one H100 in under ~8 minutes:
#   1. configure and build for sm_90 into build-gpu
#   2. ctest -L gpu, then test_gpu_stream while a second process runs
#      test_gpu_translate on the same GPU (NMT_GPU_CHECK_LOAD_RUNS times,
#      default 6; 0 or NMT_GPU_CHECK_SKIP_CTEST=1: skip): timing-dependent
#      search bugs showed there only; then test_invariance on CUDA at every
#      precision (batch invariance, bit for bit)
#   3. compute-sanitizer memcheck and racecheck on the GPU test programs
#      (NMT_TEST_SMALL=1: the small shapes)
#   4. the benches (JSON lines into bench/), bench_torch.py, summarize.py
#      into bench/summary.md
#   5. end-to-end speed (dev/eval/speed, ~100 s): the CUDA engine
#      vs the PyTorch reference decoder, beam 5, batch 1 and 64, on
#      models/multi30k-de-en.bin over multi30k test_2016_flickr.de (all
#      1,000 lines; NMT_SPEED_LINES=N for the first N)
#   6. a short summary table, last.
# The device returns at most 8 files from $OUT: every log, JSON and table
# goes into ONE tarball, ${OUT:-out}/gpu-check.tar.gz (built on exit, even a
# failed one), plus ${OUT:-out}/summary.md.
# Knobs: NMT_BENCH_REPEATS (20), NMT_BENCH_ROWS / _VOCABS / _KS / _NS,
# NMT_BENCH_REDUCE_LOG2 (26), NMT_BENCH_LSH_* (bench_lsh.cu's header; ~60 s),
# NMT_GPU_CHECK_SKIP_BENCH=1, NMT_GPU_CHECK_SKIP_SANITIZER=1, NMT_GPU_CHECK_SKIP_CTEST=1,
# NMT_GPU_CHECK_LOAD_RUNS (6), NMT_GPU_CHECK_SKIP_INVARIANCE=1,
# NMT_GPU_CHECK_INVARIANCE_JOBS (1: the invariance runs one at a time),
# NMT_GPU_CHECK_SANITIZER_JOBS (4 at a time), NMT_GPU_CHECK_SANITIZE (programs),
# NMT_GPU_CHECK_JOBS (build parallelism), NMT_PYTHON (python with torch).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
dest="${OUT:-out}"
mkdir -p "$dest"
out="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")" # staged here, packed on exit
bench_dir="$out/bench"
pack() {
    tar -czf "$dest/gpu-check.tar.gz" -C "$out" . 2>/dev/null || echo "gpu-check: packing $out failed"
    [[ -f "$bench_dir/summary.md" ]] && cp "$bench_dir/summary.md" "$dest/summary.md" || true
}
trap pack EXIT
# Stopped from outside (a `timeout` around the gate): the sanitizer runs go
# too; left running, they load the GPU and skew whatever the caller measures
# next. Each run's `timeout` is its own process group, which a signal to the
# gate's group misses, so each writes its pid (sanitizer-*.pid).
stop_children() {
    local f
    for f in "$out"/sanitizer-*.pid; do
        [[ -f $f ]] && kill -TERM "$(cat "$f")" 2>/dev/null
    done
    pkill -TERM -f "$build/test_invariance" 2>/dev/null # runs side by side
    exit 143
}
trap stop_children TERM INT
build=build-gpu
jobs="${NMT_GPU_CHECK_JOBS:-$(nproc)}"
python="${NMT_PYTHON:-python3}"
mkdir -p "$bench_dir"
# The device image lacks libinih and libutf8proc (docs/performance.md, "Reproducing").
# shellcheck source=dev/carry-env.sh
. "$root/dev/carry-env.sh"
use_carried_deps "$root"
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }

build_status=ok
tests_summary="not run"
load_summary="not run"
invariance_summary="not run"
memcheck_errors="not run"
racecheck_errors="not run"
bench_status="not run"
speed_status="not run"

# --- 1. build ----------------------------------------------------------------
echo "== build ($build, sm_90)"
if ! { cmake -S . -B "$build" -DNMT_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
         -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$out/configure.log" 2>&1 &&
       timeout 300 cmake --build "$build" -j "$jobs" >"$out/build.log" 2>&1; }; then
    build_status=FAILED
    tail -40 "$out/build.log" "$out/configure.log" 2>/dev/null || true
fi
echo "   build: $build_status ($(elapsed)s)"

if [[ $build_status == ok ]]; then
    # --- 2. tests ------------------------------------------------------------
    if [[ "${NMT_GPU_CHECK_SKIP_CTEST:-0}" != 1 ]]; then
        echo "== ctest -L gpu"
        ( cd "$build" && timeout 360 ctest -L gpu -j 4 --output-on-failure --timeout 120 ) \
            >"$out/ctest-gpu.log" 2>&1 || true
        tail -25 "$out/ctest-gpu.log"
        passed=$(grep -cE 'Test +#[0-9]+: .* Passed' "$out/ctest-gpu.log" || true)
        failed=$(grep -cE 'Test +#[0-9]+: .*\*\*\*(Failed|Timeout|Exception)' "$out/ctest-gpu.log" || true)
        skipped=$(grep -cE 'Test +#[0-9]+: .*Skipped' "$out/ctest-gpu.log" || true)
        tests_summary="passed $passed, failed $failed, skipped $skipped"
        echo "   tests: $tests_summary ($(elapsed)s)"
    fi
    # The stream against whole batches (and the batch against itself) with
    # another process on the GPU: a kernel writing host memory before the
    # steps passed ctest alone and failed here in 3 runs of 4
    # (docs/perf/steps.md, "Done flags in mapped host memory").
    load_runs="${NMT_GPU_CHECK_LOAD_RUNS:-6}"
    if (( load_runs > 0 )) && [[ "${NMT_GPU_CHECK_SKIP_CTEST:-0}" != 1 &&
                                  -x "$build/test_gpu_stream" && -x "$build/test_gpu_translate" ]]; then
        echo "== test_gpu_stream beside a second GPU process ($load_runs runs)"
        load_passed=0
        load_skipped=0
        for ((i = 1; i <= load_runs; i++)); do
            ( cd "$build" && for _ in 1 2 3; do timeout 120 ./test_gpu_translate >/dev/null 2>&1 || true; done ) &
            loader=$!
            rc=0
            ( cd "$build" && timeout 180 ./test_gpu_stream ) >"$out/stream-under-load-$i.log" 2>&1 || rc=$?
            kill "$loader" 2>/dev/null || true
            wait "$loader" 2>/dev/null || true
            case $rc in
                0) load_passed=$((load_passed + 1)) ;;
                77) load_skipped=$((load_skipped + 1)) ;;
                *) echo "   run $i: rc $rc, $(grep -c 'check failed' "$out/stream-under-load-$i.log" || true) failed checks" ;;
            esac
        done
        load_summary="passed $load_passed of $load_runs"
        (( load_skipped > 0 )) && load_summary="$load_summary ($load_skipped skipped: no GPU)"
        echo "   stream under load: $load_summary ($(elapsed)s)"
    fi

    # Batch invariance (docs/decoding.md, "Batch invariance"): test_invariance
    # on CUDA at every precision, on the test model and on the shipped model
    # over 200 lines of test_2016_flickr (NMT_GPU_CHECK_SKIP_INVARIANCE=1: skip).
    if [[ "${NMT_GPU_CHECK_SKIP_INVARIANCE:-0}" != 1 && -x "$build/test_invariance" ]]; then
        echo "== test_invariance (CUDA; fp32, bf16, fp16, fp16 fused; test and shipped model)"
        inv_passed=0
        inv_runs=0
        inv_failed=""
        inv_jobs="${NMT_GPU_CHECK_INVARIANCE_JOBS:-1}"
        inv_names=()
        for variant in fp32 bf16 fp16 fp16-fused; do
            precision=${variant%-fused}
            for which in test shipped; do
                inv_args=(--device cuda --precision "$precision")
                [[ $variant == *-fused ]] && inv_args+=(--fused-output on)
                [[ $which == shipped ]] && inv_args+=(--model models/multi30k-de-en.bin
                    --input tests/data/golden/test_2016_flickr.200.de --lines 200)
                log="$out/invariance-$variant-$which.log"
                # Each run's exit status into its own file: the runs may go
                # side by side (NMT_GPU_CHECK_INVARIANCE_JOBS at a time).
                ( rc=0; timeout 300 "$build/test_invariance" "${inv_args[@]}" >"$log" 2>&1 || rc=$?
                  echo "$rc" >"$log.rc" ) &
                inv_names+=("$variant/$which")
                while (( $(jobs -rp | wc -l) >= inv_jobs )); do wait -n || true; done
            done
        done
        wait
        for name in "${inv_names[@]}"; do
            log="$out/invariance-${name%/*}-${name#*/}.log"
            rc=$(cat "$log.rc" 2>/dev/null || echo lost)
            inv_runs=$((inv_runs + 1))
            case $rc in
                0) inv_passed=$((inv_passed + 1)) ;;
                77) inv_failed="$inv_failed $name:skipped" ;;
                *) inv_failed="$inv_failed $name:rc$rc"
                   grep -E 'check failed|not exercised' "$log" | head -5 || true ;;
            esac
        done
        invariance_summary="passed $inv_passed of $inv_runs${inv_failed:+ (not:$inv_failed)}"
        echo "   invariance: $invariance_summary ($(elapsed)s)"
        # translate end to end: the lines that differ from batch 1 in any byte
        # at the other batchings of dev/bench/invariance.sh (0 expected).
        if timeout 300 dev/bench/invariance.sh "$build/translate" models/multi30k-de-en.bin \
                tests/data/golden/test_2016_flickr.200.de "$out/invariance-cli" fp16,fp32 \
                >"$out/invariance-cli.txt" 2>&1; then
            cli_differ=$(awk 'NR > 1 && $4 != "-" { d += $5 } END { print d + 0 }' \
                "$out/invariance-cli.txt")
            invariance_summary="$invariance_summary; translate: $cli_differ lines differ"
        else
            invariance_summary="$invariance_summary; translate: FAILED"
        fi
    fi

    # --- 3. sanitizers -------------------------------------------------------
    # NMT_GPU_CHECK_SANITIZE: the test programs to run them on (names, space
    # separated; default every test_gpu_*): memcheck and racecheck of all
    # 18 take longer than one 10-minute device call (2026-11-24), so the
    # gate can be split over calls.
    sanitize_this() {
        [[ -z "${NMT_GPU_CHECK_SANITIZE:-}" ]] && return 0
        [[ " $NMT_GPU_CHECK_SANITIZE " == *" $(basename "$1") "* ]]
    }
    if [[ "${NMT_GPU_CHECK_SKIP_SANITIZER:-0}" != 1 ]] && command -v compute-sanitizer >/dev/null; then
        memcheck_errors=0
        racecheck_errors=0
        # Every (program, tool) pair as its own process, N at a time on the one
        # GPU (NMT_GPU_CHECK_SANITIZER_JOBS, default 4): ~400 s one by one.
        running=0
        for prog in "$build"/test_gpu_*; do
            [[ -x $prog ]] && sanitize_this "$prog" || continue
            for tool in memcheck racecheck; do
                log="$out/sanitizer-$tool-$(basename "$prog").log"
                ( rc=0
                  NMT_TEST_SMALL=1 timeout 240 compute-sanitizer --tool "$tool" --error-exitcode 99 \
                      "$prog" >"$log" 2>&1 &
                  echo $! >"${log%.log}.pid"
                  wait $! || rc=$?
                  echo "$rc" >"$log.rc" ) &
                running=$((running + 1))
                if (( running >= ${NMT_GPU_CHECK_SANITIZER_JOBS:-4} )); then
                    wait -n || true
                    running=$((running - 1))
                fi
            done
        done
        wait || true
        for prog in "$build"/test_gpu_*; do
            [[ -x $prog ]] && sanitize_this "$prog" || continue
            name=$(basename "$prog")
            for tool in memcheck racecheck; do
                log="$out/sanitizer-$tool-$name.log"
                rc=$(cat "$log.rc" 2>/dev/null || echo missing)
                n=$(grep -oE 'ERROR SUMMARY: [0-9]+' "$log" | grep -oE '[0-9]+' | tail -1 || true)
                n=${n:-0}
                if [[ $rc == 124 ]]; then n="$n+timeout"; fi
                if [[ $rc != 0 && $rc != 77 && $n == 0 ]]; then n="rc=$rc"; fi
                echo "   $tool $name: errors $n"
                if [[ $tool == memcheck ]]; then memcheck_errors="$memcheck_errors+$n"; else racecheck_errors="$racecheck_errors+$n"; fi
            done
        done
        memcheck_errors=$(echo "$memcheck_errors" | sed 's/^0+//')
        racecheck_errors=$(echo "$racecheck_errors" | sed 's/^0+//')
        echo "   sanitizers done ($(elapsed)s)"
    fi

    # --- 4. benches ----------------------------------------------------------
    if [[ "${NMT_GPU_CHECK_SKIP_BENCH:-0}" != 1 ]]; then
        bench_status=ok
        default_benches="bench_softmax_topk bench_nhot bench_reduce bench_lsh bench_skinny bench_attention bench_gemm_algos"
        for b in ${NMT_GPU_CHECK_BENCHES:-$default_benches}; do
            [[ -x "$build/$b" ]] || continue
            echo "== $b"
            timeout 150 "$build/$b" >"$bench_dir/$b.jsonl" 2>"$bench_dir/$b.txt" || bench_status="$b failed"
            cat "$bench_dir/$b.txt"
        done
        # The GEMMs' rows against the row count (docs/service.md, "Determinism").
        if [[ -x "$build/bench_gemm_algos" && " ${NMT_GPU_CHECK_BENCHES:-$default_benches} " == *" bench_gemm_algos "* ]]; then
            echo "== bench_gemm_algos --invariance"
            timeout 150 "$build/bench_gemm_algos" --graph --rows 5120 --types fp16,fp32 \
                --invariance 1,2,3,5,8,16,64,320,1024,5120 >"$bench_dir/bench_gemm_invariance.jsonl" \
                2>"$bench_dir/bench_gemm_invariance.txt" || bench_status="$bench_status; gemm invariance failed"
            grep -E "against each other" "$bench_dir/bench_gemm_invariance.txt" || true
        fi
        if [[ "${NMT_GPU_CHECK_SKIP_TORCH:-0}" != 1 ]]; then
            echo "== bench_torch.py"
            timeout 150 "$python" dev/bench/bench_torch.py >"$bench_dir/bench_torch.jsonl" \
                2>"$bench_dir/bench_torch.txt" || bench_status="$bench_status; torch failed"
            tail -3 "$bench_dir/bench_torch.txt" || true
        fi
        if ! "$python" dev/bench/summarize.py "$bench_dir"/*.jsonl >"$bench_dir/summary.md" \
                2>"$bench_dir/summarize.err"; then
            bench_status="$bench_status; TARGET DATA MISSING (see below)"
        fi
        cat "$bench_dir/summarize.err"
        echo "   benches: $bench_status ($(elapsed)s)"

        # --- 5. end-to-end speed --------------------------------------------
        model=models/multi30k-de-en.bin
        src=.carry/data/multi30k/test_2016_flickr.de.gz
        if [[ "${NMT_GPU_CHECK_SKIP_SPEED:-0}" == 1 ]]; then
            speed_status="skipped (NMT_GPU_CHECK_SKIP_SPEED=1)"
        elif [[ -f $model && -f $src && -x "$build/translate" ]]; then
            echo "== dev/eval/speed (engine cuda vs PyTorch reference, beam 5, batch 1 and 64)"
            speed_status=ok
            # The whole test set (1,000 lines): the reference at batch 1 takes ~25 s a run.
            # Both in fp32 (translate's own default, auto, is fp16 for this model file).
            timeout 280 "$python" dev/eval/speed -m "$model" --src "$src" --lines "${NMT_SPEED_LINES:-0}" \
                --beams 5 --batch-sizes 1,64 --repeat 3 --latency-lines 150 --device cuda \
                --translate "$build/translate" --engine-option=--precision=fp32 \
                --reference --json "$bench_dir/speed.json" \
                >"$bench_dir/speed.txt" 2>"$bench_dir/speed.err" || speed_status="failed rc=$?"
            tail -5 "$bench_dir/speed.err"
            # Launch modes (docs/perf/steps.md): CUDA graphs on/off x done-flag
            # check interval, batch 1 and 64, whole test set, in one process
            # per setting: pass 1 after warm-up, then 2 more; the last two count.
            if [[ -x "$build/bench_passes" ]]; then
                zcat "$src" >"$out/test.de"
                : >"$bench_dir/launch-modes.txt"
                for bs in 1 64; do
                    settings="1:1:fp32 1:0:fp32 4:1:fp32"
                    [[ $bs == 64 ]] && settings="$settings 1:1:tf32x2"
                    for s in $settings; do
                        IFS=: read -r check graphs precision <<<"$s"
                        line=$(timeout 60 "$build/bench_passes" "$model" "$out/test.de" $bs 5 3 cuda \
                            graphs=$graphs check=$check precision=$precision 2>&1 | grep -oE 'total [0-9.]+' | \
                            awk '{print $2}' | tr '\n' ' ')
                        printf 'batch %-3s check %s graphs %s precision %-6s  passes ms: %s\n' $bs $check \
                            $graphs $precision "$line" | tee -a "$bench_dir/launch-modes.txt"
                    done
                done
            fi
            # The tf32x2 GEMMs (--precision): the engine alone at batch 64.
            timeout 120 "$python" dev/eval/speed -m "$model" --src "$src" --lines "${NMT_SPEED_LINES:-0}" \
                --beams 5 --batch-sizes 64 --repeat 3 --latency-lines 0 --device cuda \
                --engine-option=--precision=tf32x2 --engine-option=--batch-invariant=off \
                --translate "$build/translate" \
                --json "$bench_dir/speed-tf32x2.json" >"$bench_dir/speed-tf32x2.txt" \
                2>>"$bench_dir/speed.err" || speed_status="$speed_status; tf32x2 speed failed"
            # The whole test set through the CUDA engine at beams 1 and 5 with
            # scores, for the GPU-vs-CPU agreement (dev/eval/agreement.py) and
            # BLEU, with fp32 and with tf32x2 GEMMs.
            for gemm in fp32 tf32x2; do
                for beam in 1 5; do
                    tag=$([[ $gemm == fp32 ]] && echo "" || echo ".$gemm")
                    zcat "$src" | timeout 60 "$build/translate" -m "$model" --device cuda --beam $beam \
                        --batch-size 64 --precision $gemm --scores \
                        >"$bench_dir/gpu.test.beam$beam$tag.tsv" 2>>"$bench_dir/speed.err" ||
                        speed_status="$speed_status; test-set translation beam $beam $gemm failed"
                    cut -f2 "$bench_dir/gpu.test.beam$beam$tag.tsv" >"$bench_dir/gpu.test.beam$beam$tag.en"
                    echo "   BLEU CUDA engine beam $beam $gemm: $("$python" -m sacrebleu -b \
                        <(zcat "${src%.de.gz}.en.gz") -i "$bench_dir/gpu.test.beam$beam$tag.en" 2>/dev/null)"
                done
            done
        else
            speed_status="skipped: missing $model, $src or $build/translate"
        fi
        echo "   speed: $speed_status ($(elapsed)s)"
    fi
fi

# --- 6. summary --------------------------------------------------------------
if [[ -s "$bench_dir/launch-modes.txt" ]]; then
    echo "== launch modes (bench_passes, 1,000 lines, beam 5; passes 2-3 are warm)"
    cat "$bench_dir/launch-modes.txt"
fi
if [[ -s "$bench_dir/speed.txt" ]]; then
    echo
    echo "== end-to-end speed (dev/eval/speed)"
    cat "$bench_dir/speed.txt"
    [[ -s "$bench_dir/speed-tf32x2.txt" ]] && { echo "-- with --precision tf32x2:"; head -3 "$bench_dir/speed-tf32x2.txt"; }
fi
echo
echo "================ gpu-check summary ($(elapsed)s) ================"
printf '%-28s %s\n' "build" "$build_status"
printf '%-28s %s\n' "ctest -L gpu" "$tests_summary"
printf '%-28s %s\n' "stream under load" "$load_summary"
printf '%-28s %s\n' "batch invariance" "$invariance_summary"
printf '%-28s %s\n' "memcheck errors" "$memcheck_errors"
printf '%-28s %s\n' "racecheck errors" "$racecheck_errors"
printf '%-28s %s\n' "benches" "$bench_status"
printf '%-28s %s\n' "end-to-end speed" "$speed_status"
if [[ -f "$bench_dir/summary.md" ]]; then
    grep -E '^ *TARGET' "$bench_dir/summary.md" | sed 's/^ *TARGET /target: /' || true
    echo "(tables: summary.md; everything: gpu-check.tar.gz)"
fi
