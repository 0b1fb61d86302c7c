#include "demo_support.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <sstream>
#include <stdexcept>

#include "cvattn/viz/viz.hpp"
#include "sample_cli.hpp"

namespace demo {

fs::path assets_dir() { return sample::assets_dir(); }

std::string bundled_inputs() { return "images,synthetic"; }

std::string common_keys(const std::string& output, int size, const std::string& weights,
                        const std::string& default_inputs) {
  return "{help h   |  | print this help }"
         "{input i  |  | image files or folders separated by ',' (relative to --assets unless "
         "they exist); default: the bundled " +
         default_inputs +
         " }"
         "{output o | " +
         output +
         " | folder for the PNGs }"
         "{size     | " +
         std::to_string(size) +
         " | longer side of each panel in pixels }"
         "{full-res | 256 | also run fully convolutionally on photos at this longer side (0: off) }"
         "{weights  | " +
         weights +
         " | network weights (.safetensors; relative to --assets "
         "unless it exists) }" +
         sample::assets_key() + sample::batch_keys();
}

std::vector<fs::path> inputs(const cv::CommandLineParser& parser,
                             const std::string& default_inputs) {
  std::string input = parser.get<std::string>("input");
  const std::string list = parser.get<std::string>("list");
  if (input.empty() && list.empty()) input = default_inputs;
  return sample::select_inputs(input, list, parser.get<std::string>("shard"));
}

bool whole_run(const cv::CommandLineParser& parser) {
  return sample::parse_shard(parser.get<std::string>("shard")).count == 1;
}

fs::path weights(const cv::CommandLineParser& parser) {
  return sample::find_asset(parser.get<std::string>("weights"));
}

std::vector<std::pair<std::string, cv::Mat>> resolutions(const cv::Mat& bgr, int full_res) {
  if (full_res < 0 || full_res > 2048) throw std::runtime_error("--full-res must be in 0..2048");
  std::vector<std::pair<std::string, cv::Mat>> out;
  cv::Mat small;
  cv::resize(bgr, small, {64, 64}, 0, 0,
             bgr.cols > 64 || bgr.rows > 64 ? cv::INTER_AREA : cv::INTER_LINEAR);
  out.emplace_back("64x64", small);
  const int longer = std::max(bgr.cols, bgr.rows);
  if (full_res > 0 && longer > 64) {
    cv::Mat work = display_image(bgr, std::min(full_res, longer));
    out.emplace_back(std::to_string(work.cols) + "x" + std::to_string(work.rows), work);
  }
  return out;
}

std::vector<fs::path> list_images(const std::string& inputs) {
  return sample::select_inputs(inputs, "", "");
}

cv::Mat read_bgr(const fs::path& file) {
  cv::Mat image = cv::imread(file.string(), cv::IMREAD_COLOR);
  if (image.empty()) throw std::runtime_error("cannot read image " + file.string());
  return image;
}

void write_png(const fs::path& file, const cv::Mat& image) {
  if (file.has_parent_path()) fs::create_directories(file.parent_path());
  if (!cv::imwrite(file.string(), image)) {
    throw std::runtime_error("cannot write " + file.string());
  }
}

cv::Mat display_image(const cv::Mat& bgr, int longer_side) {
  const double scale = static_cast<double>(longer_side) / std::max(bgr.cols, bgr.rows);
  const cv::Size size(std::max(1, cvRound(bgr.cols * scale)),
                      std::max(1, cvRound(bgr.rows * scale)));
  const int interpolation =
      scale >= 2 ? cv::INTER_NEAREST : (scale < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
  cv::Mat out;
  cv::resize(bgr, out, size, 0, 0, interpolation);
  return out;
}

std::map<std::string, Annotation> load_annotations(const fs::path& folder) {
  std::map<std::string, Annotation> out;
  std::ifstream in(folder / "annotations.json");
  if (!in) return out;
  const auto doc = nlohmann::json::parse(in);
  for (const auto& [name, note] : doc.at("images").items()) {
    const auto box = note.at("box_xyxy").get<std::vector<int>>();
    if (box.size() != 4) throw std::runtime_error("annotations.json: bad box of " + name);
    out[name] = {note.at("label").get<int>(),
                 cv::Rect(cv::Point(box[0], box[1]), cv::Point(box[2], box[3]))};
  }
  return out;
}

std::string Labels::name(int k) const {
  return k >= 0 && static_cast<std::size_t>(k) < classes.size()
             ? std::to_string(k) + " " + classes[static_cast<std::size_t>(k)]
             : std::to_string(k);
}

Labels read_labels(const fs::path& file) {
  Labels labels;
  std::ifstream in(file);
  if (!in) return labels;
  const nlohmann::json j = nlohmann::json::parse(in);
  for (const auto& [name, v] : j.items()) {
    if (name == "classes") {
      labels.classes = v.get<std::vector<std::string>>();
    } else {
      labels.of[name] = v.is_object() ? v.at("label").get<int>() : v.get<int>();
    }
  }
  return labels;
}

std::vector<cv::Point> parse_points(const std::string& text) {
  std::vector<cv::Point> points;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ';')) {
    if (item.empty()) continue;
    int x = 0, y = 0;
    char comma = 0, extra = 0;
    std::stringstream one(item);
    if (!(one >> x >> comma >> y) || comma != ',' || (one >> extra)) {
      throw std::runtime_error("bad point '" + item + "' (expected x,y)");
    }
    points.emplace_back(x, y);
  }
  if (points.empty()) throw std::runtime_error("no points in '" + text + "'");
  return points;
}

