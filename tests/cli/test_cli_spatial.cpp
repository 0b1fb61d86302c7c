// End-to-end tests of `cvattn run bottleneck_attn|halo_attn|lambda|bat|generalized_attention`
// (docs/cli.md, second round) against tests/fixtures/spatial (timm's own source and the
// mmcv re-creation in tests/fixtures/spatial.py).
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

class CliSpatial : public test::CliTest {
 protected:
  void expect_matches(const std::string& op, const test::Fixture& fx, const std::string& sets,
                      bool attention) {
    std::string args = "run " + op + " --in input=" + fx.path("input.npy") + " --weights " +
                       fx.path("weights.safetensors") + sets +
                       " --out output=" + path("output.npy");
    if (attention) args += " --out attention=" + path("attention.npy");
    const test::CliResult r = run(args);
    ASSERT_EQ(r.exit_code, 0) << fx.name() << ": " << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "");
    EXPECT_TENSOR_NEAR(io::read_npy(path("output.npy")), fx.tensor("output"), test::Tolerance{})
        << fx.name();
    if (attention) {
      EXPECT_TENSOR_NEAR(io::read_npy(path("attention.npy")), fx.tensor("attention"),
                         test::Tolerance{})
          << fx.name();
    }
  }
  static std::vector<test::Fixture> cli_cases(const std::string& prefix) {
    std::vector<test::Fixture> out;
    for (auto& fx : test::fixtures_in("spatial", prefix)) {
      if (fx.params().value("cli", false)) out.push_back(fx);
    }
    return out;
  }
  static std::string set(const std::string& key, const std::string& value) {
    return " --set " + key + "=" + value;
  }
  std::string run_args(const std::string& op, const test::Fixture& fx) const {
    return "run " + op + " --in input=" + fx.path("input.npy") + " --weights " +
           fx.path("weights.safetensors");
  }
};

TEST_F(CliSpatial, BottleneckAttnMatchesTimm) {
  const auto cases = cli_cases("bot_");
  ASSERT_GE(cases.size(), 4u);
  for (const auto& fx : cases) {
    const auto& p = fx.params();
    expect_matches("bottleneck_attn", fx,
                   set("feat_size", test::pair_arg(p["feat_size"])) +
                       set("num_heads", std::to_string(p["num_heads"].get<int>())) +
                       set("stride", std::to_string(p["stride"].get<int>())) +
                       set("scale_pos_embed", test::bool_arg(p.value("scale_pos_embed", false))),
                   true);
  }
}

TEST_F(CliSpatial, HaloAttnMatchesTimm) {
  const auto cases = cli_cases("halo_");
  ASSERT_GE(cases.size(), 5u);
  for (const auto& fx : cases) {
    const auto& p = fx.params();
    expect_matches("halo_attn", fx,
                   set("block_size", std::to_string(p["block_size"].get<int>())) +
                       set("halo_size", std::to_string(p["halo_size"].get<int>())) +
                       set("stride", std::to_string(p["stride"].get<int>())) +
                       set("scale_pos_embed", test::bool_arg(p.value("scale_pos_embed", false))),
                   true);
  }
  // avg_down, the one setting docs/cli.md's row does not list, is accepted as an added key.
  const auto fx = test::fixture("spatial/halo_n1_c8_8x8_b4_h2_stride2_avgdown");
  expect_matches(
      "halo_attn", fx,
      set("block_size", "4") + set("halo_size", "2") + set("stride", "2") + set("avg_down", "true"),
      true);
}

TEST_F(CliSpatial, LambdaMatchesTimm) {
  const auto cases = cli_cases("lambda_");
  ASSERT_GE(cases.size(), 5u);
  for (const auto& fx : cases) {
    expect_matches("lambda", fx, set("stride", std::to_string(fx.params()["stride"].get<int>())),
                   false);
  }
}

TEST_F(CliSpatial, BatMatchesTimm) {
  const auto cases = cli_cases("bat_");
  ASSERT_GE(cases.size(), 4u);
  for (const auto& fx : cases) expect_matches("bat", fx, "", false);
}

