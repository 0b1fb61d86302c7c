// ONNX through OpenCV, the export paths users hit (issue 21): models exported from PyTorch 1.13
// with tools/onnx_export.py at a dynamic batch (tests/fixtures/onnx_export.py), other producers'
// spellings and volumetric ops (tests/fixtures/onnx_alias.py), malformed attributes, and
// intermediate outputs of an imported net drawn with cvattn::viz.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "cvattn/dnn/layers.hpp"
#include "cvattn/functional/deform_conv.hpp"
#include "cvattn/functional/sampling.hpp"
#include "cvattn/viz/viz.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

namespace F = functional;
using test::Fixture;

class DnnOnnx : public ::testing::Test {
 protected:
  void SetUp() override {
    dnn::registerLayers();
#if defined(__SANITIZE_THREAD__)
    cv::setNumThreads(1);  // OpenCV's TBB workers are not instrumented
#endif
  }

  // Feeds the named tensors, returns the named outputs.
  static std::map<std::string, Tensor> run(cv::dnn::Net& net,
                                           const std::map<std::string, Tensor>& in,
                                           const std::vector<std::string>& out) {
    for (const auto& [name, t] : in) net.setInput(t.to_mat(), name);
    std::vector<cv::Mat> mats;
    net.forward(mats, std::vector<cv::String>(out.begin(), out.end()));
    std::map<std::string, Tensor> result;
    for (std::size_t i = 0; i < out.size(); ++i) result.emplace(out[i], Tensor(mats[i].clone()));
    return result;
  }