Progress::Progress(std::string what, std::size_t total) : what_(std::move(what)), total_(total) {}

void Progress::step(const std::string& item) {
  ++done_;
  constexpr std::size_t kWidth = 30;
  const std::size_t filled = total_ ? done_ * kWidth / total_ : kWidth;
  std::string bar(filled, '#');
  bar.resize(kWidth, '-');
  std::fprintf(stderr, "\r%s [%s] %zu/%zu %-32.32s", what_.c_str(), bar.c_str(), done_, total_,
               item.c_str());
  std::fflush(stderr);
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  std::fputc('\n', stderr);
}

Progress::~Progress() { finish(); }

void check_inside(const std::vector<cv::Point>& points, cv::Size size, const fs::path& file) {
  for (const cv::Point& p : points) {
    if (p.x < 0 || p.y < 0 || p.x >= size.width || p.y >= size.height) {
      throw std::runtime_error("point (" + std::to_string(p.x) + ", " + std::to_string(p.y) +
                               ") lies outside " + file.string());
    }
  }
}

void write_index(const fs::path& output, const std::vector<cvattn::viz::Panel>& panels, int size) {
  const int columns = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(panels.size()))));
  write_png(output / "index.png",
            cvattn::viz::contact_sheet(panels, std::max(columns, 1),
                                       cvattn::viz::ContactSheetOptions().cell_size({size, size})));
}

cv::Size map_size(const cvattn::Tensor& map) {
  return {static_cast<int>(map.dim(3)), static_cast<int>(map.dim(2))};
}

cv::Point peak_cell(const cvattn::Tensor& map) {
  const std::int64_t w = map.dim(3), plane = map.dim(2) * map.dim(3);
  std::int64_t best = 0;
  for (std::int64_t i = 1; i < plane; ++i) best = map[i] > map[best] ? i : best;
  return {static_cast<int>(best % w), static_cast<int>(best / w)};
}

cv::Point2d cell_centre(cv::Point cell, cv::Size map_size, cv::Size size) {
  return {(cell.x + 0.5) * size.width / map_size.width,
          (cell.y + 0.5) * size.height / map_size.height};
}

cv::Point cell_at(cv::Point pixel, cv::Size size, cv::Size map_size) {
  const int x = static_cast<int>(std::floor((pixel.x + 0.5) * map_size.width / size.width));
  const int y = static_cast<int>(std::floor((pixel.y + 0.5) * map_size.height / size.height));
  return {std::clamp(x, 0, map_size.width - 1), std::clamp(y, 0, map_size.height - 1)};
}

cv::Mat draw_dcn_taps(const cv::Mat& display, const cvattn::Tensor& offset,
                      const cvattn::Tensor& mask, const std::vector<cv::Point>& cells) {
  namespace viz = cvattn::viz;
  const cv::Size m = map_size(offset);
  const cvattn::Tensor taps = viz::deform_sampling_positions(offset, cells);  // [P, 9, 2] (y, x)
  const auto p = static_cast<std::int64_t>(cells.size());
  cvattn::Tensor centers = cvattn::Tensor::empty({p, 2});
  cvattn::Tensor modulation = cvattn::Tensor::empty({p, 9});
  for (std::int64_t i = 0; i < p; ++i) {
    const cv::Point c = cells[static_cast<std::size_t>(i)];
    // 3x3, stride 1, padding 1: output cell (oy, ox) is centred on input cell (oy, ox).
    centers[2 * i] = static_cast<float>(c.y);
    centers[2 * i + 1] = static_cast<float>(c.x);
    for (int k = 0; k < 9; ++k)
      modulation[i * 9 + k] = mask.defined() ? mask.at(0, k, c.y, c.x) : 1.0f;
  }
  return viz::draw_sampling_points(
      display, centers, taps,
      viz::SamplingPointsOptions().input_size(m).mask(modulation).radius(4));
}

int run_guarded(const char* name, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::cerr << "\n" << name << ": error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace demo
