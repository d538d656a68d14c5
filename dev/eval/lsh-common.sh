# lsh-common.sh: sourced by lsh-multi30k.sh and lsh-europarl.sh (not run alone).
# The shared steps of an LSH evaluation on the device: the log and the work
# tarball, the CUDA build of translate, the lsh-grid run with its plot and
# summary. The caller sets NAME, OUT, WORK and the grid variables (GRID, TOPS,
# THRESHOLDS, TOP_BASELINE, ...) with its own defaults before calling.

# shellcheck source=dev/carry-env.sh
. dev/carry-env.sh

run() { echo "+ $*"; "$@"; }

# Tees everything into $OUT/$NAME.log and, on exit, packs $WORK/<parts...>
# (hypotheses, --stats files, engine logs; never models) into one tarball.
lsh_begin() {
    export PYTHONPATH=python${PYTHONPATH:+:$PYTHONPATH}
    export PYTHONUNBUFFERED=1
    mkdir -p "$WORK"
    exec > >(tee -a "$OUT/$NAME.log") 2>&1
    LSH_STARTED=$(date +%s)
    LSH_TAR_PARTS=("$@")
    trap lsh_on_exit EXIT
    echo "=== environment"
    "$PYTHON" -c 'import sys, sacrebleu; print("python", sys.version.split()[0], "sacrebleu", sacrebleu.__version__)'
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
}

# shellcheck disable=SC2317  # called by the EXIT trap
lsh_on_exit() {
    local status=$? parts=() d
    for d in "${LSH_TAR_PARTS[@]}"; do [ -e "$WORK/$d" ] && parts+=("$d"); done
    if [ ${#parts[@]} -gt 0 ]; then
        tar -czf "$OUT/$NAME-work.tar.gz" --exclude='*.bin' --exclude='*.pt' --exclude='*.pkl*' \
            -C "$WORK" "${parts[@]}" || true
    fi
    echo "=== $NAME: exit $status after $(( $(date +%s) - LSH_STARTED ))s; files in $OUT:"
    ls -la "$OUT" || true
}

# Sets TRANSLATE: builds $BUILD_DIR/translate (CUDA, sm_90) unless it is set.
lsh_build_engine() {
    if [ -z "${TRANSLATE:-}" ]; then
        BUILD_DIR=${BUILD_DIR:-build-gpu}
        echo "=== build ($BUILD_DIR)"
        use_carried_deps "$PWD"
        run cmake -S . -B "$BUILD_DIR" -DNMT_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
            -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$WORK/configure.log"
        run cmake --build "$BUILD_DIR" --target translate -j "$(nproc)" >"$WORK/build.log" \
            || { tail -40 "$WORK/build.log"; exit 1; }
        TRANSLATE=$BUILD_DIR/translate
    fi
    echo "translate: $TRANSLATE"
}

# lsh_run_grid LABEL MODEL SRC REF: the grid at beams BEAMS within EVAL_BUDGET
# seconds, the plot when matplotlib is there, the summary; exits with the
# grid's status.
lsh_run_grid() {
    local label=$1 model=$2 src=$3 ref=$4 grid_status=0
    echo "=== LSH grid (budget ${EVAL_BUDGET}s)"
    # shellcheck disable=SC2086
    run "$PYTHON" dev/eval/lsh-grid --translate "$TRANSLATE" -m "$model" --label "$label" \
        --src "$src" --ref "$ref" --device "$DEVICE" --beams "$BEAMS" --grid "$GRID" \
        --tops "$TOPS" --thresholds "$THRESHOLDS" --top-baseline "$TOP_BASELINE" \
        --shares "$SHARES" --share-settings "$SHARE_SETTINGS" --batch-size "$BATCH_SIZE" \
        --speed-batch "$SPEED_BATCH" --speed-lines "$SPEED_LINES" --repeats "$REPEATS" \
        --quality-lines "$QUALITY_LINES" --time-budget "$EVAL_BUDGET" --run-timeout 300 \
        --work "$WORK/lsh" --json "$OUT/$NAME.json" --markdown "$OUT/$NAME.md" \
        ${GRID_ARGS:-} || grid_status=$?
    if "$PYTHON" -c 'import matplotlib' 2>/dev/null; then
        run "$PYTHON" dev/eval/plot-lsh "$OUT/$NAME.json" -o "$OUT/$NAME.png" || true
    else
        echo "matplotlib not importable here: plot later with dev/eval/plot-lsh $NAME.json"
    fi
    echo "=== summary"
    sed -n '/^## Summary/,/^## Results/p' "$OUT/$NAME.md" || true
    exit "$grid_status"
}
