// cvattn::dnn custom layers inside cv::dnn: ONNX models written by tests/fixtures/onnx_models.py
// run through cv::dnn::readNetFromONNX + Net::forward and are compared with the PyTorch
// reference and with the same computation done directly with cvattn's kernels.
#include <gtest/gtest.h>

#include <map>
#include <opencv2/dnn.hpp>
#include <string>
#include <vector>

#include "cvattn/dnn/layers.hpp"
#include "cvattn/functional/deform_conv.hpp"
#include "cvattn/functional/sampling.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/modules/spatial_transformer.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

namespace F = functional;
using test::Fixture;

class DnnLayers : public ::testing::Test {
 protected:
  void SetUp() override {
    dnn::registerLayers();
#if defined(__SANITIZE_THREAD__)
    // OpenCV's TBB workers are not instrumented: ThreadSanitizer would flag cv::dnn's own
    // parallel loops. One OpenCV thread keeps the check on cvattn's side.
    cv::setNumThreads(1);
#endif
  }

  static Fixture case_(const std::string& name) { return test::fixture("onnx/" + name); }

  // Reads <case>/model.onnx, feeds the named fixture tensors, returns the requested outputs.
  static std::map<std::string, Tensor> run(const Fixture& fx, const std::vector<std::string>& in,
                                           const std::vector<std::string>& out) {
    cv::dnn::Net net = cv::dnn::readNetFromONNX(fx.path("model.onnx"));
    std::vector<Tensor> keep;  // the Mats handed to setInput share these tensors' storage
    for (const auto& name : in) {
      keep.push_back(fx.tensor(name));
      net.setInput(keep.back().to_mat(), name);
    }
    std::vector<cv::Mat> mats;
    net.forward(mats, std::vector<cv::String>(out.begin(), out.end()));
    std::map<std::string, Tensor> result;
    for (std::size_t i = 0; i < out.size(); ++i) result.emplace(out[i], Tensor(mats[i].clone()));
    return result;
  }

