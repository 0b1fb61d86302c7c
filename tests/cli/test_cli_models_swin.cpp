// `cvattn run timm_model` (docs/cli.md "Whole networks") on swin_tiny_patch4_window7_224 and
// resnest14d against timm's outputs in tests/fixtures/models_swin/ (tests/fixtures/models_swin.py),
// with the weights generated from each case's seed and written as a .safetensors file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "cvattn/functional/tensor_ops.hpp"
#include "cvattn/io/npy.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/models/timm.hpp"
#include "support/cli.hpp"
#include "support/fixtures.hpp"
#include "support/model_fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using Result = test::CliResult;

class CliModelsSwin : public test::CliTest {
 protected:
  // Writes the case's generated weights and input; returns " --in input=... --weights ...".
  std::string prepare(const test::Fixture& fx) {
    io::save_safetensors(path("w.safetensors"), test::weights_for(fx));
    io::write_npy(path("x.npy"), test::input_for(fx));
    return " --in input=" + path("x.npy") + " --weights " + path("w.safetensors") +
           " --set model_name=" + fx.params()["model_name"].get<std::string>();
  }

  void expect_outputs(const test::Fixture& fx) {
    for (const char* t : {"output", "features", "cam"}) {
      const Tensor ref = fx.tensor(t);
      EXPECT_TENSOR_NEAR(io::read_npy(path(std::string(t) + ".npy")), ref,
                         test::network_tolerance(ref))
          << t;
    }
  }
};

TEST_F(CliModelsSwin, SwinMatchesTimm) {
  const auto fx = test::fixture("models_swin/swin_tiny_patch4_window7_224_224x224_n2");
  const std::string map = "layers.0.blocks.1.attn.attention";
  const Result r = run("run timm_model" + prepare(fx) + " --out output=" + path("output.npy") +
                       " --out features=" + path("features.npy") + " --out cam=" + path("cam.npy") +
                       " --out " + map + "=" + path("map.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
  expect_outputs(fx);
  // [N * windows, heads, 49, 49] = [128, 3, 49, 49], the shift mask applied.
  const Tensor a = io::read_npy(path("map.npy"));
  ASSERT_EQ(a.shape(), (Shape{128, 3, 49, 49}));
  const Tensor mean = fx.tensor(map + "_mean");
  EXPECT_TENSOR_NEAR(functional::mean(a, {2}), mean, test::network_tolerance(mean));
  io::write_npy(path("small.npy"), Tensor::zeros({1, 3, 112, 112}));
  expect_input_error(
      run("run timm_model --in input=" + path("small.npy") + " --weights " + path("w.safetensors") +
          " --set model_name=swin_tiny_patch4_window7_224 --out output=" + path("o.npy")),
      "timm's default strict img_size");
}

TEST_F(CliModelsSwin, ResNestMatchesTimm) {
  const auto fx = test::fixture("models_swin/resnest14d_72x56_n2");
  const std::string map = "layer2.0.conv2.attention";
  const Result r = run("run timm_model" + prepare(fx) + " --out output=" + path("output.npy") +
                       " --out features=" + path("features.npy") + " --out cam=" + path("cam.npy") +
                       " --out " + map + "=" + path("map.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_outputs(fx);
  const Tensor ref = fx.tensor(map);
  EXPECT_TENSOR_NEAR(io::read_npy(path("map.npy")), ref, test::network_tolerance(ref));
}

TEST_F(CliModelsSwin, ListNamesTheModels) {
  const Result r = run("list");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* name : {"swin_tiny_patch4_window7_224", "resnest14d", "resnest26d", "resnest50d",
                           "resnest50d_4s2x40d", "resnest50d_1s4x24d"}) {
    EXPECT_THAT(r.out, HasSubstr(name));
  }
}

}  // namespace
}  // namespace cvattn
