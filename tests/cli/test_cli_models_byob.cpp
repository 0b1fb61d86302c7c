// End-to-end `cvattn run timm_model` for timm's self-attention ByobNets (botnet26t_256,
// halonet26t, lambda_resnet26t) against timm's outputs in tests/fixtures/models_byob/
// (tests/fixtures/models_byob.py); the weights are generated from each case's seed and written
// as a .safetensors file with num_batches_tracked, as timm's state_dict has them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "cvattn/io/npy.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/models/timm.hpp"
#include "support/cli.hpp"
#include "support/fixtures.hpp"
#include "support/map_rows.hpp"
#include "support/model_fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using Result = test::CliResult;

class CliModelsByob : public test::CliTest {
 protected:
  // Writes the case's weights and input; returns " --in input=... --weights ... --set ...".
  std::string prepare(const test::Fixture& fx) {
    StateDict dict = test::weights_for(fx);
    dict.set("stem.conv1.bn.num_batches_tracked", Tensor::zeros({}), /*integer=*/true);
    io::save_safetensors(path("w.safetensors"), dict);
    io::write_npy(path("x.npy"), test::input_for(fx));
    return " --in input=" + path("x.npy") + " --weights " + path("w.safetensors") +
           " --set model_name=" + fx.params()["model_name"].get<std::string>();
  }
};

TEST_F(CliModelsByob, MatchesTimm) {
  for (const char* name :
       {"models_byob/botnet26t_256_256x256_n2", "models_byob/halonet26t_256x256_n2",
        "models_byob/lambda_resnet26t_160x224_n2"}) {
    SCOPED_TRACE(name);
    const auto fx = test::fixture(name);
    std::string outs = " --out output=" + path("out.npy") +
                       " --out features=" + path("features.npy") + " --out cam=" + path("cam.npy");
    const auto saved = fx.params()["saved_maps"];
    for (std::size_t i = 0; i < saved.size(); ++i) {
      outs +=
          " --out " + saved[i].get<std::string>() + "=" + path("map" + std::to_string(i) + ".npy");
    }
    const Result r = run("run timm_model" + prepare(fx) + outs);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "");
    for (const char* t : {"output", "features", "cam"}) {
      const Tensor ref = fx.tensor(t);
      const std::string file = std::string(t) == "output" ? "out" : t;
      EXPECT_TENSOR_NEAR(io::read_npy(path(file + ".npy")), ref, test::network_tolerance(ref)) << t;
    }
    for (std::size_t i = 0; i < saved.size(); ++i) {
      const std::string p = saved[i].get<std::string>();
      const Tensor map = io::read_npy(path("map" + std::to_string(i) + ".npy"));
      EXPECT_EQ(map.shape(), test::shape_of(fx.params()["map_shapes"][p])) << p;
      const Tensor ref = fx.tensor(p + "_rows");
      const auto rows = fx.params()["map_rows"][p].get<std::vector<std::int64_t>>();
      EXPECT_TENSOR_NEAR(test::rows_of_map(map, rows), ref, test::network_tolerance(ref)) << p;
    }
  }
}

TEST_F(CliModelsByob, ListNamesTheModels) {
  const Result r = run("list");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* name : {"botnet26t_256", "halonet26t", "lambda_resnet26t"}) {
    EXPECT_THAT(r.out, HasSubstr(name));
  }
}

TEST_F(CliModelsByob, InputErrorsExitTwo) {
  const auto fx = test::fixture("models_byob/botnet26t_256_256x256_n2");
  const std::string io = prepare(fx);
  io::write_npy(path("small.npy"), Tensor::zeros({1, 3, 224, 224}));
  expect_input_error(
      run("run timm_model --in input=" + path("small.npy") + " --weights " + path("w.safetensors") +
          " --set model_name=botnet26t_256 --out output=" + path("out.npy")),
      "the input size is fixed at 256x256");
  // BoTNet weights for HaloNet.
  expect_input_error(
      run("run timm_model --in input=" + path("x.npy") + " --weights " + path("w.safetensors") +
          " --set model_name=halonet26t --out output=" + path("out.npy")),
      "missing 'stages.2.1.self_attn.q.weight', 'stages.2.1.self_attn.kv.weight'");
  expect_input_error(
      run("run timm_model" + io + " --out stages.2.0.self_attn.attention=" + path("m.npy")),
      "produced no 'stages.2.0.self_attn.attention'");
  EXPECT_FALSE(std::filesystem::exists(path("out.npy")));
}

}  // namespace
}  // namespace cvattn
