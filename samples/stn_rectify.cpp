// stn_rectify: distorted 28x28 images -> a trained spatial-transformer classifier (the PyTorch
// tutorial Net as cvattn's StnClassifier) -> for each image a PNG with the input, the
// transformer's sampling region drawn on it, the rectified image and the predicted class next to
// the label; plus a contact sheet of all of them and the accuracy over the labelled ones.
// Default: Fashion-MNIST test images distorted by the STN paper's RTS protocol
// (assets/fashion_rts, assets/weights/stn_fashion.md); --input=digits --weights=
// weights/stn_digits.safetensors runs the distorted-digits network instead.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "cvattn/cvattn.hpp"
#include "demo_support.hpp"
#include "sample_cli.hpp"

namespace fs = std::filesystem;

namespace {

// PNG at the highest compression (OpenCV's default favours speed), IoError on failure.
void write_png(const fs::path& file, const cv::Mat& image) {
  if (!cv::imwrite(file.string(), image, {cv::IMWRITE_PNG_COMPRESSION, 9})) {
    throw cvattn::IoError("cannot write " + file.string());
  }
}

// A 28x28 gray image magnified with visible pixels, as BGR.
cv::Mat magnify(const cv::Mat& gray, int scale) {
  cv::Mat big, bgr;
  cv::resize(gray, big, {}, scale, scale, cv::INTER_NEAREST);
  cv::cvtColor(big, bgr, cv::COLOR_GRAY2BGR);
  return bgr;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string keys =
      std::string("{help h    |                                 | print this help }") +
      "{input i   |  | image files or folders separated by ',' (28x28 gray, white on black; "
      "relative to --assets unless they exist); default: fashion_rts, unless --list is given }"
      "{weights w | weights/stn_fashion.safetensors | trained StnClassifier (relative to --assets "
      "unless it exists) }"
      "{output o  | out/stn_rectify                 | folder for the PNGs }"
      "{scale     | 8                               | magnification of the 28x28 panels }" +
      sample::assets_key() + sample::batch_keys();
  const std::string about =
      "stn_rectify: the spatial transformer classifier on distorted images; writes the input with "
      "its sampling grid, the rectified image and the prediction, and prints the accuracy";
  if (const auto done = sample::check_command_line(argc, argv, keys, about)) return *done;
  cv::CommandLineParser parser(argc, argv, keys);
  std::string input = parser.get<std::string>("input");
  const fs::path weights = sample::find_asset(parser.get<std::string>("weights"));
  const fs::path output = parser.get<std::string>("output");
  const int scale = parser.get<int>("scale");
  const std::string list = parser.get<std::string>("list");
  const std::string shard = parser.get<std::string>("shard");
  if (!parser.check()) return sample::value_errors(parser, "stn_rectify");
  try {
    if (scale < 1 || scale > 64) throw cvattn::ValueError("--scale must be in 1..64");
    const bool whole = sample::parse_shard(shard).count == 1;
    if (input.empty() && list.empty()) input = "fashion_rts";
    const std::vector<fs::path> files = sample::select_inputs(input, list, shard);
    std::map<fs::path, demo::Labels> labels;  // per folder
    const auto net =
        cvattn::StnClassifier::from_state_dict(cvattn::io::load_safetensors(weights.string()));
    const auto image_options = cvattn::ImageOptions().scale(1.0 / 255);

    fs::create_directories(output);
    std::vector<cvattn::viz::Panel> sheet;
    int labelled = 0, correct = 0;
    for (const fs::path& file : files) {
      const fs::path folder = file.parent_path();
      if (!labels.count(folder)) labels[folder] = demo::read_labels(folder / "labels.json");
      const demo::Labels& known = labels[folder];
      cv::Mat gray = cv::imread(file.string(), cv::IMREAD_GRAYSCALE);
      if (gray.empty()) throw cvattn::IoError("cannot read image " + file.string());
      if (gray.size() != cv::Size(28, 28)) cv::resize(gray, gray, {28, 28}, 0, 0, cv::INTER_AREA);
      // One image per forward: a shard's outputs do not depend on which other images it holds.
      const cvattn::Attended r = net->forward_with_maps(cvattn::from_image(gray, image_options));
      const cvattn::Tensor& logits = r.maps.at(cvattn::maps::kLogits);  // [1, 10] log-probs
      const cvattn::Tensor& grid = r.maps.at(cvattn::maps::kGrid);      // [1, 28, 28, 2]
      const cvattn::Tensor& rectified = r.maps.at("output");            // [1, 1, 28, 28]
      const float* lp = logits.data();
      const int pred = static_cast<int>(std::max_element(lp, lp + 10) - lp);
      const auto it = known.of.find(file.filename().string());
      const int label = it == known.of.end() ? -1 : it->second;
      labelled += label >= 0;
      correct += label >= 0 && label == pred;
      const cv::Mat with_grid = cvattn::viz::draw_grid_outline(
          magnify(gray, scale), grid,
          cvattn::viz::GridOutlineOptions().thickness(scale >= 6 ? 2 : 1).lattice(4));
      const cv::Mat warped = magnify(cvattn::to_image(rectified, 0, image_options), scale);
      char verdict[96];
      std::snprintf(verdict, sizeof verdict, "pred %d (p %.2f)%s", pred, std::exp(lp[pred]),
                    label < 0       ? ""
                    : label == pred ? " ok"
                                    : " WRONG");
      const std::string truth =
          label < 0 ? "input, no label" : "input, label " + std::to_string(label);
      const cv::Mat pair = cvattn::viz::contact_sheet({{truth, with_grid}, {verdict, warped}}, 2);
      write_png(output / (file.stem().string() + "_stn.png"), pair);
      std::cout << file.filename().string() << ": ";
      if (label < 0) {
        std::cout << "predicted " << known.name(pred) << " (no label)\n";
      } else {
        std::cout << "label " << known.name(label) << " predicted " << known.name(pred) << "\n";
      }
      cv::Mat both;
      cv::hconcat(with_grid, warped, both);
      sheet.push_back(
          {(label < 0 ? "?" : std::to_string(label)) + " -> " + std::to_string(pred), both});
    }
    std::size_t written = files.size();
    if (whole && !sheet.empty()) {
      const cv::Mat sheet_image = cvattn::viz::contact_sheet(
          sheet, 4, cvattn::viz::ContactSheetOptions().cell_size(sheet.front().image.size()));
      write_png(output / "contact_sheet.png", sheet_image);
      ++written;
    }
    if (labelled > 0) {
      std::printf("accuracy: %d/%d = %.1f%%\n", correct, labelled, 100.0 * correct / labelled);
    } else {
      std::printf("accuracy: no labels (no labels.json beside the images)\n");
    }
    std::cout << "wrote " << sample::count(written, "PNG") << " to " << output.string() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "stn_rectify: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
