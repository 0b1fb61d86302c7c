// End-to-end tests of `cvattn run timm_model` (CLI.md "Whole networks") against timm's outputs
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
#include "support/model_weights.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using Result = test::CliResult;

Shape shape_of(const nlohmann::json& j) {
  Shape s;
  for (const auto& d : j) s.push_back(d.get<std::int64_t>());
  return s;
}


class CliModels : public test::CliTest {
 protected:
  // Writes the case's generated weights (with num_batches_tracked, as timm's state_dict has
  // them) and input; returns " --in input=... --weights ...".
  std::string prepare(const test::Fixture& fx, const std::string& model_name = "") {
    const auto& p = fx.params();
    const std::string name = model_name.empty() ? p["model_name"].get<std::string>() : model_name;
    const auto skeleton = models::build(p["model_name"], p["num_classes"].get<std::int64_t>());
    StateDict dict = test::generated_state_dict(*skeleton, p["seed"].get<std::uint64_t>()).dict;
    dict.set("bn1.num_batches_tracked", Tensor::zeros({}), /*integer=*/true);
    io::save_safetensors(path("w.safetensors"), dict);
    io::write_npy(path("x.npy"), test::generated("input", shape_of(p["input_shape"]),
                                                 p["seed"].get<std::uint64_t>()));
    return " --in input=" + path("x.npy") + " --weights " + path("w.safetensors") +
           " --set model_name=" + name;
  }
};

TEST_F(CliModels, MatchesTimm) {
  for (const char* name : {"models/seresnet18_40x48_n2_c10", "models/skresnet18_72x56_n1",
                           "models/ecaresnet26t_64x64_n2"}) {
    SCOPED_TRACE(name);
    const auto fx = test::fixture(name);
    std::string outs = " --out output=" + path("out.npy") + " --out features=" +
                       path("features.npy") + " --out cam=" + path("cam.npy");
    const auto saved = fx.params()["saved_maps"];
    for (std::size_t i = 0; i < saved.size(); ++i) {
      outs += " --out " + saved[i].get<std::string>() + "=" + path("map" + std::to_string(i) + ".npy");
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
                               "cam,<path>\tsettings: model_name=REQUIRED(resnet18|"));
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
