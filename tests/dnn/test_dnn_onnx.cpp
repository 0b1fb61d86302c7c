// ONNX through OpenCV, the export paths users hit (issue 21): models exported from PyTorch 1.13
// with tools/onnx_export.py at a dynamic batch (tests/fixtures/onnx_export.py), other producers'
// spellings and volumetric ops (tests/fixtures/onnx_alias.py), malformed attributes, and
// intermediate outputs of an imported net drawn with cvattn::viz.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>

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

}  // namespace
}  // namespace cvattn
