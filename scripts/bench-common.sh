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

# reference_tools [own]: builds (once, cached) llama-perplexity and
# llama-bench for this CPU (GGML_NATIVE=ON) and sets reference_bin (the folder
# holding both) and reference_build (a line saying which build). By default
# from the llama.cpp that llama-cpp-python 0.3.36 vendors on PyPI, the commit
# the reference outputs in ../shared/reference were made with; with `own`,
# from the llama.cpp that mcscore links (llama-cpp-sys-2's copy, which leaves
# the tools' sources out: theirs are taken from that same PyPI package), so
# that a comparison separates mcscore from its llama.cpp's version. On CPUs
# with AMX, ggml's native build dies with SIGILL in its AMX kernels
# (tilezero: most likely the GCC 12 tile-configuration bug that
# .cargo/config.toml works around for mcscore with -fno-dse), so there the
# tools are built without AMX (-mno-amx-*), keeping their other native
# kernels, as the reference outputs were made.
reference_tools() {
    local root pypi own src variant flags="" version
    root="${MCSCORE_CACHE_DIR:-$HOME/.cache/mcscore}/bench"
    pypi="$root/llama-cpp-python-0.3.36"
    variant=native
    if grep -qw amx_tile /proc/cpuinfo 2>/dev/null; then
        variant=native-no-amx
        flags="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    fi
    mkdir -p "$pypi"
    if [[ ! -f "$pypi/llama_cpp_python-0.3.36.tar.gz" ]]; then
        python3 -m pip download --quiet --no-deps --no-binary :all: --dest "$pypi" llama-cpp-python==0.3.36 >&2
    fi
    if [[ ! -d "$pypi/llama_cpp_python-0.3.36/vendor/llama.cpp/src" ]]; then
        tar -xzf "$pypi/llama_cpp_python-0.3.36.tar.gz" -C "$pypi"
    fi
    if [[ ${1:-} == own ]]; then
        read -r version src < <(cargo metadata --format-version 1 --locked 2>/dev/null | python3 -c '
import json, os, sys
p = next(p for p in json.load(sys.stdin)["packages"] if p["name"] == "llama-cpp-sys-2")
print(p["version"], os.path.join(os.path.dirname(p["manifest_path"]), "llama.cpp"))' 2>/dev/null) || true
        [[ -n ${src:-} && -d $src/ggml ]] || {
            echo "bench: llama-cpp-sys-2's llama.cpp not found (cargo metadata --locked names none with a ggml folder; run cargo fetch first)" >&2
            exit 1
        }
        own="$root/llama-cpp-sys-2-$version"
        reference_bin="$own/build-$variant/bin"
        reference_build="mcscore's own llama.cpp (llama-cpp-sys-2 $version; the tools' sources from llama-cpp-python 0.3.36), GGML_NATIVE=ON${flags:+ with $flags}"
        # Put together under another name and renamed whole, so that an
        # interrupted copy is never taken for a finished one.
        if [[ ! -d "$own/src" ]]; then
            rm -rf "$own/src.part"
            mkdir -p "$own"
            cp -r "$src" "$own/src.part"
            for tool in llama-bench perplexity; do
                cp "$pypi/llama_cpp_python-0.3.36/vendor/llama.cpp/tools/$tool/"* "$own/src.part/tools/$tool/"
            done
            printf 'llama_add_compile_flags()\nadd_subdirectory(llama-bench)\nadd_subdirectory(perplexity)\n' >"$own/src.part/tools/CMakeLists.txt"
            mv "$own/src.part" "$own/src"
        fi
        src="$own/src"
    else
        src="$pypi/llama_cpp_python-0.3.36/vendor/llama.cpp"
        reference_bin="$pypi/build-$variant/bin"
        reference_build="llama.cpp of llama-cpp-python 0.3.36, GGML_NATIVE=ON${flags:+ with $flags}"
    fi
    [[ -n $flags ]] && reference_build+=" (this CPU has AMX, whose native kernels die with SIGILL)"
    if [[ -x "$reference_bin/llama-perplexity" && -x "$reference_bin/llama-bench" ]]; then
        return
    fi
    echo "bench: building llama-perplexity and llama-bench ($reference_build), once; several minutes" >&2
    cmake -S "$src" -B "${reference_bin%/bin}" -DCMAKE_BUILD_TYPE=Release \
        -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
        -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_APP=OFF -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" >&2
    cmake --build "${reference_bin%/bin}" --target llama-perplexity llama-bench -j "$(nproc)" >&2
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

# pp512 MODEL THREADS [BIN]: llama-bench's prompt-processing rate (tokens/s)
# of MODEL, llama-bench from BIN (default: $reference_bin).
pp512() {
    "${3:-$reference_bin}/llama-bench" -m "$1" -p 512 -n 0 -t "$2" -o json 2>/dev/null |
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
