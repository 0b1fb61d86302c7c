// AttentionShapesNet (cvattn/models/attention_shapes.hpp), composed from cvattn's float32 modules,
// reproduces every number PyTorch stored beside the shipped weights, reads the PNG assets with
// the model card's input convention (RGB order), and runs fully convolutionally on other sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>

#include "cvattn/core/error.hpp"
#include "cvattn/io/npy.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/models/attention_shapes.hpp"

namespace cvattn {
namespace {

const std::filesystem::path kAssets = CVATTN_ASSETS_DIR;

std::shared_ptr<AttentionShapesNet> load_net() {
  return AttentionShapesNet::load((kAssets / "weights/attention_shapes.safetensors").string());
}

void expect_close(const Tensor& actual, const Tensor& expected, const char* what) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  for (std::int64_t i = 0; i < expected.numel(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], 1e-4 + 1e-4 * std::abs(expected[i]))
        << what << " element " << i;
  }
}

int argmax_row(const Tensor& logits, std::int64_t n) {
  const std::int64_t c = logits.dim(1);
  int best = 0;
  for (int k = 1; k < c; ++k) best = logits[n * c + k] > logits[n * c + best] ? k : best;
  return best;
}

TEST(AttentionShapesNet, ReproducesEveryMapOfTheCheckPair) {
  const auto net = load_net();
  const auto dir = kAssets / "weights/attention_shapes_check";
  auto load = [&](const char* name) {
    return io::read_npy((dir / (std::string(name) + ".npy")).string());
  };
  const Attended r = net->forward_with_maps(load("input"));  // N = 4, one image per class
  expect_close(r.output, load("logits"), "logits");
  expect_close(r.maps.at(attention_shapes::kSkAttention), load("sk_attention"), "sk_attention");
  expect_close(r.maps.at(maps::kOffset), load("offset"), "offset");
  expect_close(r.maps.at(maps::kMask), load("mask"), "mask");
  expect_close(r.maps.at(maps::kChannelAttention), load("channel_attention"), "channel");
  expect_close(r.maps.at(maps::kSpatialAttention), load("spatial_attention"), "spatial");
  EXPECT_EQ(r.maps.at(attention_shapes::kFeatures).shape(), (Shape{4, 32, 16, 16}));
  // The dilated path's share of SK's output is a fraction that varies over the image (a wrong
  // re-computation of the path would leave [0, 1] or come out flat).
  const Tensor& share = r.maps.at(attention_shapes::kSkPathShare);
  ASSERT_EQ(share.shape(), (Shape{4, 1, 16, 16}));
  float lo = 1, hi = 0;
  for (std::int64_t i = 0; i < share.numel(); ++i) {
    lo = std::min(lo, share[i]);
    hi = std::max(hi, share[i]);
  }
  EXPECT_GE(lo, 0.0f);
  EXPECT_LE(hi, 1.0f);
  EXPECT_GT(hi - lo, 0.1f);
  const Tensor labels = load("labels");
  for (int n = 0; n < 4; ++n) EXPECT_EQ(argmax_row(r.output, n), static_cast<int>(labels[n]));
  // Batched and one-at-a-time agree.
  const Attended one = net->forward_with_maps(load("input").slice0(2, 3));
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(one.output[k], r.output[8 + k], 1e-5);
}

// annotations.json holds PyTorch's prediction and peak-in-box verdict for each PNG; reading the
// PNG with OpenCV (BGR) must give the same answers, which fails if the RGB swap is wrong.
TEST(AttentionShapesNet, PngAssetsGiveTheAnnotatedAnswers) {
  const auto net = load_net();
  std::ifstream in(kAssets / "synthetic/annotations.json");
  ASSERT_TRUE(in);
  const auto notes = nlohmann::json::parse(in)["images"];
  ASSERT_EQ(notes.size(), 12u);
  for (const auto& [name, note] : notes.items()) {
    const cv::Mat bgr = cv::imread((kAssets / "synthetic" / name).string(), cv::IMREAD_COLOR);
    ASSERT_FALSE(bgr.empty()) << name;
    const Attended r = net->forward_with_maps(AttentionShapesNet::input_from_image(bgr));
    EXPECT_EQ(argmax_row(r.output, 0), note["prediction"].get<int>()) << name;
    const Tensor& s = r.maps.at(maps::kSpatialAttention);
    std::int64_t peak = 0;
    for (std::int64_t i = 1; i < s.numel(); ++i) peak = s[i] > s[peak] ? i : peak;
    const double px = (static_cast<double>(peak % 16) + 0.5) * 4;
    const double py = (static_cast<double>(peak / 16) + 0.5) * 4;
    const auto box = note["box_xyxy"].get<std::vector<int>>();
    const bool inside = px >= box[0] && px < box[2] && py >= box[1] && py < box[3];
    EXPECT_EQ(inside, note["attention_peak_in_box"].get<bool>()) << name;
  }
}

