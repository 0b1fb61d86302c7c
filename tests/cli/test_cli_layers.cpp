// End-to-end tests of `cvattn run layer_norm|group_norm|gelu|silu|hardswish|hardsigmoid|mish|
// interpolate` (docs/cli.md, second round) against the PyTorch fixtures in
// tests/fixtures/layers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cvattn/io/npy.hpp"
#include "support/cli.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class CliLayers : public test::CliTest {
 protected:
  void expect_ok(const test::CliResult& r, const std::string& what) {
    ASSERT_EQ(r.exit_code, 0) << what << ": " << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "");
  }
  void expect_input_error(const test::CliResult& r, const std::string& text) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, StartsWith("cvattn: error: "));
    EXPECT_THAT(r.err, HasSubstr(text));
  }
  // " --in weight=... --in bias=..." for the tensors the case has.
  static std::string affine_inputs(const test::Fixture& fx) {
    std::string s;
    for (const char* name : {"weight", "bias"}) {
      if (fx.has(name))
        s += std::string(" --in ") + name + "=" + fx.path(std::string(name) + ".npy");
    }
    return s;
  }
  static std::string csv(const nlohmann::json& list) {
    std::string s;
    for (const auto& v : list) s += (s.empty() ? "" : ",") + v.dump();
    return s;
  }
};

TEST_F(CliLayers, ActivationsMatchTorch) {
  const std::vector<std::pair<std::string, std::string>> ops = {
      {"gelu", "gelu"},
      {"gelu_tanh", "gelu --set approximate=tanh"},
      {"silu", "silu"},
      {"hardswish", "hardswish"},
      {"hardsigmoid", "hardsigmoid"},
      {"mish", "mish"}};
  for (const auto& [name, command] : ops) {
    const auto fx = test::fixture("layers/act_" + name);
    const auto r = run("run " + command + " --in input=" + fx.path("input.npy") +
                       " --out output=" + path("output.npy"));
    expect_ok(r, name);
    EXPECT_TENSOR_NEAR(io::read_npy(path("output.npy")), fx.tensor("output"), test::Tolerance{})
        << name;
  }
}

TEST_F(CliLayers, LayerNormMatchesTorch) {
  for (const auto& fx : test::fixtures_in("layers", "ln_")) {
    std::string command = "run layer_norm --in input=" + fx.path("input.npy") + affine_inputs(fx) +
                          " --set eps=" + fx.params()["eps"].dump();
    // normalized_shape is given where no weight tells it, and also in one case with a weight.
    if (!fx.has("weight") || fx.name() == "ln_d2") {
      command += " --set normalized_shape=" + csv(fx.params()["normalized_shape"]);
    }
    const auto r = run(command + " --out output=" + path("output.npy"));
    expect_ok(r, fx.name());
    EXPECT_TENSOR_NEAR(io::read_npy(path("output.npy")), fx.tensor("output"), test::Tolerance{})
        << fx.name();
  }
}

TEST_F(CliLayers, GroupNormMatchesTorch) {
  for (const auto& fx : test::fixtures_in("layers", "gn_")) {
    const auto r = run("run group_norm --in input=" + fx.path("input.npy") + affine_inputs(fx) +
                       " --set num_groups=" + fx.params()["num_groups"].dump() + " --set eps=" +
                       fx.params()["eps"].dump() + " --out output=" + path("output.npy"));
    expect_ok(r, fx.name());
    EXPECT_TENSOR_NEAR(io::read_npy(path("output.npy")), fx.tensor("output"), test::Tolerance{})
        << fx.name();
  }
}

TEST_F(CliLayers, InterpolateMatchesTorch) {
  int runs = 0;
  for (const char* name : {"interp_nearest", "interp_bilinear", "interp_bilinear_align",
                           "interp_bicubic", "interp_bicubic_align"}) {
    const auto fx = test::fixture(std::string("layers/") + name);
    const std::string mode = fx.params()["mode"].get<std::string>();
    int i = 0;
    for (const auto& cfg : fx.params()["configs"]) {
      const int index = i++;
      if (cfg.value("recompute_scale_factor", false)) continue;  // not a CLI setting
      if (index % 3 != 0 && index != 7 && index != 9) continue;  // a spread of sizes and scales
      std::string command =
          "run interpolate --in input=" + fx.path("input.npy") + " --set mode=" + mode;
      if (cfg.contains("size")) {
        command += " --set size=" + csv(cfg["size"]);
      } else {
        command += " --set scale_factor=" + csv(cfg["scale_factor"]);
      }
      if (mode != "nearest")
        command += " --set align_corners=" + test::bool_arg(cfg["align_corners"]);
      const auto r = run(command + " --out output=" + path("output.npy"));
      expect_ok(r, std::string(name) + " " + cfg.dump());
      EXPECT_TENSOR_NEAR(io::read_npy(path("output.npy")), fx.tensor("o" + std::to_string(index)),
                         test::Tolerance{})
          << name << " " << cfg.dump();
      ++runs;
    }
  }
  EXPECT_GE(runs, 20);
}

TEST_F(CliLayers, ReportsMissingAndContradictorySettings) {
  const auto fx = test::fixture("layers/interp_bilinear");
  const std::string in = " --in input=" + fx.path("input.npy");
  expect_input_error(run("run interpolate" + in + " --set size=3,3 --set scale_factor=2"),
                     "give only one of --set size and --set scale_factor");
  expect_input_error(run("run interpolate" + in), "needs --set size=h,w or --set scale_factor");
  expect_input_error(run("run interpolate" + in + " --set size=3 --set align_corners=true"),
                     "align_corners applies to modes bilinear and bicubic only");
  expect_input_error(run("run interpolate" + in + " --set size=3 --set mode=area"),
                     "setting mode='area' is not one of nearest, bilinear, bicubic");
  expect_input_error(run("run interpolate" + in + " --set scale_factor=fast"),
                     "setting scale_factor='fast' is not a number");
  expect_input_error(run("run interpolate" + in + " --set scale_factor=0.01"),
                     "input and output sizes must be greater than 0");
  const auto gn = test::fixture("layers/gn_g2");
  expect_input_error(run("run group_norm --in input=" + gn.path("input.npy")),
                     "needs --set num_groups=");
  expect_input_error(
      run("run group_norm --in input=" + gn.path("input.npy") + " --set num_groups=4"),
      "num_groups (4) must be positive and divide the channels (6)");
  const auto ln = test::fixture("layers/ln_d1");
  expect_input_error(run("run layer_norm --in input=" + ln.path("input.npy")),
                     "needs --set normalized_shape=");
  expect_input_error(run("run layer_norm --in input=" + ln.path("input.npy") +
                         " --in weight=" + ln.path("weight.npy") + " --set normalized_shape=5,7"),
                     "normalized_shape=[5, 7] contradicts tensor 'weight' [7]");
  const auto act = test::fixture("layers/act_gelu");
  expect_input_error(run("run gelu --in input=" + act.path("input.npy") + " --set approximate=erf"),
                     "setting approximate='erf' is not one of none, tanh");
  expect_input_error(run("run silu --in input=" + act.path("input.npy") + " --set inplace=true"),
                     "op 'silu' has no setting 'inplace'");
  expect_input_error(run("run mish"), "input");
}

TEST_F(CliLayers, RepeatPrintsOneJsonLine) {
  const auto fx = test::fixture("layers/gn_large_group");
  const auto r = run("run group_norm --in input=" + fx.path("input.npy") +
                     " --set num_groups=2 --repeat 3 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("{\"op\":\"group_norm\",\"repeat\":3,\"threads\":1,"));
}

}  // namespace
}  // namespace cvattn