TEST_F(CliSpatial, GeneralizedAttentionMatchesMmcv) {
  const auto cases = cli_cases("ga_");
  ASSERT_GE(cases.size(), 14u);
  for (const auto& fx : cases) {
    const auto& p = fx.params();
    std::string sets = set("num_heads", std::to_string(p.value("num_heads", 9)));
    sets += set("attention_type", p.value("attention_type", std::string("1111")));
    for (const char* key : {"kv_stride", "q_stride", "position_embedding_dim", "position_magnitude",
                            "spatial_range"}) {
      if (p.contains(key)) sets += set(key, std::to_string(p[key].get<int>()));
    }
    expect_matches("generalized_attention", fx, sets, true);
  }
}

TEST_F(CliSpatial, SettingsThatContradictTheWeightsAreInputErrors) {
  const auto bot = test::fixture("spatial/bot_n2_c16_5x7_h4");
  expect_input_error(run(run_args("bottleneck_attn", bot) + set("feat_size", "5,6") +
                         " --out output=" + path("o.npy")),
                     "--set feat_size=5,6 contradicts the weights");
  expect_input_error(run(run_args("bottleneck_attn", bot) + " --out output=" + path("o.npy")),
                     "feat_size");
  const auto halo = test::fixture("spatial/halo_n2_c16_8x12_b4_h1");
  expect_input_error(
      run(run_args("halo_attn", halo) + set("block_size", "4") + set("halo_size", "1") +
          set("num_heads", "4") + " --out output=" + path("o.npy")),
      "--set num_heads=4 contradicts the weights, whose 'q.weight' gives num_heads=2");
  expect_input_error(run(run_args("halo_attn", halo) + set("block_size", "4") +
                         set("halo_size", "2") + " --out output=" + path("o.npy")),
                     "make a window of 8, but 'pos_embed.height_rel' has 11 rows");
  const auto lam = test::fixture("spatial/lambda_n2_c16_5x7_r3");
  expect_input_error(
      run(run_args("lambda", lam) + set("r", "5") + " --out output=" + path("o.npy")),
      "--set r=5 contradicts the weights, whose 'conv_lambda.weight' gives r=3");
  const auto bat = test::fixture("spatial/bat_n2_c16_6x9_b3_g2");
  expect_input_error(
      run(run_args("bat", bat) + set("groups", "4") + " --out output=" + path("o.npy")),
      "--set groups=4 contradicts the weights");
  const auto ga = test::fixture("spatial/ga_n2_c12_5x7_1000_h3");
  expect_input_error(run(run_args("generalized_attention", ga) + set("num_heads", "3") +
                         " --out output=" + path("o.npy")),
                     "appr_bias");
  expect_input_error(run(run_args("generalized_attention", ga) + set("num_heads", "3") +
                         set("attention_type", "10a0") + " --out output=" + path("o.npy")),
                     "four characters 0 or 1");
  EXPECT_TRUE(written().empty());
}

TEST_F(CliSpatial, GeneralizedAttention0100OnNonSquareInputIsANamedError) {
  const auto fx = test::fixture("spatial/ga_n1_c12_6x6_0100_square");
  const std::string other = write("x.npy", "");
  io::write_npy(path("x.npy"), Tensor::zeros({1, 12, 5, 7}));
  expect_input_error(run("run generalized_attention --in input=" + other + " --weights " +
                         fx.path("weights.safetensors") + set("num_heads", "2") +
                         set("attention_type", "0100") + " --out output=" + path("o.npy")),
                     "mmdetection#8179");
}

TEST_F(CliSpatial, RepeatPrintsOneJsonLine) {
  const auto fx = test::fixture("spatial/halo_n2_c16_8x12_b4_h1");
  const test::CliResult r = run(run_args("halo_attn", fx) + set("block_size", "4") +
                                set("halo_size", "1") + " --repeat 3 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_repeat_report(r, "halo_attn", 3);
}

}  // namespace
}  // namespace cvattn
