#!/bin/sh
# Builds ncnn (static, CPU only, runtime ISA dispatch) with only the layers bench/ncnn/ncnn_peer.cpp
# needs, then the harness against it: the ncnn peer of bench/compare_torch.py (--peers ncnn).
#
#     bench/ncnn/build.sh [NCNN_SRC] [BUILD_DIR]      (defaults /work/ncnn, bench/ncnn/build)
#
# JOBS (default 2) and NICE (default 19) limit how much of the machine the compile takes.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=${1:-/work/ncnn}
BUILD=${2:-$HERE/build}
JOBS=${JOBS:-2}
NICE=${NICE:-19}

if [ ! -f "$SRC/src/CMakeLists.txt" ]; then
    echo "build.sh: $SRC is not an ncnn checkout (no src/CMakeLists.txt)" >&2
    exit 1
fi
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)

# The layers the harness creates, and the ones they create inside (Padding for the convolutions'
# borders, Packing for convert_packing, Flatten inside InnerProduct, Gemm inside DeformableConv2D's
# sgemm path, ReLU and Sigmoid as fused activations). Every other layer is left out of the build.
KEEP="convolution gridsample deformableconv2d pooling innerproduct binaryop
      padding packing flatten gemm relu sigmoid"

LAYERS=$(sed -n 's/^ncnn_add_layer(\([A-Za-z0-9_]*\).*/\1/p' "$SRC/src/CMakeLists.txt" |
         tr '[:upper:]' '[:lower:]')
if [ -z "$LAYERS" ]; then
    echo "build.sh: no ncnn_add_layer(...) lines in $SRC/src/CMakeLists.txt" >&2
    exit 1
fi
FLAGS=""
for name in $LAYERS; do
    state=OFF
    for keep in $KEEP; do
        [ "$name" = "$keep" ] && state=ON
    done
    FLAGS="$FLAGS -DWITH_LAYER_$name=$state"
done
for keep in $KEEP; do
    echo "$LAYERS" | grep -qx "$keep" || { echo "build.sh: ncnn has no layer '$keep'" >&2; exit 1; }
done

start=$(date +%s)
# shellcheck disable=SC2086  # FLAGS is a list of words
nice -n "$NICE" cmake -S "$SRC" -B "$BUILD/ncnn" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$BUILD/install" \
    -DNCNN_VULKAN=OFF -DNCNN_BUILD_TOOLS=OFF -DNCNN_BUILD_EXAMPLES=OFF \
    -DNCNN_BUILD_BENCHMARK=OFF -DNCNN_BUILD_TESTS=OFF -DNCNN_PYTHON=OFF \
    -DNCNN_SHARED_LIB=OFF -DNCNN_RUNTIME_CPU=ON $FLAGS
nice -n "$NICE" cmake --build "$BUILD/ncnn" -j "$JOBS"
nice -n "$NICE" cmake --install "$BUILD/ncnn" >/dev/null

nice -n "$NICE" cmake -S "$HERE" -B "$BUILD/harness" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -Dncnn_DIR="$BUILD/install/lib/cmake/ncnn"
nice -n "$NICE" cmake --build "$BUILD/harness" -j "$JOBS"
cp "$BUILD/harness/ncnn_peer" "$BUILD/ncnn_peer"

# What the peer line of compare_torch.py reports.
commit=$(git -C "$SRC" log --oneline -1 2>/dev/null || echo "unknown commit")
printf '%s\n' "$commit" > "$BUILD/ncnn_commit.txt"
echo "ncnn $commit: build took $(( $(date +%s) - start )) s"
echo "harness: $BUILD/ncnn_peer"
