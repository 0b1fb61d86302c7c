// stn_rectify: distorted digits -> the trained spatial-transformer classifier (the PyTorch
// tutorial Net, assets/weights/stn_digits.safetensors) -> for each digit a PNG with the input,
// the transformer's sampling region drawn on it, the rectified digit and the predicted class
// next to the label; plus a contact sheet of all of them and the accuracy over the folder.
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

namespace fs = std::filesystem;

namespace {

// A path as given if it exists, else relative to the assets folder.
fs::path find_asset(const std::string& path, const std::string& assets) {
  return fs::exists(path) ? fs::path(path) : fs::path(assets) / path;
}

// labels.json beside the images: {"file.png": {"label": 3, ...}} or {"file.png": 3}.
std::map<std::string, int> read_labels(const fs::path& file) {
  std::map<std::string, int> labels;
  std::ifstream in(file);
  if (!in) return labels;
  const nlohmann::json j = nlohmann::json::parse(in);
  for (const auto& [name, v] : j.items())
    labels[name] = v.is_object() ? v.at("label").get<int>() : v.get<int>();
  return labels;
}

// PNG at the highest compression (OpenCV's default favours speed), IoError on failure.
void write_png(const fs::path& file, const cv::Mat& image) {
  if (!cv::imwrite(file.string(), image, {cv::IMWRITE_PNG_COMPRESSION, 9})) {
    throw cvattn::IoError("cannot write " + file.string());
  }
}

// A 28x28 gray digit magnified with visible pixels, as BGR.
cv::Mat magnify(const cv::Mat& gray, int scale) {
  cv::Mat big, bgr;
  cv::resize(gray, big, {}, scale, scale, cv::INTER_NEAREST);
  cv::cvtColor(big, bgr, cv::COLOR_GRAY2BGR);
  return bgr;
}

}  // namespace

int main(int argc, char** argv) {
  const cv::String keys =
      "{help h    |                                | print this help }"
      "{input i   | digits                         | digit image or folder (28x28 gray, white on "
      "black; relative to --assets unless it exists) }"
      "{weights w | weights/stn_digits.safetensors | trained tutorial Net (relative to --assets "
      "unless it exists) }"
      "{output o  | out/stn_rectify                | folder for the PNGs }"
      "{assets    | " CVATTN_ASSETS_DIR
      "           | the bundled assets folder }"
      "{scale     | 8                              | magnification of the 28x28 panels }";
  cv::CommandLineParser parser(argc, argv, keys);
  parser.about(
      "stn_rectify: the spatial transformer classifier on distorted digits; writes the input with "
      "its sampling grid, the rectified digit and the prediction, and prints the accuracy");
  if (parser.has("help")) {
    parser.printMessage();
    return 0;
  }
  const std::string assets = parser.get<std::string>("assets");
  const fs::path input = find_asset(parser.get<std::string>("input"), assets);
  const fs::path weights = find_asset(parser.get<std::string>("weights"), assets);
  const fs::path output = parser.get<std::string>("output");
  const int scale = parser.get<int>("scale");
  if (!parser.check()) {
    parser.printErrors();
    return 1;
  }
  try {
    if (scale < 1 || scale > 64) throw cvattn::ValueError("--scale must be in 1..64");
    std::vector<fs::path> files;
    if (fs::is_directory(input)) {
      for (const auto& e : fs::directory_iterator(input)) {
        const std::string ext = e.path().extension().string();
        if (ext == ".png" || ext == ".jpg" || ext == ".pgm" || ext == ".bmp")
          files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(input);
    }
    const auto labels =
        read_labels((fs::is_directory(input) ? input : input.parent_path()) / "labels.json");

    // Every digit in one batch; other sizes are resized to the tutorial's 28x28.
    std::vector<cv::Mat> digits;
    for (const auto& f : files) {
      cv::Mat gray = cv::imread(f.string(), cv::IMREAD_GRAYSCALE);
      if (gray.empty()) throw cvattn::IoError("cannot read image " + f.string());
      if (gray.size() != cv::Size(28, 28)) cv::resize(gray, gray, {28, 28}, 0, 0, cv::INTER_AREA);
      digits.push_back(gray);
    }
    if (digits.empty()) throw cvattn::IoError("no images in " + input.string());
    const auto image_options = cvattn::ImageOptions().scale(1.0 / 255);
    const cvattn::Tensor x = cvattn::from_images(digits, image_options);  // [N, 1, 28, 28]
    const auto net =
        cvattn::StnClassifier::from_state_dict(cvattn::io::load_safetensors(weights.string()));
    const cvattn::Attended r = net->forward_with_maps(x);
    const cvattn::Tensor& logits = r.maps.at(cvattn::maps::kLogits);  // [N, 10] log-probabilities
    const cvattn::Tensor& grid = r.maps.at(cvattn::maps::kGrid);      // [N, 28, 28, 2]
    const cvattn::Tensor& rectified = r.maps.at("output");            // [N, 1, 28, 28]

    fs::create_directories(output);
    std::vector<cvattn::viz::Panel> sheet;
    int labelled = 0, correct = 0;
    for (std::size_t i = 0; i < files.size(); ++i) {
      const auto n = static_cast<std::int64_t>(i);
      const float* lp = logits.data() + n * 10;
      const int pred = static_cast<int>(std::max_element(lp, lp + 10) - lp);
      const auto it = labels.find(files[i].filename().string());
      const int label = it == labels.end() ? -1 : it->second;
      labelled += label >= 0;
      correct += label == pred;
      const cv::Mat with_grid = cvattn::viz::draw_grid_outline(
          magnify(digits[i], scale), grid,
          cvattn::viz::GridOutlineOptions().sample(n).thickness(scale >= 6 ? 2 : 1).lattice(4));
      const cv::Mat warped = magnify(cvattn::to_image(rectified, n, image_options), scale);
      char verdict[96];
      std::snprintf(verdict, sizeof verdict, "pred %d (p %.2f)%s", pred, std::exp(lp[pred]),
                    label < 0       ? ""
                    : label == pred ? " ok"
                                    : " WRONG");
      const std::string truth =
          label < 0 ? "input, no label" : "input, label " + std::to_string(label);
      const cv::Mat pair = cvattn::viz::contact_sheet({{truth, with_grid}, {verdict, warped}}, 2);
      const fs::path out = output / (files[i].stem().string() + "_stn.png");
      write_png(out, pair);
      std::cout << files[i].filename().string() << ": label "
                << (label < 0 ? std::string("-") : std::to_string(label)) << " predicted " << pred
                << "\n";
      cv::Mat both;
      cv::hconcat(with_grid, warped, both);
      sheet.push_back(
          {(label < 0 ? "?" : std::to_string(label)) + " -> " + std::to_string(pred), both});
    }
    const fs::path sheet_file = output / "contact_sheet.png";
    const cv::Mat sheet_image = cvattn::viz::contact_sheet(
        sheet, 4, cvattn::viz::ContactSheetOptions().cell_size(sheet.front().image.size()));
    write_png(sheet_file, sheet_image);
    if (labelled > 0) {
      std::printf("accuracy: %d/%d = %.1f%%\n", correct, labelled, 100.0 * correct / labelled);
    }
    std::cout << "wrote " << files.size() + 1 << " PNGs to " << output.string() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "stn_rectify: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
