# Included after every project() of llama.cpp's build (CMAKE_PROJECT_INCLUDE,
# set in .cargo/config.toml; llama-cpp-sys-2 passes CMAKE_* variables on).
# mtmd's video support hands any buffer its image loader (stb_image) cannot
# read to ffprobe and ffmpeg found on PATH: a corrupt image in a benchmark
# file would start another program on its bytes. mcscore reads images only.
set(MTMD_VIDEO OFF CACHE BOOL "mcscore: mtmd decodes images with stb_image only" FORCE)
