// The Fashion-MNIST networks shipped in assets/weights (tools/train/fashion_cnn.py,
// stn_fashion.py): rebuilt from cvattn's modules they give PyTorch's logits and attention maps on
// the check pairs the trainers saved (assets/weights/*_check, computed by timm's own SEModule,
// SelectiveKernel and CbamModule and by the tutorial Net), and the bundled test images
// (assets/fashion, assets/fashion_rts) get the predictions PyTorch recorded in their labels.json.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>

#include "cvattn/cvattn.hpp"
#include "fashion_net.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

const std::filesystem::path kAssets = CVATTN_ASSETS_DIR;
const std::filesystem::path kWeights = kAssets / "weights";

Tensor check(const std::string& model, const std::string& name) {
  return io::read_npy((kWeights / (model + "_check") / (name + ".npy")).string());
}

int argmax_row(const Tensor& logits, std::int64_t n) {
  const std::int64_t c = logits.dim(1);
  int best = 0;
  for (int k = 1; k < c; ++k) best = logits[n * c + k] > logits[n * c + best] ? k : best;
  return best;
}

TEST(FashionCnn, ReproducesTimmOnTheCheckPair) {
  const auto net = demo::FashionCnn::load(kWeights / "fashion_cnn.safetensors");
  const Tensor x = check("fashion_cnn", "input");  // [4, 1, 28, 28]
  const Attended r = net->forward_with_maps(x);
  const test::Tolerance tol{};
  EXPECT_TENSOR_NEAR(r.output, check("fashion_cnn", "logits"), tol);
  for (const char* map :
       {"se", "sk", "channel_attention", "spatial_attention", "features", "cam"}) {
    SCOPED_TRACE(map);
    EXPECT_TENSOR_NEAR(r.maps.at(map), check("fashion_cnn", map), tol);
  }
  EXPECT_TENSOR_NEAR(net->forward(x), r.output, (test::Tolerance{0, 0}));
  // The model's answers on the check images are their labels (model card: > 90 % overall).
  const Tensor labels = check("fashion_cnn", "labels");
  for (std::int64_t n = 0; n < x.dim(0); ++n) {
    EXPECT_EQ(argmax_row(r.output, n), static_cast<int>(labels[n])) << n;
  }
}

TEST(FashionCnn, CamAveragesToTheLogits) {
  const auto net = demo::FashionCnn::load(kWeights / "fashion_cnn.safetensors");
  const Attended r = net->forward_with_maps(check("fashion_cnn", "input"));
  const Tensor& cam = r.maps.at("cam");  // [N, 10, 7, 7]
  const std::int64_t plane = cam.dim(2) * cam.dim(3);
  for (std::int64_t i = 0; i < cam.dim(0) * cam.dim(1); ++i) {
    double sum = 0;
    for (std::int64_t p = 0; p < plane; ++p) sum += cam[i * plane + p];
    EXPECT_NEAR(sum / plane, r.output[i], 1e-4 + 1e-4 * std::abs(r.output[i])) << i;
  }
}

TEST(FashionCnn, BundledImagesGetPyTorchsPredictions) {
  const auto net = demo::FashionCnn::load(kWeights / "fashion_cnn.safetensors");
  std::ifstream in(kAssets / "fashion" / "labels.json");
  const nlohmann::json labels = nlohmann::json::parse(in);
  ASSERT_EQ(labels.at("classes").size(), 10u);
  int images = 0;
  for (const auto& [name, entry] : labels.items()) {
    if (name == "classes") continue;
    ++images;
    const cv::Mat gray = cv::imread((kAssets / "fashion" / name).string(), cv::IMREAD_GRAYSCALE);
    ASSERT_EQ(gray.size(), cv::Size(28, 28)) << name;
    const Tensor logits = net->forward(demo::FashionCnn::input_from_image(gray));
    EXPECT_EQ(argmax_row(logits, 0), entry.at("fashion_cnn_prediction").get<int>()) << name;
    EXPECT_EQ(demo::fashion_classes()[static_cast<std::size_t>(entry.at("label").get<int>())],
              entry.at("class").get<std::string>());
  }
  EXPECT_EQ(images, 30);
}

TEST(StnFashion, ReproducesTheTutorialNetOnTheCheckPair) {
  const auto net = StnClassifier::from_state_dict(
      io::load_safetensors((kWeights / "stn_fashion.safetensors").string()));
  const Attended r = net->forward_with_maps(check("stn_fashion", "input"));
  EXPECT_TENSOR_NEAR(r.maps.at(maps::kLogits), check("stn_fashion", "logits"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(r.maps.at(maps::kTheta), check("stn_fashion", "theta"), test::Tolerance{});
}

TEST(StnFashion, BundledImagesGetPyTorchsPredictions) {
  const auto net = StnClassifier::from_state_dict(
      io::load_safetensors((kWeights / "stn_fashion.safetensors").string()));
  std::ifstream in(kAssets / "fashion_rts" / "labels.json");
  const nlohmann::json labels = nlohmann::json::parse(in);
  int images = 0;
  for (const auto& [name, entry] : labels.items()) {
    if (name == "classes") continue;
    ++images;
    const cv::Mat gray =
        cv::imread((kAssets / "fashion_rts" / name).string(), cv::IMREAD_GRAYSCALE);
    ASSERT_EQ(gray.size(), cv::Size(28, 28)) << name;
    const Attended r = net->forward_with_maps(from_image(gray, ImageOptions().scale(1.0 / 255)));
    EXPECT_EQ(argmax_row(r.maps.at(maps::kLogits), 0), entry.at("stn_prediction").get<int>())
        << name;
  }
  EXPECT_EQ(images, 24);
}

}  // namespace
}  // namespace cvattn