  // The cv::Exception text of reading, and if that works running, a model ("" if both work).
  static std::string error_of(const Fixture& fx, const std::vector<std::string>& inputs) {
    try {
      cv::dnn::Net net = cv::dnn::readNetFromONNX(fx.path("model.onnx"));
      std::vector<Tensor> keep;
      for (const auto& name : inputs) {
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

// ---------------------------------------------------------------------------------------------
// Exported with tools/onnx_export.py, dynamic batch: one net, every batch size, vs PyTorch.

TEST_F(DnnOnnx, ExportedDynamicBatchModelsRunAtEveryBatch) {
  const auto cases = test::fixtures_in("onnx_export");
  ASSERT_EQ(cases.size(), 7u);
  for (const Fixture& fx : cases) {
    SCOPED_TRACE(fx.name());
    cv::dnn::Net net = cv::dnn::readNetFromONNX(fx.path("model.onnx"));
    const std::vector<int> batches = fx.params().at("batches");
    ASSERT_EQ(batches, (std::vector<int>{1, 2, 5}));
    // Up and down again: the layers take N from their inputs at every reshape.
    for (const int b : {1, 2, 5, 1, 2}) {
      SCOPED_TRACE("batch " + std::to_string(b));
      const std::string n = "_n" + std::to_string(b);
      const auto y = run(net, {{"X", fx.tensor("X" + n)}}, {"Y"});
      EXPECT_TENSOR_NEAR(y.at("Y"), fx.tensor("Y" + n), test::Tolerance{});
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Other producers' spellings, GridSample-20 words, volumetric ops, asymmetric pads.

Fixture alias(const std::string& name) { return test::fixture("onnx_alias/" + name); }

TEST_F(DnnOnnx, GridSampleSpellingsOfOtherProducersAndOpsets) {
  for (const char* name : {"com_microsoft_gridsample", "mmcv_grid_sampler", "gridsample20_words"}) {
    SCOPED_TRACE(name);
    const Fixture fx = alias(name);
    cv::dnn::Net net = cv::dnn::readNetFromONNX(fx.path("model.onnx"));
    const std::vector<std::string> outs = fx.params().at("outputs");
    const auto y = run(net, {{"X", fx.tensor("X")}, {"grid", fx.tensor("grid")}}, outs);
    for (const auto& out : outs) {
      SCOPED_TRACE(out);
      EXPECT_TENSOR_NEAR(y.at(out), fx.tensor(out), test::Tolerance{});
    }
  }
  // OpenCV 4.6 names a custom-domain layer "<domain>.<op_type>".
  cv::dnn::Net net = cv::dnn::readNetFromONNX(alias("com_microsoft_gridsample").path("model.onnx"));
  EXPECT_EQ(net.getLayer("onnx_node!ms0")->type, "com.microsoft.GridSample");
  net = cv::dnn::readNetFromONNX(alias("mmcv_grid_sampler").path("model.onnx"));
  EXPECT_EQ(net.getLayer("onnx_node!mm0")->type, "mmcv.grid_sampler");
}

TEST_F(DnnOnnx, VolumetricGridSampleEveryModePaddingAndAlignCorners) {
  const Fixture fx = alias("gridsample_5d");
  cv::dnn::Net net = cv::dnn::readNetFromONNX(fx.path("model.onnx"));
  const std::vector<std::string> outs = fx.params().at("outputs");
  ASSERT_EQ(outs.size(), 12u);
  const auto y = run(net, {{"X", fx.tensor("X")}, {"grid", fx.tensor("grid")}}, outs);
  for (const auto& out : outs) {
    SCOPED_TRACE(out);
    EXPECT_TENSOR_NEAR(y.at(out), fx.tensor(out), test::Tolerance{});
  }
}

TEST_F(DnnOnnx, AffineGrid3dFeedsVolumetricGridSample) {
  for (const char* name : {"affine3d_ac0", "affine3d_ac1"}) {
    SCOPED_TRACE(name);
    const Fixture fx = alias(name);
    cv::dnn::Net net = cv::dnn::readNetFromONNX(fx.path("model.onnx"));
    const auto y = run(net, {{"X", fx.tensor("X")}, {"theta", fx.tensor("theta")}}, {"Y", "grid"});
    EXPECT_TENSOR_NEAR(y.at("grid"), fx.tensor("grid"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(y.at("Y"), fx.tensor("Y"), test::Tolerance{});
  }
}

TEST_F(DnnOnnx, DeformConvAsymmetricPadsAndMmcvSpellings) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"deform_asymmetric_pads", {"X", "offset", "mask"}},
      {"mmcv_modulated_deform_conv", {"X", "offset", "mask"}},
      {"mmcv_modulated_deform_conv_nobias", {"X", "offset", "mask"}},
      {"mmcv_deform_conv", {"X", "offset"}},
  };
  for (const auto& [name, inputs] : cases) {
    SCOPED_TRACE(name);
    const Fixture fx = alias(name);
    cv::dnn::Net net = cv::dnn::readNetFromONNX(fx.path("model.onnx"));
    std::map<std::string, Tensor> in;
    for (const auto& i : inputs) in.emplace(i, fx.tensor(i));
    EXPECT_TENSOR_NEAR(run(net, in, {"Y"}).at("Y"), fx.tensor("Y"), test::Tolerance{});
  }
}

// ---------------------------------------------------------------------------------------------
// Malformed attributes and operands: refused with a message naming the node, never a crash.

TEST_F(DnnOnnx, MalformedAttributesAreRefusedNamingTheNode) {
  const auto cases = test::fixtures_in("onnx_alias", "bad_");
  ASSERT_EQ(cases.size(), 25u);
  for (const Fixture& fx : cases) {
    SCOPED_TRACE(fx.name());
    const std::string node = fx.params().at("node");
    const std::string needle = fx.params().at("needle");
    const std::string err = error_of(fx, fx.params().at("inputs"));
    EXPECT_NE(err.find("onnx_node!" + node), std::string::npos) << err;
    EXPECT_NE(err.find(needle), std::string::npos) << err;
  }
}

// ---------------------------------------------------------------------------------------------
// The ONNX backend node tests (tests/fixtures/onnx_node.py converts onnx/onnx's case folders):
// a suite nobody here wrote, through cv::dnn + cvattn.

TEST_F(DnnOnnx, OnnxBackendNodeTestsPass) {
  const auto cases = test::fixtures_in("onnx_node", "test_");
  ASSERT_EQ(cases.size(), 26u);
  int grid_sample = 0, volumetric = 0, affine = 0, deform = 0, ties = 0;
  for (const Fixture& fx : cases) {
    SCOPED_TRACE(fx.name());
    const auto& p = fx.params();
    const std::string op = p.at("op");
    cv::dnn::Net net = cv::dnn::readNetFromONNX(fx.path("model.onnx"));
    std::map<std::string, Tensor> in;
    for (const std::string name : p.at("inputs")) in.emplace(name, fx.tensor(name));
    const std::vector<std::string> outs = p.at("outputs");
    const auto y = run(net, in, outs);
    if (p.value("matches_torch", true)) {
      for (const auto& out : outs) EXPECT_TENSOR_NEAR(y.at(out), fx.tensor(out), test::Tolerance{});
    } else {
      // Volumetric nearest at exact rounding ties: cvattn follows PyTorch 1.13 (half away from
      // zero), ONNX rounds half to even. PyTorch's values everywhere; ONNX's off the ties.
      const Tensor got = y.at("Y"), onnx = fx.tensor("Y"), mask = fx.tensor("Y_tie_mask");
      EXPECT_TENSOR_NEAR(got, fx.tensor("Y_torch"), test::Tolerance{});
      int differ = 0;
      for (std::int64_t i = 0; i < got.numel(); ++i) {
        if (mask[i] == 0.0f) {
          EXPECT_NEAR(got[i], onnx[i], 1e-4 + 1e-4 * std::abs(onnx[i])) << "element " << i;
        }
        differ += std::abs(got[i] - onnx[i]) > 1e-4f;
      }
      EXPECT_EQ(differ, p.at("disagreeing_elements").get<int>());
      ++ties;
    }
    if (op == "GridSample")
      (fx.name().find("volumetric") != std::string::npos ? volumetric : grid_sample)++;
    affine += op == "AffineGrid";
    deform += op == "DeformConv";
  }
  EXPECT_EQ(grid_sample, 14);
  EXPECT_EQ(ties, 2);  // test_gridsample_volumetric_nearest_align_corners_{0,1}
  EXPECT_EQ(volumetric, 4);
  EXPECT_EQ(affine, 4);  // 2-D and 3-D, both align_corners, `size` made constant
  EXPECT_EQ(deform, 4);
}

// Bicubic with border padding, where ONNX's reference op (run by onnx_node.py) clamps the sample
// point before the taps and PyTorch clamps each tap: cvattn gives PyTorch's values.
TEST_F(DnnOnnx, BicubicBorderFollowsPyTorchNotTheOnnxReference) {
  const auto cases = test::fixtures_in("onnx_node", "reference_bicubic_border_");
  ASSERT_EQ(cases.size(), 2u);
  for (const Fixture& fx : cases) {
    SCOPED_TRACE(fx.name());
    cv::dnn::Net net = cv::dnn::readNetFromONNX(fx.path("model.onnx"));
    const Tensor y = run(net, {{"X", fx.tensor("X")}, {"Grid", fx.tensor("Grid")}}, {"Y"}).at("Y");
    EXPECT_TENSOR_NEAR(y, fx.tensor("Y"), test::Tolerance{});
    const Tensor onnx = fx.tensor("Y_onnx");
    int differ = 0;
    for (std::int64_t i = 0; i < y.numel(); ++i) {
      differ += std::abs(y[i] - onnx[i]) > 1e-4f + 1e-4f * std::abs(onnx[i]);
    }
    EXPECT_EQ(differ, fx.params().at("onnx_differs_from_torch").get<int>());
    EXPECT_GT(differ, 0);
  }
}

// ---------------------------------------------------------------------------------------------
// Attention maps out of an imported net: Net::forward(outs, names) takes intermediate results by
// layer name ("onnx_node!<node name>"), or by the ONNX tensor name for graph outputs; the maps
// are then drawn with cvattn::viz exactly as the same maps computed by cvattn.

TEST_F(DnnOnnx, IntermediateOutputsOfAnImportedNetDrawnWithViz) {
  // The trained STN digits classifier: the AffineGrid node's output (an intermediate, not a
  // graph output) is the transformer's sampling grid.
  const Fixture fx = test::fixture("onnx/stn_digits");
  cv::dnn::Net net = cv::dnn::readNetFromONNX(CVATTN_ASSETS_DIR "/models/stn_digits.onnx");
  const Tensor x = fx.tensor("X").slice0(0, 1).clone();
  net.setInput(x.to_mat(), "X");
  std::vector<cv::Mat> mats;
  net.forward(mats, std::vector<cv::String>{"logprobs", "onnx_node!affine_grid", "warped"});
  ASSERT_EQ(mats.size(), 3u);
  const Tensor grid(mats[1].clone());
  ASSERT_EQ(grid.shape(), Shape({1, 28, 28, 2}));
  EXPECT_TENSOR_NEAR(Tensor(mats[0].clone()), fx.tensor("logprobs").slice0(0, 1),
                     test::Tolerance{});
  // The same grid from theta with cvattn, and the same drawing.
  const Tensor theta = fx.tensor("theta").slice0(0, 1).clone();
  const Tensor direct = F::affine_grid(theta, {1, 1, 28, 28}, false);
  EXPECT_TENSOR_NEAR(grid, direct, test::Tolerance{});
  cv::Mat image;
  x.to_mat().reshape(1, 28).convertTo(image, CV_8U, 255.0);
  cv::cvtColor(image, image, cv::COLOR_GRAY2BGR);
  cv::resize(image, image, {112, 112}, 0, 0, cv::INTER_NEAREST);
  const cv::Mat drawn = viz::draw_grid_outline(image, grid);
  const cv::Mat expected = viz::draw_grid_outline(image, direct);
  ASSERT_EQ(drawn.size(), image.size());
  EXPECT_GT(cv::norm(drawn, image, cv::NORM_L1), 0.0);      // the outline is there
  EXPECT_LE(cv::norm(drawn, expected, cv::NORM_INF), 0.0);  // and where cvattn draws it
  // Graph-output names work too; an unknown name is refused.
  net.forward(mats, std::vector<cv::String>{"warped"});
  EXPECT_TENSOR_NEAR(Tensor(mats[0].clone()), fx.tensor("warped").slice0(0, 1), test::Tolerance{});
  EXPECT_THROW(net.forward(mats, std::vector<cv::String>{"no_such_layer"}), cv::Exception);

  // DCNv2: the offset Conv's output taken by layer name, turned into sampling points.
  const Fixture dcn = test::fixture("onnx/deform_dcnv2");
  cv::dnn::Net dnet = cv::dnn::readNetFromONNX(dcn.path("model.onnx"));
  const Tensor dx = dcn.tensor("X");
  dnet.setInput(dx.to_mat(), "X");
  dnet.forward(mats, std::vector<cv::String>{"onnx_node!offset_conv", "onnx_node!dcn"});
  const Tensor offset(mats[0].clone());
  EXPECT_TENSOR_NEAR(offset, dcn.tensor("offset"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(Tensor(mats[1].clone()), dcn.tensor("Y"), test::Tolerance{});
  const auto options =
      viz::DeformSamplingOptions().stride(Pair2(2, 1)).padding(Pair2(1, 2)).dilation(Pair2(1, 2));
  const std::vector<cv::Point> outputs{{3, 2}, {8, 1}};
  const Tensor positions = viz::deform_sampling_positions(offset, outputs, options);
  EXPECT_TENSOR_NEAR(positions,
                     viz::deform_sampling_positions(dcn.tensor("offset"), outputs, options),
                     test::Tolerance{});
  // Each output pixel's own position: (oy*sh - ph + dh*(kh-1)/2, ox*sw - pw + dw*(kw-1)/2).
  std::vector<float> centre_values;
  for (const cv::Point& o : outputs) {
    centre_values.push_back(float(o.y * 2 - 1 + 1 * (3 - 1) / 2));
    centre_values.push_back(float(o.x * 1 - 2 + 2 * (3 - 1) / 2));
  }
  const Tensor centers = Tensor::from_vector({2, 2}, centre_values);
  const cv::Mat canvas(9 * 8, 11 * 8, CV_8UC3, cv::Scalar::all(255));
  const cv::Mat points = viz::draw_sampling_points(
      canvas, centers, positions, viz::SamplingPointsOptions().input_size({11, 9}));
  EXPECT_GT(cv::norm(points, canvas, cv::NORM_L1), 0.0);
}

// ---------------------------------------------------------------------------------------------
// What OpenCV 4.6's importer cannot do that users meet, and the workarounds (docs/dnn.md).

TEST_F(DnnOnnx, ImporterLimitsAndWorkarounds) {
  // (1) A constant first MatMul operand: parseMatMul asserts the first input is not a constant.
  EXPECT_NE(error_of(alias("limit_matmul_const_first"), {"K"})
                .find("constBlobs.find(node_proto.input(0)) == constBlobs.end()"),
            std::string::npos);
  {  // Workaround: Q K = (K^T Q^T)^T.
    const Fixture fx = alias("limit_matmul_const_first_fixed");
    cv::dnn::Net net = cv::dnn::readNetFromONNX(fx.path("model.onnx"));
    EXPECT_TENSOR_NEAR(run(net, {{"K", fx.tensor("K")}}, {"Y"}).at("Y"), fx.tensor("Y"),
                       test::Tolerance{});
  }
  // (2) A net without graph inputs imports, but forward fails in allocateLayers.
  EXPECT_NE(error_of(alias("limit_no_graph_inputs"), {}).find("!layers[0].outputBlobs.empty()"),
            std::string::npos);
  {  // Workaround: one of the constants (theta) as a graph input, fed with its value.
    const Fixture fx = alias("limit_no_graph_inputs_fixed");
    cv::dnn::Net net = cv::dnn::readNetFromONNX(fx.path("model.onnx"));
    EXPECT_TENSOR_NEAR(run(net, {{"theta", fx.tensor("theta")}}, {"grid"}).at("grid"),
                       fx.tensor("grid"), test::Tolerance{});
  }
  // (3) AffineGrid's size as a graph input: refused by the layer at import.
  EXPECT_NE(error_of(alias("limit_size_graph_input"), {"theta"})
                .find("input 'size' must be a constant initializer"),
            std::string::npos);
  {  // Workaround: the size as an initializer.
    const Fixture fx = alias("limit_size_graph_input_fixed");
    cv::dnn::Net net = cv::dnn::readNetFromONNX(fx.path("model.onnx"));
    EXPECT_TENSOR_NEAR(run(net, {{"theta", fx.tensor("theta")}}, {"grid"}).at("grid"),
                       fx.tensor("grid"), test::Tolerance{});
  }
}

}  // namespace
}  // namespace cvattn
