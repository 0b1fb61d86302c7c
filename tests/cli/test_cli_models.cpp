// End-to-end tests of `cvattn run timm_model` (docs/cli.md "Whole networks") against timm's outputs
// in tests/fixtures/models/ (tests/fixtures/models.py). The weights are generated from each
// case's seed (tests/support/model_weights.hpp) and written as a .safetensors file, as a user's
// exported state_dict would be.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

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

class CliModels : public test::CliTest {
 protected:
  // Writes the case's generated weights (with num_batches_tracked, as timm's state_dict has
  // them) and input; returns " --in input=... --weights ...".
  std::string prepare(const test::Fixture& fx, const std::string& model_name = "") {
    const auto& p = fx.params();
    const std::string name = model_name.empty() ? p["model_name"].get<std::string>() : model_name;
    StateDict dict = test::weights_for(fx);
    if (dict.contains("bn1.running_mean")) {
      dict.set("bn1.num_batches_tracked", Tensor::zeros({}), /*integer=*/true);
    }
    io::save_safetensors(path("w.safetensors"), dict);
    io::write_npy(path("x.npy"), test::input_for(fx));
    return " --in input=" + path("x.npy") + " --weights " + path("w.safetensors") +
           " --set model_name=" + name;
  }
};

TEST_F(CliModels, MatchesTimm) {
  for (const char* name : {"models/seresnet18_40x48_n2_c10", "models/skresnet18_72x56_n1",
                           "models/ecaresnet26t_64x64_n2"}) {
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
      const Tensor ref = fx.tensor(saved[i].get<std::string>());
      EXPECT_TENSOR_NEAR(io::read_npy(path("map" + std::to_string(i) + ".npy")), ref,
                         test::network_tolerance(ref))
          << saved[i];
    }
  }
}

TEST_F(CliModels, VitOutputsRolloutAndMaps) {
  const auto fx = test::fixture("models/deit_tiny_distilled_patch16_224_224x224_n2");
  const std::string io = prepare(fx);
  Result r = run("run timm_model" + io + " --out output=" + path("out.npy") +
                 " --out features=" + path("f.npy") + " --out rollout=" + path("roll.npy") +
                 " --out blocks.11.attn.attention=" + path("a11.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& [file, ref] : {std::pair<std::string, std::string>{"out", "output"},
                                  {"f", "features"},
                                  {"roll", "rollout"}}) {
    const Tensor expected = fx.tensor(ref);
    EXPECT_TENSOR_NEAR(io::read_npy(path(file + ".npy")), expected,
                       test::network_tolerance(expected))
        << ref;
  }
  // [N, heads, T, T] = [2, 3, 198, 198]; the cls row of head 0 against timm's.
  const Tensor a11 = io::read_npy(path("a11.npy"));
  ASSERT_EQ(a11.shape(), (Shape{2, 3, 198, 198}));
  const Tensor rows = fx.tensor("blocks.11.attn.attention_rows");  // rows 0, 1, 100, 196
  for (std::int64_t j = 0; j < 198; ++j) EXPECT_NEAR(a11[j], rows[j], 2e-4) << j;
  r = run("run timm_model" + io + " --set head_fusion=max --out rollout=" + path("max.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor max_ref = fx.tensor("rollout_max_0");
  EXPECT_TENSOR_NEAR(io::read_npy(path("max.npy")), max_ref, test::network_tolerance(max_ref));
  expect_input_error(run("run timm_model" + io + " --out cam=" + path("cam.npy")),
                     "produced no 'cam'");
  expect_input_error(
      run("run timm_model" + io + " --set discard_ratio=1.5" + " --out rollout=" + path("x.npy")),
      "discard_ratio must be in [0, 1), got 1.5");
}

TEST_F(CliModels, RepeatPrintsOneJsonLine) {
  const auto fx = test::fixture("models/seresnet18_40x48_n2_c10");
  const Result r = run("run timm_model" + prepare(fx) + " --repeat 2 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_repeat_report(r, "timm_model", 2);
}

TEST_F(CliModels, ListNamesTheModels) {
  Result r = run("list");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("timm_model\tinputs: input,--weights\toutputs: output,features,"
                               "cam,rollout,<path>\tsettings: model_name=REQUIRED(resnet18|"));
  for (const auto& name : models::supported_models()) EXPECT_THAT(r.out, HasSubstr(name));
  r = run("run timm_model --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("--out <path>=FILE.npy"));
}

TEST_F(CliModels, InputErrorsExitTwo) {
  const auto fx = test::fixture("models/seresnet18_40x48_n2_c10");
  const std::string io = prepare(fx);
  const std::string out = " --out output=" + path("out.npy");
  expect_input_error(run("run timm_model --in input=" + path("x.npy") + " --weights " +
                         path("w.safetensors") + " --set model_name=resnet19" + out),
                     "model_name='resnet19' is not one of resnet18");
  // seresnet18 weights for resnet18: the SE keys are unexpected.
  expect_input_error(run("run timm_model --in input=" + path("x.npy") + " --weights " +
                         path("w.safetensors") + " --set model_name=resnet18" + out),
                     "unexpected 'layer1.0.se.fc1.bias', 'layer1.0.se.fc1.weight'");
  expect_input_error(run("run timm_model" + io + " --out layer9.0.se.attention=" + path("m.npy")),
                     "produced no 'layer9.0.se.attention'");
  io::write_npy(path("bad.npy"), Tensor::zeros({1, 4, 8, 8}));
  expect_input_error(run("run timm_model --in input=" + path("bad.npy") + " --weights " +
                         path("w.safetensors") + " --set model_name=seresnet18" + out),
                     "expected shape [*, 3, *, *], got [1, 4, 8, 8]");
  expect_input_error(run("run timm_model --in input=" + path("x.npy") + " --weights " +
                         path("w.safetensors") + out),
                     "model_name");
  EXPECT_FALSE(std::filesystem::exists(path("out.npy")));
}

}  // namespace
}  // namespace cvattn
