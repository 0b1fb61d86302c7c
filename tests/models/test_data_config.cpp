// models::data_config / preprocess against timm's own (tests/fixtures/data_config.py): the config
// of every known model, torchvision's resize and crop geometry to the pixel, and the values of
// timm's PIL transform up to resampling differences (OpenCV's kernels are not PIL's).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <opencv2/imgcodecs.hpp>

#include "cvattn/core/error.hpp"
#include "cvattn/models/data_config.hpp"
#include "cvattn/models/timm.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"

namespace cvattn::test {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

nlohmann::json configs() {
  std::ifstream in(fixtures_root() / "data_config" / "configs.json");
  EXPECT_TRUE(in) << "run tests/fixtures/data_config.py";
  return nlohmann::json::parse(in);
}

TEST(DataConfig, EveryKnownModelAsTimmResolvesIt) {
  const nlohmann::json all = configs();
  ASSERT_GE(all.size(), 30u);
  for (const auto& [name, ref] : all.items()) {
    SCOPED_TRACE(name);
    const models::DataConfig c = models::data_config(name);
    EXPECT_EQ(c.input_size, ref["input_size"][1].get<std::int64_t>());
    EXPECT_EQ(ref["input_size"][1], ref["input_size"][2]);
    EXPECT_EQ(ref["crop_mode"].get<std::string>(), "center");
    EXPECT_DOUBLE_EQ(c.crop_pct, ref["crop_pct"].get<double>());
    EXPECT_EQ(c.interpolation == models::Interpolation::bicubic ? "bicubic" : "bilinear",
              ref["interpolation"].get<std::string>());
    for (int k = 0; k < 3; ++k) {
      EXPECT_FLOAT_EQ(c.mean[k], ref["mean"][k].get<float>());
      EXPECT_FLOAT_EQ(c.std[k], ref["std"][k].get<float>());
    }
  }
}

TEST(DataConfig, EverySupportedModelHasOne) {
  for (const std::string& name : models::supported_models()) {
    EXPECT_NO_THROW((void)models::data_config(name)) << name;
  }
}

TEST(DataConfig, UnknownNameAndBadImagesAreNamedErrors) {
  EXPECT_THAT(test::Call([] { (void)models::data_config("resnet19"); }),
              ThrowsMessage<ValueError>(HasSubstr("no preprocessing known for 'resnet19'")));
  const models::DataConfig c = models::data_config("resnet18");
  EXPECT_THAT(test::Call([&] { (void)models::preprocess(cv::Mat(), c); }),
              ThrowsMessage<ValueError>(HasSubstr("an empty image")));
  EXPECT_THAT(test::Call([&] { (void)models::preprocess(cv::Mat(8, 8, CV_32FC3), c); }),
              ThrowsMessage<ValueError>(HasSubstr("CV_32FC3")));
  models::DataConfig bad = c;
  bad.crop_pct = 0.0;
  EXPECT_THAT(test::Call([&] {
                (void)models::crop_geometry({10, 10}, bad);
              }),
              ThrowsMessage<ValueError>(HasSubstr("crop_pct")));
}

TEST(DataConfig, GeometryFollowsTorchvisionResizeAndCenterCrop) {
  const models::DataConfig c = models::data_config("seresnet18");  // 224 / 0.875 = 256
  const models::CropGeometry wide = models::crop_geometry({320, 213}, c);
  EXPECT_EQ(wide.resized, cv::Size(384, 256));  // int(256 * 320 / 213) = 384
  EXPECT_EQ(wide.crop, cv::Rect(80, 16, 224, 224));
  const models::CropGeometry tall = models::crop_geometry({101, 333}, c);
  EXPECT_EQ(tall.resized, cv::Size(256, 844));  // int(256 * 333 / 101) = 844
  EXPECT_EQ(tall.crop, cv::Rect(16, 310, 224, 224));
  // (253 - 224) / 2 = 14.5 rounds half to even, as Python's round.
  models::DataConfig odd = c;
  odd.crop_pct = 224.0 / 253.0;
  EXPECT_EQ(models::crop_geometry({253, 253}, odd).crop.x, 14);
}

class TimmTransform : public ::testing::TestWithParam<std::string> {};

TEST_P(TimmTransform, MatchesUpToResampling) {
  const Fixture fx = fixture("data_config/" + GetParam());
  const auto& p = fx.params();
  const models::DataConfig c = models::data_config(p["model_name"].get<std::string>());
  const cv::Mat bgr = cv::imread(
      (fixtures_root() / ".." / ".." / "assets" / "images" / p["image"].get<std::string>())
          .string(),
      cv::IMREAD_COLOR);
  ASSERT_FALSE(bgr.empty());
  const models::CropGeometry g = models::crop_geometry(bgr.size(), c);
  EXPECT_EQ(g.resized.width, p["resized"][0].get<int>());
  EXPECT_EQ(g.resized.height, p["resized"][1].get<int>());
  EXPECT_EQ(g.crop, cv::Rect(p["crop"][0], p["crop"][1], p["crop"][2], p["crop"][3]));
  const Tensor x = models::preprocess(bgr, c);
  const Tensor ref = fx.tensor("output");
  ASSERT_EQ(x.shape(), ref.shape());
  // Mean absolute difference in units of the input's 0..1 range (times std): resampling only.
  double sum = 0.0, worst = 0.0;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const double d = std::abs(x[i] - ref[i]) * c.std[static_cast<std::size_t>(i / (x.numel() / 3))];
    sum += d;
    worst = std::max(worst, d);
  }
  const double mean = sum / static_cast<double>(x.numel());
  // Measured: mean 0.0008-0.0041, worst 0.004-0.078 (the shrunk astronaut: INTER_AREA against
  // PIL's antialiased bicubic), i.e. about one grey level on average.
  EXPECT_LT(mean, 0.006) << "worst " << worst;
  EXPECT_LT(worst, 0.1);
  RecordProperty("mean_abs_difference", std::to_string(mean));
}

INSTANTIATE_TEST_SUITE_P(Photos, TimmTransform,
                         ::testing::Values("seresnet18_chelsea", "vit_tiny_patch16_224_astronaut",
                                           "resnest14d_coffee"));

}  // namespace
}  // namespace cvattn::test