TEST(AttentionShapesNet, RunsFullyConvolutionallyOnOddSizes) {
  const auto net = load_net();
  Tensor x = Tensor::zeros({2, 3, 37, 50});
  for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = static_cast<float>((i * 7919) % 255) / 255;
  const Attended r = net->forward_with_maps(x);
  EXPECT_EQ(r.output.shape(), (Shape{2, 4}));
  EXPECT_EQ(r.maps.at(maps::kSpatialAttention).shape(), (Shape{2, 1, 9, 12}));
  EXPECT_EQ(r.maps.at(maps::kOffset).shape(), (Shape{2, 18, 9, 12}));
  EXPECT_EQ(r.maps.at(maps::kMask).shape(), (Shape{2, 9, 9, 12}));
  EXPECT_EQ(r.maps.at(maps::kChannelAttention).shape(), (Shape{2, 32}));
  EXPECT_EQ(r.maps.at(attention_shapes::kSkAttention).shape(), (Shape{2, 2, 24}));
  EXPECT_EQ(r.maps.at(attention_shapes::kSkPathShare).shape(), (Shape{2, 1, 9, 12}));
  // forward() skips the maps but gives the same logits.
  const Tensor logits = net->forward(x);
  for (int k = 0; k < 8; ++k) EXPECT_EQ(logits[k], r.output[k]);
  EXPECT_TRUE(r.output.all_finite());
  // input_from_image keeps the size when asked to (an empty size).
  const cv::Mat photo(37, 50, CV_8UC3, cv::Scalar(10, 120, 240));
  const Tensor t = AttentionShapesNet::input_from_image(photo, cv::Size());
  EXPECT_EQ(t.shape(), (Shape{1, 3, 37, 50}));
  EXPECT_NEAR(t[0], 240.0f / 255, 1e-6);  // channel 0 is red: RGB order
  EXPECT_EQ(AttentionShapesNet::input_from_image(photo).shape(), (Shape{1, 3, 64, 64}));
}

TEST(AttentionShapesNet, RejectsBadInputs) {
  const auto net = load_net();
  // An unloaded net runs (all-zero weights) rather than failing on an unfolded path.
  EXPECT_EQ(AttentionShapesNet().forward_with_maps(Tensor::zeros({1, 3, 8, 8})).output.shape(),
            (Shape{1, 4}));
  EXPECT_THROW((void)net->forward(Tensor::zeros({1, 1, 64, 64})), ShapeError);
  EXPECT_THROW((void)net->forward(Tensor::zeros({1, 3, 3, 64})), ShapeError);
  EXPECT_THROW((void)net->forward(Tensor::zeros({3, 64, 64})), ShapeError);
  EXPECT_THROW((void)net->forward(Tensor()), Error);
  EXPECT_THROW((void)AttentionShapesNet::input_from_image(cv::Mat()), ValueError);
  EXPECT_THROW((void)AttentionShapesNet::input_from_image(cv::Mat(8, 8, CV_32FC3)), ValueError);
  StateDict partial =
      io::load_safetensors((kAssets / "weights/attention_shapes.safetensors").string());
  StateDict missing;
  for (const auto& e : partial.entries())
    if (e.key != "head.bias") missing.set(e.key, e.value, e.integer);
  try {
    (void)AttentionShapesNet::from_state_dict(missing);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("head.bias"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cvattn
