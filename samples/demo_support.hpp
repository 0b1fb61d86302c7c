#pragma once
// Plumbing shared by the attention samples (not part of the library): finding images, the
// progress bar, reading the synthetic set's annotations, writing PNGs, parsing point lists.
#include <filesystem>
#include <functional>
#include <map>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "cvattn/core/tensor.hpp"
#include "cvattn/viz/viz.hpp"

namespace demo {

namespace fs = std::filesystem;

// Bundled assets (sample::assets_dir(): --assets, the installed share/cvattn, the source tree).
[[nodiscard]] fs::path assets_dir();

// The default input of the attention_shapes samples: the bundled photos and synthetic images,
// as one list relative to the assets folder.
[[nodiscard]] std::string bundled_inputs();
// cv::CommandLineParser keys shared by the attention samples: help, input, output (default
// `output`), size (default `size`), weights (default `weights`), assets, list and shard.
// `default_inputs` only words the help.
[[nodiscard]] std::string common_keys(
    const std::string& output, int size,
    const std::string& weights = "weights/attention_shapes.safetensors",
    const std::string& default_inputs = "assets/images and assets/synthetic");
// The inputs named by --input (default `default_inputs`), --list and --shard
// (sample::select_inputs).
[[nodiscard]] std::vector<fs::path> inputs(const cv::CommandLineParser& parser,
                                           const std::string& default_inputs);
// Whether this run processes every input (no --shard, or --shard=0/1): only such runs write the
// pictures that gather all inputs (index.png), so sharded runs write per-input files only.
[[nodiscard]] bool whole_run(const cv::CommandLineParser& parser);
// --weights through sample::find_asset.
[[nodiscard]] fs::path weights(const cv::CommandLineParser& parser);
// The image `bgr` at the network's 64x64 and, when --full-res allows and the image is larger,
// at full_res pixels on its longer side (for a fully convolutional run): (label, image) pairs.
[[nodiscard]] std::vector<std::pair<std::string, cv::Mat>> resolutions(const cv::Mat& bgr,
                                                                       int full_res);

// `inputs`: files or folders separated by ','; a folder gives its readable images (not
// recursive), sorted by name. std::runtime_error when a path does not exist or nothing is found.
[[nodiscard]] std::vector<fs::path> list_images(const std::string& inputs);

// Reads an image as 8-bit BGR; std::runtime_error naming the file when it cannot.
[[nodiscard]] cv::Mat read_bgr(const fs::path& file);
// Writes a PNG (creating its folder); std::runtime_error naming the file when it cannot.
void write_png(const fs::path& file, const cv::Mat& image);

// The image scaled so that its longer side is `longer_side`: nearest neighbour when enlarging
// 2x or more (the 64x64 synthetic images stay crisp), area when shrinking.
[[nodiscard]] cv::Mat display_image(const cv::Mat& bgr, int longer_side);

// One entry of a folder's annotations.json (tools/train/attention_shapes.py's format).
struct Annotation {
  int label = -1;
  cv::Rect box;  // target box in pixels, [x0, x1) x [y0, y1)
};
// annotations.json next to `image`, keyed by file name; empty when there is none.
[[nodiscard]] std::map<std::string, Annotation> load_annotations(const fs::path& folder);

// labels.json beside a folder of images: {"file.png": {"label": 3, ...}} or {"file.png": 3},
// optionally with "classes": ["name of class 0", ...]. Empty when the file does not exist.
struct Labels {
  std::map<std::string, int> of;
  std::vector<std::string> classes;
  // "3 dress" when the class has a name, else "3".
  [[nodiscard]] std::string name(int k) const;
};
[[nodiscard]] Labels read_labels(const fs::path& file);

// "x1,y1;x2,y2;..." -> points; std::runtime_error on malformed text.
[[nodiscard]] std::vector<cv::Point> parse_points(const std::string& text);

// A progress bar on stderr: "[#####-----]  5/10 name", redrawn in place.
class Progress {
 public:
  Progress(std::string what, std::size_t total);
  void step(const std::string& item);
  void finish();
  ~Progress();

 private:
  std::string what_;
  std::size_t total_, done_ = 0;
  bool finished_ = false;
};

// std::runtime_error naming `file` when a point lies outside an image of `size`.
void check_inside(const std::vector<cv::Point>& points, cv::Size size, const fs::path& file);
// Lays `panels` out in a near-square grid of size x size cells and writes output/index.png.
void write_index(const fs::path& output, const std::vector<cvattn::viz::Panel>& panels, int size);

// ---- attention_shapes maps -------------------------------------------------------------------

// Size (w, h) of an [N, C, h, w] map.
[[nodiscard]] cv::Size map_size(const cvattn::Tensor& map);
// The arg-max cell (x, y) of sample 0 of an [N, 1, h, w] map (the first maximum, as torch.argmax).
[[nodiscard]] cv::Point peak_cell(const cvattn::Tensor& map);
// Centre of map cell `cell` in the pixels of an image of `size` (the model card's "peak in box"
// rule: cell centre times the cell size).
[[nodiscard]] cv::Point2d cell_centre(cv::Point cell, cv::Size map_size, cv::Size size);
// Cell (x, y) of a map of `map_size` under image pixel `pixel` of an image of `size`, clamped.
[[nodiscard]] cv::Point cell_at(cv::Point pixel, cv::Size size, cv::Size map_size);
// DCN-paper picture: the 9 taps of a 3x3, stride-1, padding-1 deformable conv for each of
// `cells` (output cells (x, y) of the offset map [N, 18, h, w]) drawn over `display`; the dots
// are scaled by the DCNv2 mask [N, 9, h, w] when it is defined (sample 0 of both).
[[nodiscard]] cv::Mat draw_dcn_taps(const cv::Mat& display, const cvattn::Tensor& offset,
                                    const cvattn::Tensor& mask,
                                    const std::vector<cv::Point>& cells);

// Runs body, turning an exception into "<name>: error: <what>" on stderr and exit code 1.
int run_guarded(const char* name, const std::function<int()>& body);

}  // namespace demo
