// `cvattn run timm_model` (docs/cli.md "Whole networks") on the MobileNetV3 and EfficientNet
// families, against timm's outputs in tests/fixtures/models_mobile/ (models_mobile.py). The
// weights are generated from each case's seed and written as a .safetensors file, as a user's
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

class CliMobileModels : public test::CliTest {
 protected:
  // The case's weights (with a num_batches_tracked, as timm's state_dict has them) and input;
  // returns " --in input=... --weights ... --set model_name=...".
  std::string prepare(const test::Fixture& fx) {
    StateDict dict = test::weights_for(fx);
    dict.set("bn1.num_batches_tracked", Tensor::zeros({}), /*integer=*/true);
    io::save_safetensors(path("w.safetensors"), dict);
    io::write_npy(path("x.npy"), test::input_for(fx));
    return " --in input=" + path("x.npy") + " --weights " + path("w.safetensors") +
           " --set model_name=" + fx.params()["model_name"].get<std::string>();
  }

  // Runs the case asking for the logits, features, the CAM when the head has one and every
  // map, and compares each file with timm's.
  void expect_matches(const std::string& case_name) {
    SCOPED_TRACE(case_name);
    const auto fx = test::fixture("models_mobile/" + case_name);
    const bool cam = fx.params()["has_cam"].get<bool>();
    std::string outs = " --out output=" + path("out.npy") + " --out features=" + path("f.npy");
    if (cam) outs += " --out cam=" + path("cam.npy");
    const auto maps = fx.params()["saved_maps"];
    for (std::size_t i = 0; i < maps.size(); ++i) {
      outs += " --out " + maps[i].get<std::string>() + "=" + path("m" + std::to_string(i) + ".npy");
    }
    const std::string io = prepare(fx);
    const Result r = run("run timm_model" + io + outs);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "");
    std::vector<std::pair<std::string, std::string>> files = {{"out", "output"}, {"f", "features"}};
    if (cam) files.emplace_back("cam", "cam");
    for (std::size_t i = 0; i < maps.size(); ++i) {
      files.emplace_back("m" + std::to_string(i), maps[i].get<std::string>());
    }
    for (const auto& [file, key] : files) {
      const Tensor ref = fx.tensor(key);
      EXPECT_TENSOR_NEAR(io::read_npy(path(file + ".npy")), ref, test::network_tolerance(ref))
          << key;
    }
    if (!cam) {
      expect_input_error(run("run timm_model" + io + " --out cam=" + path("cam.npy")),
                         "produced no 'cam'");
    }
  }
};

TEST_F(CliMobileModels, MobileNetV3MatchesTimm) {
  expect_matches("mobilenetv3_small_100_65x49_n2");
}

TEST_F(CliMobileModels, EfficientNetMatchesTimm) {
  expect_matches("efficientnet_cc_b0_4e_65x49_n2");
}

TEST_F(CliMobileModels, ListNamesTheModels) {
  const Result r = run("list");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* name : {"mobilenetv3_small_100", "mobilenetv3_large_100", "efficientnet_b0",
                           "efficientnet_cc_b0_4e"}) {
    EXPECT_THAT(r.out, HasSubstr(name));
  }
}

TEST_F(CliMobileModels, MismatchedWeightsExitTwo) {
  const auto fx = test::fixture("models_mobile/mobilenetv3_small_100_65x49_n2");
  prepare(fx);
  expect_input_error(
      run("run timm_model --in input=" + path("x.npy") + " --weights " + path("w.safetensors") +
          " --set model_name=mobilenetv3_large_100" + " --out output=" + path("out.npy")),
      "models::create('mobilenetv3_large_100')");
  EXPECT_FALSE(std::filesystem::exists(path("out.npy")));
}

}  // namespace
}  // namespace cvattn
