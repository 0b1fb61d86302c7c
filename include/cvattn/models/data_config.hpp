#pragma once
// timm's evaluation preprocessing for a model name (timm.data.resolve_data_config on the
// model's default pretrained config) and an OpenCV implementation of its center-crop transform:
//
//   Resize(floor(size / crop_pct)) of the shorter edge, CenterCrop(size), RGB in [0, 1],
//   (x - mean) / std, as a [1, 3, size, size] tensor.
//
//   const auto cfg = models::data_config("seresnet18");
//   Tensor x = models::preprocess(cv::imread("cat.jpg"), cfg);   // [1, 3, 224, 224]
//
// The geometry (resized size, crop offsets) is timm's to the pixel. The resampling is OpenCV's:
// INTER_AREA when shrinking (PIL's antialiased filters average over the source footprint too) and
// the config's bicubic or bilinear kernel when enlarging, so values differ from timm's PIL
// pipeline by resampling error only (docs/models.md gives the measured difference).
#include <array>
#include <cstdint>
#include <opencv2/core.hpp>
#include <string>

#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::models {

enum class Interpolation { bilinear, bicubic };

struct CVATTN_EXPORT DataConfig {
  std::int64_t input_size = 224;  // square crop, pixels
  Interpolation interpolation = Interpolation::bicubic;
  double crop_pct = 0.875;
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};  // RGB
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};

  // floor(input_size / crop_pct): the length of the shorter edge after the resize.
  [[nodiscard]] std::int64_t resize_size() const;
};

// The config timm resolves for model_name (every name of supported_models(), and the timm names
// the library can build). ValueError naming the known names otherwise.
[[nodiscard]] CVATTN_EXPORT DataConfig data_config(const std::string& model_name);

// Where the crop of a w x h image lands: the resized size and the crop rectangle in it.
struct CVATTN_EXPORT CropGeometry {
  cv::Size resized;
  cv::Rect crop;
};
// torchvision's Resize(int) and CenterCrop arithmetic. ValueError on an empty image size.
[[nodiscard]] CVATTN_EXPORT CropGeometry crop_geometry(cv::Size image, const DataConfig& cfg);

// The crop as 8-bit BGR (for drawing the maps on what the network saw). `bgr`: CV_8UC3 or
// CV_8UC1 (grey is replicated); ValueError otherwise.
[[nodiscard]] CVATTN_EXPORT cv::Mat center_crop(const cv::Mat& bgr, const DataConfig& cfg);
// center_crop, then RGB order, scaled to [0, 1] and normalised: [1, 3, input_size, input_size].
[[nodiscard]] CVATTN_EXPORT Tensor preprocess(const cv::Mat& bgr, const DataConfig& cfg);

}  // namespace cvattn::models
