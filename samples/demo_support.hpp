#pragma once
// Plumbing shared by the attention samples (not part of the library): finding images, the
// progress bar, reading the synthetic set's annotations, writing PNGs, parsing point lists.
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace demo {

namespace fs = std::filesystem;

// Bundled assets (CVATTN_ASSETS_DIR, set by samples/CMakeLists.txt).
[[nodiscard]] fs::path assets_dir();

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

// Runs body, turning an exception into "<name>: error: <what>" on stderr and exit code 1.
int run_guarded(const char* name, const std::function<int()>& body);

}  // namespace demo
