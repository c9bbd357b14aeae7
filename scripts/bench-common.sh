# Shared by the scripts/bench-* benchmarks (sourced, not run).
command -v bc >/dev/null || { echo "bench: needs bc (apt-get install bc)" >&2; exit 1; }

# best_of5 CMD...: the best wall time of five runs of CMD, in seconds.
best_of5() {
    local best=999 start end t
    for _ in 1 2 3 4 5; do
        start=$(date +%s.%N); "$@" >/dev/null; end=$(date +%s.%N)
        t=$(echo "$end - $start" | bc -l)
        best=$(echo "if ($t < $best) $t else $best" | bc -l)
    done
    printf '%.3f' "$best"
}
