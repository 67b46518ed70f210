#!/usr/bin/env bash
# Run memcgsim's fuzz targets (fuzz/fuzz_targets/) for a fixed number of inputs each, one
# after the other on one core, and print per target the inputs run, the time, exec/s and the
# crashes (panics, timeouts, out-of-memory) found. See docs/TESTING.md.
#
#   scripts/fuzz.sh [RUNS] [TARGET...]     RUNS inputs per target (default 1000000); all
#                                          targets unless named
#   scripts/fuzz.sh --merge [TARGET...]    fold what the runs found into fuzz/corpus/TARGET
#                                          (only inputs that add coverage), then minimise it
#                                          to the fewest inputs that cover the same edges
#
# Needs a nightly toolchain and cargo-fuzz (`rustup toolchain install nightly`,
# `cargo install cargo-fuzz`). FUZZ_MAX_TIME=SECONDS also stops each target after that many
# seconds. Each target starts from its checked-in corpus (fuzz/corpus/TARGET, read only) and
# keeps what it finds in fuzz/target/corpus/TARGET; a crashing input is written to
# fuzz/artifacts/TARGET/ and stops that target (the others still run). Exit status: 1 if any
# target crashed, else 0.
set -euo pipefail

cd "$(dirname "$0")/../fuzz"
TARGETS=(script_parse script_run cgroupfs_ops scenario_toml trace_read)

# The largest input each target is given, in bytes.
max_len() {
    case "$1" in
        script_run) echo 4096 ;;
        cgroupfs_ops) echo 2048 ;;
        *) echo 8192 ;;
    esac
}

fuzz() {
    # -s none: the crates are safe Rust, so no sanitizer (several times faster); panics,
    # overflow checks and debug assertions still crash.
    cargo +nightly fuzz run -s none "$@"
}

if [[ "${1:-}" == "--merge" ]]; then
    shift
    (($# > 0)) || set -- "${TARGETS[@]}"
    for t in "$@"; do
        mkdir -p "corpus/$t" "target/corpus/$t"
        fuzz "$t" "corpus/$t" "target/corpus/$t" -- -merge=1 -max_len="$(max_len "$t")"
        # Edges only (no hit counts): the smallest set that covers what the corpus covers.
        cargo +nightly fuzz cmin -s none "$t" "corpus/$t" -- -max_len="$(max_len "$t")" -use_counters=0
    done
    exit 0
fi

RUNS=1000000
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
    RUNS=$1
    shift
fi
(($# > 0)) || set -- "${TARGETS[@]}"
for t in "$@"; do
    [[ " ${TARGETS[*]} " == *" $t "* ]] || { echo "fuzz.sh: no target '$t' (${TARGETS[*]})" >&2; exit 2; }
done

cargo +nightly fuzz build -s none "$@"
mkdir -p target/logs
summary=()
status=0
for t in "$@"; do
    mkdir -p "target/corpus/$t" "corpus/$t" "artifacts/$t"
    log="target/logs/$t.log"
    marker="target/logs/$t.start"
    touch "$marker"
    extra=()
    [[ -n "${FUZZ_MAX_TIME:-}" ]] && extra+=(-max_total_time="$FUZZ_MAX_TIME")
    echo "fuzz.sh: $t: $RUNS inputs (log: fuzz/$log)" >&2
    start=$(date +%s)
    fuzz "$t" "target/corpus/$t" "corpus/$t" -- \
        -runs="$RUNS" -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 "${extra[@]}" >"$log" 2>&1 || true
    secs=$(($(date +%s) - start))
    crashes=$(find "artifacts/$t" -type f -newer "$marker" | wc -l)
    # libFuzzer's own count: "stat::number_of_executed_units: N".
    inputs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    if [[ -z "$inputs" ]]; then
        # It stopped on a crash before printing its stats: the last status line.
        inputs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
    fi
    inputs=${inputs:-0}
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    summary+=("$(printf '%-14s %12s %8s %8s %8s' "$t" "$inputs" "$secs" "${rate:--}" "$crashes")")
    if ((crashes > 0)); then
        status=1
        find "artifacts/$t" -type f -newer "$marker" | sed 's/^/fuzz.sh: crash: fuzz\//' >&2
    fi
done
printf '%-14s %12s %8s %8s %8s\n' target inputs seconds exec/s crashes
printf '%s\n' "${summary[@]}"
exit $status
