// End-to-end tests of `cvattn run ese|ceca|ge|gc|lcbam|coord_attn|splat|dynamic_conv|cond_conv`
// (docs/cli.md, second round) against the timm fixtures in tests/fixtures/gates.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cvattn/io/npy.hpp"
#include "cvattn/io/safetensors.hpp"
#include "support/cli.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

class CliGates : public test::CliTest {
 protected:
  // The run command of a fixture: its inputs, weights and --set values, every output asked for.
  std::string command(const std::string& op, const test::Fixture& fx,
                      const std::vector<std::string>& outputs) {
    std::string args = "run " + op + " --in input=" + fx.path("input.npy");
    if (fx.has("routing_weights")) {
      args += " --in routing_weights=" + fx.path("routing_weights.npy");
    }
    args += " --weights " + fx.path("weights.safetensors");
    for (const auto& [key, value] : fx.params().at("set").items()) {
      args += " --set " + key + "=" + value.get<std::string>();
    }
    for (const auto& o : outputs) args += " --out " + o + "=" + path(o + ".npy");
    return args;
  }
  // Runs `op` on every cli fixture whose name starts with prefix; compares every output.
  void expect_matches(const std::string& op, const std::string& prefix,
                      const std::vector<std::string>& outputs, std::size_t at_least) {
    std::size_t count = 0;
    for (const auto& fx : test::fixtures_in("gates", prefix)) {
      if (!fx.params().value("cli", false)) continue;
      ++count;
      SCOPED_TRACE(fx.name());
      std::vector<std::string> present;
      for (const auto& o : outputs) {
        if (fx.has(o)) present.push_back(o);
      }
      const test::CliResult r = run(command(op, fx, present) + " --threads 1");
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(r.out, "");
      EXPECT_EQ(r.err, "");
      for (const auto& o : present) {
        EXPECT_TENSOR_NEAR(io::read_npy(path(o + ".npy")), fx.tensor(o), test::Tolerance{}) << o;
        std::filesystem::remove(path(o + ".npy"));
      }
    }
    EXPECT_GE(count, at_least);
  }
  std::string base(const std::string& op, const std::string& fixture) {
    const auto fx = test::fixture("gates/" + fixture);
    return "run " + op + " --in input=" + fx.path("input.npy") + " --weights " +
           fx.path("weights.safetensors");
  }
};

TEST_F(CliGates, EseMatchesTimm) { expect_matches("ese", "ese_", {"output", "attention"}, 4); }

TEST_F(CliGates, CecaMatchesTimm) { expect_matches("ceca", "ceca_", {"output", "attention"}, 6); }

TEST_F(CliGates, GeMatchesTimm) { expect_matches("ge", "ge_", {"output", "attention"}, 11); }

TEST_F(CliGates, LcbamMatchesTimm) {
  expect_matches("lcbam", "lcbam_", {"output", "channel_attention", "spatial_attention"}, 3);
}

TEST_F(CliGates, GcMatchesTimm) {
  expect_matches("gc", "gc_", {"output", "attention", "channel_attention"}, 5);
}

TEST_F(CliGates, CoordAttnMatchesTimm) {
  expect_matches("coord_attn", "coord_", {"output", "attention_h", "attention_w"}, 4);
}

TEST_F(CliGates, SplatMatchesTimm) {
  expect_matches("splat", "splat_", {"output", "attention"}, 5);
}

TEST_F(CliGates, SplatRejectsSettingsTheWeightsContradict) {
  expect_input_error(run(base("splat", "splat_c16_r2") + " --set kernel_size=5"),
                     "--set kernel_size=5 contradicts the weights: 'conv.weight' [32, 8, 3, 3] has "
                     "a 3x3 kernel");
  expect_input_error(run(base("splat", "splat_c16_r2") + " --set radix=4"),
                     "radix 4 and groups 1 contradict the weights");
}

TEST_F(CliGates, DynamicConvMatchesTheEquation) {
  expect_matches("dynamic_conv", "dyn_", {"output", "attention"}, 4);
}

TEST_F(CliGates, CondConvMatchesTimm) { expect_matches("cond_conv", "cond_c", {"output"}, 4); }

