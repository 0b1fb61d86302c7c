#include "cvattn/models/data_config.hpp"

#include <cmath>
#include <map>
#include <opencv2/imgproc.hpp>

#include "cvattn/core/error.hpp"

namespace cvattn::models {
namespace {

using I = Interpolation;
constexpr std::array<float, 3> kImageNetMean{0.485f, 0.456f, 0.406f};
constexpr std::array<float, 3> kImageNetStd{0.229f, 0.224f, 0.225f};
constexpr std::array<float, 3> kHalf{0.5f, 0.5f, 0.5f};

struct Row {
  std::int64_t size;
  Interpolation interpolation;
  double crop_pct;
  bool inception;  // mean = std = 0.5 (the augreg ViTs)
};

// timm.data.resolve_data_config({}, model=timm.create_model(name)) at timm aa4b5850, written out
// by the table in docs/models.md ("Preprocessing"); tests/models/test_data_config.cpp checks
// every supported model has a row.
const std::map<std::string, Row>& table() {
  constexpr bool kImageNet = false, kInception = true;
  static const std::map<std::string, Row> rows = {
      {"resnet18", {224, I::bicubic, 0.95, kImageNet}},
      {"resnet34", {224, I::bicubic, 0.95, kImageNet}},
      {"resnet50", {224, I::bicubic, 0.95, kImageNet}},
      {"resnet26d", {224, I::bicubic, 0.875, kImageNet}},
      {"resnet50d", {224, I::bicubic, 0.875, kImageNet}},
      {"resnext50_32x4d", {224, I::bicubic, 0.95, kImageNet}},
      {"seresnet18", {224, I::bicubic, 0.875, kImageNet}},
      {"seresnet34", {224, I::bicubic, 0.875, kImageNet}},
      {"seresnet50", {224, I::bicubic, 0.95, kImageNet}},
      {"seresnext26d_32x4d", {224, I::bicubic, 0.875, kImageNet}},
      {"seresnext50_32x4d", {224, I::bicubic, 0.875, kImageNet}},
      {"ecaresnet26t", {256, I::bicubic, 0.875, kImageNet}},
      {"ecaresnet50d", {224, I::bicubic, 0.875, kImageNet}},
      {"skresnet18", {224, I::bicubic, 0.875, kImageNet}},
      {"skresnet34", {224, I::bicubic, 0.875, kImageNet}},
      {"skresnet50", {224, I::bicubic, 0.875, kImageNet}},
      {"skresnext50_32x4d", {224, I::bicubic, 0.875, kImageNet}},
      {"resnest14d", {224, I::bilinear, 0.875, kImageNet}},
      {"resnest26d", {224, I::bilinear, 0.875, kImageNet}},
      {"resnest50d", {224, I::bilinear, 0.875, kImageNet}},
      {"resnest50d_4s2x40d", {224, I::bicubic, 0.875, kImageNet}},
      {"resnest50d_1s4x24d", {224, I::bicubic, 0.875, kImageNet}},
      {"mobilenetv3_small_100", {224, I::bicubic, 0.875, kImageNet}},
      {"mobilenetv3_large_100", {224, I::bicubic, 0.875, kImageNet}},
      {"efficientnet_b0", {224, I::bicubic, 0.875, kImageNet}},
      {"efficientnet_cc_b0_4e", {224, I::bicubic, 0.875, kImageNet}},
      {"vit_tiny_patch16_224", {224, I::bicubic, 0.9, kInception}},
      {"vit_small_patch16_224", {224, I::bicubic, 0.9, kInception}},
      {"deit_tiny_patch16_224", {224, I::bicubic, 0.9, kImageNet}},
      {"deit_tiny_distilled_patch16_224", {224, I::bicubic, 0.9, kImageNet}},
      {"swin_tiny_patch4_window7_224", {224, I::bicubic, 0.9, kImageNet}},
      {"botnet26t_256", {256, I::bicubic, 0.95, kImageNet}},
      {"halonet26t", {256, I::bicubic, 0.95, kImageNet}},
      {"lambda_resnet26t", {256, I::bicubic, 0.94, kImageNet}},
  };
  return rows;
}

}  // namespace

std::int64_t DataConfig::resize_size() const {
  return static_cast<std::int64_t>(std::floor(static_cast<double>(input_size) / crop_pct));
}

DataConfig data_config(const std::string& model_name) {
  const auto it = table().find(model_name);
  if (it == table().end()) {
    std::string names;
    for (const auto& [name, row] : table()) names += (names.empty() ? "" : ", ") + name;
    throw ValueError("models::data_config: no preprocessing known for '" + model_name +
                     "' (known: " + names + ")");
  }
  const Row& r = it->second;
  DataConfig c;
  c.input_size = r.size;
  c.interpolation = r.interpolation;
  c.crop_pct = r.crop_pct;
  c.mean = r.inception ? kHalf : kImageNetMean;
  c.std = r.inception ? kHalf : kImageNetStd;
  return c;
}

CropGeometry crop_geometry(cv::Size image, const DataConfig& cfg) {
  CVATTN_CHECK(image.width > 0 && image.height > 0, ValueError,
               "models::crop_geometry: empty image (", image.width, "x", image.height, ")");
  CVATTN_CHECK(
      cfg.input_size >= 1 && cfg.input_size <= 16384 && cfg.crop_pct > 0.0 && cfg.crop_pct <= 1.0,
      ValueError,
      "models::crop_geometry: input_size must be in [1, 16384] and crop_pct "
      "in (0, 1], got ",
      cfg.input_size, " and ", cfg.crop_pct);
  // torchvision Resize(int): the shorter edge becomes `s`, the longer int(s * long / short).
  const std::int64_t s = cfg.resize_size();
  const std::int64_t w = image.width, h = image.height;
  std::int64_t rw = s, rh = s;
  if (w <= h) {
    rh = s * h / w;
  } else {
    rw = s * w / h;
  }
  CVATTN_CHECK(rw <= (1 << 20) && rh <= (1 << 20), ValueError, "models::crop_geometry: a ", w, "x",
               h, " image resizes to ", rw, "x", rh, ", too large");
  // CenterCrop: offsets int(round((len - size) / 2)), Python's round (half to even).
  const auto offset = [&](std::int64_t len) {
    return static_cast<int>(std::nearbyint(static_cast<double>(len - cfg.input_size) / 2.0));
  };
  const int c = static_cast<int>(cfg.input_size);
  return {cv::Size(static_cast<int>(rw), static_cast<int>(rh)),
          cv::Rect(offset(rw), offset(rh), c, c)};
}

cv::Mat center_crop(const cv::Mat& bgr, const DataConfig& cfg) {
  CVATTN_CHECK(!bgr.empty() && bgr.depth() == CV_8U && (bgr.channels() == 3 || bgr.channels() == 1),
               ValueError, "models::center_crop: expected an 8-bit BGR or grey image, got ",
               bgr.empty() ? std::string("an empty image") : cv::typeToString(bgr.type()));
  cv::Mat colour;
  if (bgr.channels() == 1) {
    cv::cvtColor(bgr, colour, cv::COLOR_GRAY2BGR);
  } else {
    colour = bgr;
  }
  const CropGeometry g = crop_geometry(colour.size(), cfg);
  cv::Mat resized;
  if (g.resized == colour.size()) {
    resized = colour;
  } else {
    const bool shrink = g.resized.width < colour.cols;
    const int mode =
        shrink ? cv::INTER_AREA
               : (cfg.interpolation == Interpolation::bicubic ? cv::INTER_CUBIC : cv::INTER_LINEAR);
    cv::resize(colour, resized, g.resized, 0, 0, mode);
  }
  return resized(g.crop).clone();
}

Tensor preprocess(const cv::Mat& bgr, const DataConfig& cfg) {
  const cv::Mat crop = center_crop(bgr, cfg);
  const std::int64_t n = cfg.input_size;
  Tensor x = Tensor::empty({1, 3, n, n});
  float* out = x.data();
  for (int y = 0; y < crop.rows; ++y) {
    const cv::Vec3b* row = crop.ptr<cv::Vec3b>(y);
    for (int xx = 0; xx < crop.cols; ++xx) {
      for (int c = 0; c < 3; ++c) {  // RGB plane c is BGR channel 2 - c
        const float v = static_cast<float>(row[xx][2 - c]) / 255.0f;
        out[(c * n + y) * n + xx] =
            (v - cfg.mean[static_cast<std::size_t>(c)]) / cfg.std[static_cast<std::size_t>(c)];
      }
    }
  }
  return x;
}

}  // namespace cvattn::models
