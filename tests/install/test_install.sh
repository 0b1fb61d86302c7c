#!/bin/sh
# Installed, not only built: installs the build tree to a temporary prefix, moves the installed
# tree elsewhere (so nothing can point back into the build or the prefix), and from a third,
# empty folder runs installed samples on their installed assets, checks that they found those
# (their --help names the assets folder in use), and builds a program against the installed
# library through pkg-config.
#
#   tests/install/test_install.sh BUILD_DIR [CXX]
set -eu
build=$1
cxx=${2:-c++}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cvattn_install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
mv "$tmp/prefix" "$tmp/moved"
root=$tmp/moved
mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere"
fail() { echo "test_install: FAIL: $*" >&2; exit 1; }

for f in bin/attention_demo bin/stn_rectify bin/deform_sampling bin/self_attention_query \
         bin/align_images bin/video_pipeline bin/classify bin/layer_maps share/cvattn/weights/fashion_cnn.safetensors \
         share/cvattn/weights/stn_fashion.safetensors share/cvattn/fashion/labels.json \
         share/cvattn/fashion_rts/labels.json lib/pkgconfig/cvattn.pc; do
  [ -e "$root/$f" ] || fail "not installed: $f"
done

# The samples find the installed assets, not the source tree's.
for s in attention_demo stn_rectify deform_sampling self_attention_query align_images video_pipeline \
         classify layer_maps; do
  "$root/bin/$s" --help > help.txt || fail "$s --help"
  grep -qx "Assets: $root/share/cvattn" help.txt || {
    cat help.txt >&2; fail "$s does not use the installed assets"; }
done

"$root/bin/stn_rectify" --output=stn > stn.txt || fail "stn_rectify from the installed tree"
grep -q "^accuracy: " stn.txt || fail "stn_rectify printed no accuracy"
[ -s stn/contact_sheet.png ] || fail "stn_rectify wrote no contact sheet"
"$root/bin/attention_demo" --output=demo --size=64 > demo.txt 2> /dev/null ||
  fail "attention_demo from the installed tree"
grep -q "predicted" demo.txt || fail "attention_demo printed no predictions"
[ -s demo/index.png ] || fail "attention_demo wrote no index"

"$root/bin/layer_maps" --output=layers > layers.txt || fail "layer_maps from the installed tree"
[ -s layers/chelsea_layers.png ] || fail "layer_maps wrote no sheet for the bundled photos"

# pkg-config: -fopenmp exactly when the library was built with OpenMP.
pc="$root/lib/pkgconfig/cvattn.pc"
libs=$(PKG_CONFIG_PATH="$root/lib/pkgconfig" pkg-config --libs cvattn)
if grep -q "CVATTN_WITH_OPENMP:BOOL=ON" "$build/CMakeCache.txt"; then
  case "$libs" in *-fopenmp*) ;; *) fail "cvattn.pc lacks -fopenmp: $libs" ;; esac
else
  case "$libs" in *-fopenmp*) fail "cvattn.pc has -fopenmp without OpenMP: $libs" ;; esac
fi

# A program that reads an image, runs a module and writes the result, built from the installed
# headers and library alone.
cat > use.cpp <<'CPP'
#include <cvattn/cvattn.hpp>
#include <opencv2/imgcodecs.hpp>
int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const cv::Mat image = cv::imread(argv[1], cv::IMREAD_COLOR);
  if (image.empty()) return 1;
  const cvattn::Tensor x = cvattn::from_image(image, cvattn::ImageOptions().scale(1.0 / 255));
  cvattn::SqueezeExcitation se(cvattn::SqueezeExcitationOptions(3).rd_channels(2));
  const cvattn::Tensor y = se.forward(x);
  return cv::imwrite(argv[2], cvattn::to_image(y, 0, cvattn::ImageOptions().scale(1.0 / 255))) ? 0 : 1;
}
CPP
# shellcheck disable=SC2046
"$cxx" -std=c++17 use.cpp -o use $(PKG_CONFIG_PATH="$root/lib/pkgconfig" pkg-config --cflags --libs cvattn) ||
  fail "cannot build against the installed library with pkg-config"
./use "$root/share/cvattn/images/chelsea.jpg" out.png || fail "the pkg-config program failed"
[ -s out.png ] || fail "the pkg-config program wrote nothing"
echo "test_install: ok ($root)"
