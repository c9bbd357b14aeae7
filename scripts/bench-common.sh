# Shared by the scripts/bench-* benchmarks (sourced, not run).
command -v bc >/dev/null || { echo "bench: needs bc (apt-get install bc)" >&2; exit 1; }

# best_of5 CMD...: the best wall time of five runs of CMD, in seconds.
best_of5() {
    local best=999 start end t
    for _ in 1 2 3 4 5; do
        start=$(date +%s.%N)
        "$@" >/dev/null || { echo "bench: FAILED: $*" >&2; exit 1; }
        end=$(date +%s.%N)
        t=$(echo "$end - $start" | bc -l)
        best=$(echo "if ($t < $best) $t else $best" | bc -l)
    done
    printf '%.3f' "$best"
}

# reference_tools: builds (once, cached) llama-perplexity and llama-bench from
# the llama.cpp that llama-cpp-python 0.3.36 vendors on PyPI, the commit the
# reference outputs in ../shared/reference were made with, for this CPU
# (GGML_NATIVE=ON). On CPUs with AMX, ggml's native build dies with SIGILL in
# its AMX kernels (tilezero: most likely the GCC 12 tile-configuration bug
# that .cargo/config.toml works around for mcscore with -fno-dse), so there
# the reference is built without AMX (-mno-amx-*), keeping its other native
# kernels, as the reference outputs were made. Sets reference_bin (the
# folder holding both tools) and reference_build (a line saying which build).
reference_tools() {
    local cache variant flags=""
    cache="${MCSCORE_CACHE_DIR:-$HOME/.cache/mcscore}/bench/llama-cpp-python-0.3.36"
    variant=native
    if grep -qw amx_tile /proc/cpuinfo 2>/dev/null; then
        variant=native-no-amx
        flags="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    fi
    reference_bin="$cache/build-$variant/bin"
    reference_build="llama.cpp of llama-cpp-python 0.3.36, GGML_NATIVE=ON${flags:+ with $flags (this CPU has AMX, whose native kernels die with SIGILL)}"
    if [[ -x "$reference_bin/llama-perplexity" && -x "$reference_bin/llama-bench" ]]; then
        return
    fi
    echo "bench: building llama-perplexity and llama-bench ($reference_build), once; several minutes" >&2
    mkdir -p "$cache"
    if [[ ! -f "$cache/llama_cpp_python-0.3.36.tar.gz" ]]; then
        python3 -m pip download --quiet --no-deps --no-binary :all: --dest "$cache" llama-cpp-python==0.3.36 >&2
    fi
    if [[ ! -d "$cache/llama_cpp_python-0.3.36/vendor/llama.cpp/src" ]]; then
        tar -xzf "$cache/llama_cpp_python-0.3.36.tar.gz" -C "$cache"
    fi
    cmake -S "$cache/llama_cpp_python-0.3.36/vendor/llama.cpp" -B "$cache/build-$variant" -DCMAKE_BUILD_TYPE=Release \
        -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
        -DLLAMA_BUILD_TOOLS=ON -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" >&2
    cmake --build "$cache/build-$variant" --target llama-perplexity llama-bench -j "$(nproc)" >&2
}

# mcscore_uses_amx: "yes" when mcscore's binary holds ggml's AMX kernels (its
# llama.cpp is built for the host CPU, so on CPUs with AMX it does; the
# reference above is built without them there).
mcscore_uses_amx() {
    if grep -aq ggml_backend_amx_mul_mat target/release/mcscore; then echo yes; else echo no; fi
}

# measure CMD...: prints "wall_seconds peak_kb" of a command, its output discarded.
measure() {
    local times
    times=$(mktemp)
    /usr/bin/time -f "%e %M" -o "$times" "$@" >/dev/null 2>&1 || { echo "bench: failed: $*" >&2; rm -f "$times"; return 1; }
    cat "$times"
    rm -f "$times"
}

# pp512 MODEL THREADS: llama-bench's prompt-processing rate (tokens/s) of MODEL.
pp512() {
    "$reference_bin/llama-bench" -m "$1" -p 512 -n 0 -t "$2" -o json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["avg_ts"])'
}

# peer_server: installs (once, cached) llama-cpp-python 0.3.36's OpenAI server
# from its PyPI source package, built like the reference tools (native, without
# AMX where the CPU has it). Sets peer_path (for PYTHONPATH).
peer_server() {
    local cache flags=""
    cache="${MCSCORE_CACHE_DIR:-$HOME/.cache/mcscore}/bench/llama-cpp-python-0.3.36"
    peer_path="$cache/python-server"
    if PYTHONPATH=$peer_path python3 -c "import llama_cpp.server" 2>/dev/null; then
        return
    fi
    grep -qw amx_tile /proc/cpuinfo 2>/dev/null && flags="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    echo "bench: building llama-cpp-python[server] 0.3.36 into $peer_path, once; several minutes" >&2
    mkdir -p "$cache"
    [[ -f "$cache/llama_cpp_python-0.3.36.tar.gz" ]] \
        || python3 -m pip download --quiet --no-deps --no-binary :all: --dest "$cache" llama-cpp-python==0.3.36 >&2
    CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_CURL=OFF \"-DCMAKE_C_FLAGS=$flags\" \"-DCMAKE_CXX_FLAGS=$flags\"" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
        python3 -m pip install --quiet --disable-pip-version-check --target "$peer_path" \
        "llama_cpp_python[server] @ file://$cache/llama_cpp_python-0.3.36.tar.gz" >&2
}
