// edge_demo: the smallest end-to-end use of cvattn. Every image in assets/images goes through
// cv::dnn::blobFromImage semantics into a Tensor, a 3x3 conv2d with Sobel weights over the
// luminance, and back to a picture: the gradient magnitude as a colour overlay.
#include <cmath>
#include <filesystem>
#include <iostream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "cvattn/cvattn.hpp"

namespace fs = std::filesystem;
namespace F = cvattn::functional;

int main(int argc, char** argv) {
  const cv::String keys =
      "{help h  |                      | print this help }"
      "{images  | " CVATTN_ASSETS_DIR
      "/images | folder of images }"
      "{output o| out/edge_demo        | folder for the overlay PNGs }"
      "{alpha   | 0.6                  | overlay opacity in [0, 1] }";
  cv::CommandLineParser parser(argc, argv, keys);
  parser.about("edge_demo: Sobel conv2d through cvattn, drawn as an overlay");
  if (parser.has("help")) {
    parser.printMessage();
    return 0;
  }
  const std::string images = parser.get<std::string>("images");
  const std::string output = parser.get<std::string>("output");
  const double alpha = parser.get<double>("alpha");
  if (!parser.check()) {
    parser.printErrors();
    return 1;
  }
  try {
    // Two output channels (d/dx, d/dy) over the BGR luminance weights.
    const float sobel_x[9] = {-1, 0, 1, -2, 0, 2, -1, 0, 1};
    const float sobel_y[9] = {-1, -2, -1, 0, 0, 0, 1, 2, 1};
    const float luma[3] = {0.114f, 0.587f, 0.299f};  // B, G, R
    cvattn::Tensor weight = cvattn::Tensor::empty({2, 3, 3, 3});
    for (int c = 0; c < 3; ++c) {
      for (int k = 0; k < 9; ++k) {
        weight[c * 9 + k] = luma[c] * sobel_x[k];
        weight[27 + c * 9 + k] = luma[c] * sobel_y[k];
      }
    }
    fs::create_directories(output);
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(images)) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    int written = 0;
    for (const auto& file : files) {
      const cv::Mat bgr = cv::imread(file.string(), cv::IMREAD_COLOR);
      if (bgr.empty()) continue;
      const cvattn::Tensor x = cvattn::from_image(bgr, cvattn::ImageOptions().scale(1.0 / 255));
      const cvattn::Tensor g =
          F::conv2d(x, weight, {}, F::Conv2dOptions().padding(1));  // [1, 2, H, W]
      cv::Mat magnitude;
      cv::magnitude(g.plane(0, 0), g.plane(0, 1), magnitude);
      cv::Mat heat8, heat;
      cv::normalize(magnitude, heat8, 0, 255, cv::NORM_MINMAX, CV_8U);
      cv::applyColorMap(heat8, heat, cv::COLORMAP_TURBO);
      cv::Mat overlay;
      cv::addWeighted(bgr, 1.0 - alpha, heat, alpha, 0.0, overlay);
      cv::Mat panel;
      cv::hconcat(bgr, overlay, panel);
      const fs::path out = fs::path(output) / (file.stem().string() + "_edges.png");
      if (!cv::imwrite(out.string(), panel)) {
        std::cerr << "edge_demo: error: cannot write " << out << "\n";
        return 1;
      }
      std::cout << "wrote " << out.string() << "\n";
      ++written;
    }
    if (written == 0) {
      std::cerr << "edge_demo: error: no readable images in " << images << "\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "edge_demo: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