// With no map asked for, the ops run the modules' forward() alone: the same output.
TEST_F(CliGates, OutputAloneMatchesTimm) {
  expect_matches("ese", "ese_", {"output"}, 4);
  expect_matches("ceca", "ceca_", {"output"}, 6);
  expect_matches("ge", "ge_", {"output"}, 11);
  expect_matches("lcbam", "lcbam_", {"output"}, 3);
  expect_matches("gc", "gc_", {"output"}, 5);
  expect_matches("coord_attn", "coord_", {"output"}, 4);
  expect_matches("splat", "splat_", {"output"}, 5);
  expect_matches("dynamic_conv", "dyn_", {"output"}, 4);
}

TEST_F(CliGates, ConvSettingsTheWeightsContradictAreInputErrors) {
  expect_input_error(run(base("dynamic_conv", "dyn_c8_co4_g2_s2_d2") + " --set groups=1"),
                     "--set groups=1 contradicts the weights: 'weight' [4, 4, 4, 3, 3]");
  const auto fx = test::fixture("gates/cond_c8_co6_k3_bias");
  expect_input_error(run(base("cond_conv", "cond_c8_co6_k3_bias") + " --in routing_weights=" +
                         fx.path("routing_weights.npy") + " --set kernel_size=5"),
                     "'weight' [4, 432] does not hold K experts of Co x 8 x 5 x 5");
  expect_input_error(run(base("cond_conv", "cond_c8_co6_k3_bias")), "routing_weights");
  expect_input_error(run(base("dynamic_conv", "dyn_c8_co6_k3_bias") + " --set temperature=0"),
                     "temperature must be positive");
}

TEST_F(CliGates, MapsAModuleDoesNotMakeAreInputErrors) {
  // GlobalContext without conv_attn pools by the mean: it has no spatial attention.
  expect_input_error(run(base("gc", "gc_c16_noattn_both") + " --out attention=" + path("a.npy")),
                     "produced no 'attention'");
  expect_input_error(run(base("coord_attn", "coord_c32_default") + " --set act_layer=swishy"),
                     "swishy");
}

TEST_F(CliGates, GeInfersFeatSizeAndRejectsContradictions) {
  const auto fx = test::fixture("gates/ge_e0_params");
  // feat_size omitted: the gather conv's kernel is the feature size.
  test::CliResult r = run(base("ge", "ge_e0_params") + " --out output=" + path("y.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TENSOR_NEAR(io::read_npy(path("y.npy")), fx.tensor("output"), test::Tolerance{});
  expect_input_error(run(base("ge", "ge_e0_params") + " --set feat_size=5,5"),
                     "--set feat_size=5,5 contradicts the weights: 'gather.conv1.weight' "
                     "[16, 1, 5, 7] has a 5x7 kernel");
  expect_input_error(run(base("ge", "ge_e8_params") + " --set extent=4"),
                     "--set extent=4 contradicts the weights: they hold 3 gather convs, extent 4 "
                     "builds 2");
  expect_input_error(run(base("ge", "ge_e0_mlp") + " --set extent=3"),
                     "extent must be 0 (global) or a positive even number");
}

TEST_F(CliGates, BadSettingsAndWeightsAreInputErrors) {
  expect_input_error(run(base("ese", "ese_c24_default") + " --set gate_layer=swish"), "gate_layer");
  const auto fx = test::fixture("gates/ese_c24_default");
  expect_input_error(run("run ese --in input=" + fx.path("input.npy") + " --weights " +
                         edited_weights(fx, "fc.bias")),
                     "missing 'fc.bias'");
  // Kernel 7 pads 3 channels circularly on each side: two channels are too few.
  io::write_npy(path("c2.npy"), Tensor::zeros({1, 2, 3, 3}));
  expect_input_error(run("run ceca --in input=" + path("c2.npy") + " --weights " +
                         test::fixture("gates/ceca_c3_explicit_k7").path("weights.safetensors")),
                     "circular padding 3 (kernel size 7) exceeds the 2 channels");
}

TEST_F(CliGates, RepeatPrintsOneReport) {
  const test::CliResult r = run(base("lcbam", "lcbam_c32_default") + " --repeat 3 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_repeat_report(r, "lcbam", 3);
}

}  // namespace
}  // namespace cvattn