  // The cv::Exception message of reading (and, if that works, running) a model.
  static std::string error_of(const Fixture& fx, const std::vector<std::string>& in) {
    try {
      cv::dnn::Net net = cv::dnn::readNetFromONNX(fx.path("model.onnx"));
      std::vector<Tensor> keep;
      for (const auto& name : in) {
        keep.push_back(fx.tensor(name));
        net.setInput(keep.back().to_mat(), name);
      }
      net.forward();
    } catch (const cv::Exception& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(DnnLayers, GridSampleModesMatchTorchAndCvattn) {
  const Fixture fx = case_("grid_sample");
  const std::vector<std::string> outs = fx.params()["outputs"];
  const auto y = run(fx, {"X", "grid"}, outs);
  const auto& combos = fx.params()["combos"];
  ASSERT_EQ(combos.size(), outs.size());
  for (std::size_t i = 0; i < outs.size(); ++i) {
    SCOPED_TRACE(outs[i]);
    const auto options = F::GridSampleOptions()
                             .mode(F::parse_interpolation(combos[i][0]))
                             .padding_mode(F::parse_padding_mode(combos[i][1]))
                             .align_corners(combos[i][2] == 1);
    const Tensor direct = F::grid_sample(fx.tensor("X"), fx.tensor("grid"), options);
    EXPECT_TENSOR_NEAR(y.at(outs[i]), fx.tensor(outs[i]), test::Tolerance{});
    EXPECT_TENSOR_NEAR(direct, fx.tensor(outs[i]), test::Tolerance{});
    EXPECT_TENSOR_NEAR(y.at(outs[i]), direct, test::Tolerance{});
  }
}

TEST_F(DnnLayers, SpatialTransformerWithThetaInput) {
  const Fixture fx = case_("stn_theta");
  const auto y = run(fx, {"X", "theta"}, {"Y", "grid"});
  const Shape size = fx.params()["size"];
  const Tensor grid = F::affine_grid(fx.tensor("theta"), size, false);
  const Tensor direct = F::grid_sample(fx.tensor("X"), grid);
  EXPECT_TENSOR_NEAR(y.at("grid"), fx.tensor("grid"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(y.at("Y"), fx.tensor("Y"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(direct, fx.tensor("Y"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(y.at("Y"), direct, test::Tolerance{});
}

TEST_F(DnnLayers, SpatialTransformerWithThetaFromLinear) {
  const Fixture fx = case_("stn_linear");
  const auto y = run(fx, {"X"}, {"Y", "theta"});
  EXPECT_TENSOR_NEAR(y.at("theta"), fx.tensor("theta"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(y.at("Y"), fx.tensor("Y"), test::Tolerance{});
  const Shape size = fx.params()["size"];
  const auto options =
      F::GridSampleOptions().padding_mode(F::PaddingMode::border).align_corners(true);
  const Tensor direct =
      F::grid_sample(fx.tensor("X"), F::affine_grid(fx.tensor("theta"), size, true), options);
  EXPECT_TENSOR_NEAR(direct, fx.tensor("Y"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(y.at("Y"), direct, test::Tolerance{});
}

F::DeformConv2dOptions deform_options(const Fixture& fx) {
  const auto& p = fx.params();
  return F::DeformConv2dOptions()
      .stride(Pair2(p["stride"][0], p["stride"][1]))
      .padding(Pair2(p["padding"][0], p["padding"][1]))
      .dilation(Pair2(p["dilation"][0], p["dilation"][1]));
}

TEST_F(DnnLayers, DeformConvV2WithMaskBiasAndComputedOffsets) {
  const Fixture fx = case_("deform_dcnv2");
  const auto y = run(fx, {"X"}, {"Y", "offset", "mask"});
  EXPECT_TENSOR_NEAR(y.at("offset"), fx.tensor("offset"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(y.at("mask"), fx.tensor("mask"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(y.at("Y"), fx.tensor("Y"), test::Tolerance{});
  const Tensor direct = F::deform_conv2d(fx.tensor("X"), fx.tensor("offset"), fx.tensor("W"),
                                         fx.tensor("B"), fx.tensor("mask"), deform_options(fx));
  EXPECT_TENSOR_NEAR(direct, fx.tensor("Y"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(y.at("Y"), direct, test::Tolerance{});
}

TEST_F(DnnLayers, DeformConvV1WithoutBiasOrMask) {
  const Fixture fx = case_("deform_dcnv1");
  const auto y = run(fx, {"X", "offset"}, {"Y"});
  const Tensor direct = F::deform_conv2d(fx.tensor("X"), fx.tensor("offset"), fx.tensor("W"), {},
                                         {}, deform_options(fx));
  EXPECT_TENSOR_NEAR(y.at("Y"), fx.tensor("Y"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(direct, fx.tensor("Y"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(y.at("Y"), direct, test::Tolerance{});
}

// OpenCV 4.6 looks every non-connected input up among the constants, including the empty name
// of an omitted optional input, before the layer exists: (X, W, offset, "", mask) cannot be
// imported. The documented workaround (an explicit zero bias) gives torch's no-bias result.
TEST_F(DnnLayers, DeformConvEmptyBiasNameIsRejectedByImporterAndZeroBiasWorks) {
  const std::string err = error_of(case_("deform_empty_bias"), {"X", "offset", "mask"});
  EXPECT_NE(err.find("not found in const blobs"), std::string::npos) << err;
  const Fixture fx = case_("deform_zero_bias");
  const auto y = run(fx, {"X", "offset", "mask"}, {"Y"});
  EXPECT_TENSOR_NEAR(y.at("Y"), fx.tensor("Y"), test::Tolerance{});
}

// The trained tutorial STN classifier (assets/weights/stn_digits.safetensors) exported as
// assets/models/stn_digits.onnx: cv::dnn with the custom layers, torch and cvattn's StnClassifier
// agree on four bundled digits.
TEST_F(DnnLayers, TrainedStnDigitsModelMatchesTorchAndStnClassifier) {
  const Fixture fx = case_("stn_digits");
  cv::dnn::Net net = cv::dnn::readNetFromONNX(CVATTN_ASSETS_DIR "/models/stn_digits.onnx");
  const auto stn = StnClassifier::from_state_dict(
      io::load_safetensors(CVATTN_ASSETS_DIR "/weights/stn_digits.safetensors"));
  const Tensor x = fx.tensor("X");
  for (std::int64_t i = 0; i < x.dim(0); ++i) {
    SCOPED_TRACE(i);
    const Tensor xi = x.slice0(i, i + 1).clone();
    net.setInput(xi.to_mat(), "X");
    std::vector<cv::Mat> mats;
    net.forward(mats, std::vector<cv::String>{"logprobs", "warped", "theta"});
    const Attended direct = stn->forward_with_maps(xi);
    const Tensor logprobs = fx.tensor("logprobs").slice0(i, i + 1);
    const Tensor warped = fx.tensor("warped").slice0(i, i + 1);
    EXPECT_TENSOR_NEAR(Tensor(mats[0].clone()), logprobs, test::Tolerance{});
    EXPECT_TENSOR_NEAR(Tensor(mats[1].clone()), warped, test::Tolerance{});
    EXPECT_TENSOR_NEAR(Tensor(mats[2].clone()), fx.tensor("theta").slice0(i, i + 1),
                       test::Tolerance{});
    EXPECT_TENSOR_NEAR(direct.output, logprobs, test::Tolerance{});
    EXPECT_TENSOR_NEAR(direct.maps.at("output"), warped, test::Tolerance{});
  }
}

// Constant operands reach the layers as blobs: AffineGrid's size from a Constant node, and a
// GridSample grid given as an initializer.
TEST_F(DnnLayers, ConstantSizeNodeAndConstantGrid) {
  const Fixture fx = case_("constant_operands");
  const auto y = run(fx, {"X", "theta"}, {"Y", "Y_fixed"});
  EXPECT_TENSOR_NEAR(y.at("Y"), fx.tensor("Y"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(y.at("Y_fixed"), fx.tensor("Y_fixed"), test::Tolerance{});
}

TEST_F(DnnLayers, LayersAreNamedAfterTheOnnxNode) {
  cv::dnn::Net net = cv::dnn::readNetFromONNX(case_("stn_theta").path("model.onnx"));
  EXPECT_EQ(net.getLayer("onnx_node!affine")->type, "AffineGrid");
  EXPECT_EQ(net.getLayer("onnx_node!sample")->type, "GridSample");
}

TEST_F(DnnLayers, UnregisteredOpsFailInTheImporter) {
  dnn::unregisterLayers();
  const std::string err = error_of(case_("grid_sample"), {"X", "grid"});
  dnn::registerLayers();
  EXPECT_NE(err.find("Can't create layer"), std::string::npos) << err;
  EXPECT_EQ(error_of(case_("grid_sample"), {"X", "grid"}), "");
}

TEST_F(DnnLayers, BadAttributesGiveClearErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"bad_gs_mode", "trilinear"},
      {"bad_gs_padding", "mirror"},
      {"bad_affine_size", "theta must be [N, 3, 4]"},
      {"bad_affine_huge", "over the allocation cap"},
      {"bad_deform_pads",
       "offset must be [1, 18, 4, 5], got [1, 18, 3, 4]"},  // pads [1, 1, 0, 0] are valid now
      {"bad_deform_group", "group = 3"},
  };
  for (const auto& [name, needle] : cases) {
    SCOPED_TRACE(name);
    const std::string err = error_of(case_(name), {});
    EXPECT_NE(err.find(needle), std::string::npos) << err;
    EXPECT_NE(err.find("cvattn::dnn"), std::string::npos) << err;
  }
}

TEST_F(DnnLayers, MismatchedInputAtForwardThrows) {
  const Fixture fx = case_("grid_sample");
  cv::dnn::Net net = cv::dnn::readNetFromONNX(fx.path("model.onnx"));
  const Tensor x = fx.tensor("X");
  const Tensor grid = Tensor::zeros({3, 4, 4, 2});  // batch 3 against X's 2
  net.setInput(x.to_mat(), "X");
  net.setInput(grid.to_mat(), "grid");
  try {
    net.forward();
    FAIL() << "expected cv::Exception";
  } catch (const cv::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("grid must be [N, Ho, Wo, 2]"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cvattn
