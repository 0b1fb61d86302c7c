// End-to-end tests of `cvattn run scaled_dot_product_attention|position_encoding|mha|nonlocal`
// (docs/cli.md) against the PyTorch fixtures in tests/fixtures/{attention,mha,non_local}.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cvattn/io/npy.hpp"
#include "cvattn/io/safetensors.hpp"
#include "support/cli.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;

// Python's repr of a float setting is not needed: %.17g round-trips the double.
std::string number(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

class CliAttention : public test::CliTest {
 protected:
  // `args` + --out for each name, then each written file compared with the fixture's tensor.
  void expect_outputs(const std::string& args, const test::Fixture& fx,
                      const std::vector<std::string>& outs) {
    std::string cmd = args;
    for (const auto& o : outs) cmd += " --out " + o + "=" + path(o + ".npy");
    const test::CliResult r = run(cmd);
    ASSERT_EQ(r.exit_code, 0) << fx.name() << ": " << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "");
    for (const auto& o : outs) {
      EXPECT_TENSOR_NEAR(io::read_npy(path(o + ".npy")), fx.tensor(o), test::Tolerance{})
          << fx.name() << " " << o;
    }
  }
  static std::string mha_args(const test::Fixture& fx) {
    return "run mha --in query=" + fx.path("query.npy") + " --in key=" + fx.path("key.npy") +
           " --in value=" + fx.path("value.npy") + " --weights " + fx.path("weights.safetensors") +
           " --set num_heads=" + std::to_string(fx.params()["num_heads"].get<int>());
  }
};

TEST_F(CliAttention, SdpaMatchesPyTorch) {
  int ran = 0;
  for (const auto& fx : test::fixtures_in("attention", "sdpa_")) {
    // The op's attn_mask is additive float (docs/cli.md); boolean fixtures are the library's.
    if (fx.params()["mask_type"] != "additive") continue;
    std::string args = "run scaled_dot_product_attention --in query=" + fx.path("query.npy") +
                       " --in key=" + fx.path("key.npy") + " --in value=" + fx.path("value.npy");
    if (fx.has("attn_mask")) args += " --in attn_mask=" + fx.path("attn_mask.npy");
    if (fx.params()["is_causal"].get<bool>()) args += " --set is_causal=true";
    if (fx.params().contains("scale")) {
      args += " --set scale=" + number(fx.params()["scale"].get<double>());
    }
    expect_outputs(args, fx, {"output", "attn_weights"});
    ++ran;
  }
  EXPECT_GE(ran, 18);
}

TEST_F(CliAttention, PositionEncodingMatchesDetr) {
  int ran = 0;
  for (const auto& fx : test::fixtures_in("attention", "pos_")) {
    if (fx.has("mask")) continue;  // the op has no padding mask
    const auto& p = fx.params();
    std::string size;
    for (const auto& d : p["size"])
      size += (size.empty() ? "" : ",") + std::to_string(d.get<int>());
    std::string args = "run position_encoding --set size=" + size;
    if (p.contains("normalize")) {
      args += " --set normalize=" + test::bool_arg(p["normalize"]);
    }
    if (p.contains("temperature")) {
      args += " --set temperature=" + number(p["temperature"].get<double>());
    }
    if (p.contains("scale")) args += " --set scale=" + number(p["scale"].get<double>());
    expect_outputs(args, fx, {"output"});
    ++ran;
  }
  EXPECT_GE(ran, 5);
}

TEST_F(CliAttention, MhaMatchesPyTorch) {
  int ran = 0;
  for (const auto& fx : test::fixtures_in("mha", "mha_")) {
    const auto& p = fx.params();
    // Masks and add_zero_attn are not CLI settings; those cases are the library test's.
    if (!p.value("cli", false) || fx.name().find("zero_attn") != std::string::npos) continue;
    std::string args = mha_args(fx);
    if (!p.value("average_attn_weights", true)) args += " --set average_attn_weights=false";
    expect_outputs(args, fx, {"output", "attn_weights"});
    ++ran;
  }
  EXPECT_GE(ran, 10);
}

// One file named by query, key and value is read once and shared (the module then takes its
// single packed in-projection): the same numbers as PyTorch's m(x, x, x).
TEST_F(CliAttention, MhaOneFileForQueryKeyValueMatchesPyTorch) {
  int ran = 0;
  for (const auto& fx : test::fixtures_in("mha", "mha_self_")) {
    const auto& p = fx.params();
    if (!p.value("cli", false)) continue;
    const std::string x = fx.path("query.npy");
    std::string args = "run mha --in query=" + x + " --in key=" + x + " --in value=" + x +
                       " --weights " + fx.path("weights.safetensors") +
                       " --set num_heads=" + std::to_string(p["num_heads"].get<int>());
    if (!p.value("average_attn_weights", true)) args += " --set average_attn_weights=false";
    expect_outputs(args, fx, {"output", "attn_weights"});
    ++ran;
  }
  EXPECT_GE(ran, 2);
}

TEST_F(CliAttention, NonLocalMatchesTimm) {
  int ran = 0;
  for (const auto& fx : test::fixtures_in("non_local", "nonlocal_")) {
    if (!fx.params().value("cli", false)) continue;  // use_scale=false is not a CLI setting
    expect_outputs("run nonlocal --in input=" + fx.path("input.npy") + " --weights " +
                       fx.path("weights.safetensors"),
                   fx, {"output", "attention"});
    ++ran;
  }
  EXPECT_GE(ran, 7);
}

TEST_F(CliAttention, ListAndRepeat) {
  const test::CliResult l = run("list");
  ASSERT_EQ(l.exit_code, 0);
  EXPECT_THAT(l.out, HasSubstr("mha\tinputs: query,key,value,--weights\toutputs: output,"
                               "attn_weights\tsettings: num_heads=REQUIRED,"
                               "average_attn_weights=true"));
  EXPECT_THAT(l.out, HasSubstr("nonlocal\tinputs: input,--weights\toutputs: output,attention"));
  EXPECT_THAT(l.out, HasSubstr("scaled_dot_product_attention\tinputs: query,key,value,"
                               "attn_mask?\toutputs: output,attn_weights"));
  EXPECT_THAT(l.out, HasSubstr("position_encoding\tinputs: -\toutputs: output"));
  const auto fx = test::fixture("mha/mha_h4_self");
  const test::CliResult r = run(mha_args(fx) + " --repeat 2 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_repeat_report(r, "mha", 2);
}

TEST_F(CliAttention, InputErrorsNameWhatIsWrongAndWriteNothing) {
  const auto sd = test::fixture("attention/sdpa_batch1");
  const auto mh = test::fixture("mha/mha_h4_self");
  const auto nl = test::fixture("non_local/nonlocal_c16_default");
  const std::string out = " --out output=" + path("out.npy");
  const std::string sdpa = "run scaled_dot_product_attention --in query=" + sd.path("query.npy") +
                           " --in key=" + sd.path("key.npy");
  // sdpa: a missing input, mismatched shapes, is_causal with a mask.
  expect_input_error(run(sdpa + out),
                     "op 'scaled_dot_product_attention' needs --in value=FILE.npy");
  expect_input_error(run(sdpa + " --in value=" + sd.path("query.npy") + out),
                     "tensor 'value' expected [..., 9, *]");
  expect_input_error(run(sdpa + " --in value=" + sd.path("value.npy") +
                         " --in attn_mask=" + sd.path("query.npy") + out),
                     "tensor 'attn_mask' expected a shape that broadcasts to [3, 6, 9]");
  expect_input_error(
      run("run scaled_dot_product_attention --in query=" +
          test::fixture("attention/sdpa_mask_float_ls").path("query.npy") +
          " --in key=" + test::fixture("attention/sdpa_mask_float_ls").path("key.npy") +
          " --in value=" + test::fixture("attention/sdpa_mask_float_ls").path("value.npy") +
          " --in attn_mask=" + test::fixture("attention/sdpa_mask_float_ls").path("attn_mask.npy") +
          " --set is_causal=true" + out),
      "is_causal=true cannot be combined with an explicit attn_mask");
  // position_encoding: size missing, C not a multiple of 4, scale without normalize.
  expect_input_error(run("run position_encoding" + out), "size");
  expect_input_error(run("run position_encoding --set size=1,6,3,3" + out), "multiple of 4");
  expect_input_error(run("run position_encoding --set size=1,8,3,3 --set normalize=false "
                         "--set scale=2" +
                         out),
                     "normalize should be true if scale is passed");
  // mha: no weights, no num_heads, num_heads not dividing E, wrong shapes, bad weights.
  const std::string qkv = " --in query=" + mh.path("query.npy") +
                          " --in key=" + mh.path("key.npy") + " --in value=" + mh.path("value.npy");
  expect_input_error(run("run mha" + qkv + " --set num_heads=4" + out),
                     "op 'mha' needs --weights FILE.safetensors");
  expect_input_error(run("run mha" + qkv + " --weights " + mh.path("weights.safetensors") + out),
                     "num_heads");
  expect_input_error(run("run mha" + qkv + " --weights " + mh.path("weights.safetensors") +
                         " --set num_heads=3" + out),
                     "num_heads (3) must be >= 1 and divide embed_dim (16)");
  expect_input_error(
      run("run mha --in query=" + mh.path("query.npy") + " --in key=" + sd.path("key.npy") +
          " --in value=" + mh.path("value.npy") + " --weights " + mh.path("weights.safetensors") +
          " --set num_heads=4" + out),
      "MultiheadAttention::forward: tensor 'key' expected shape [3, 9, 16], got "
      "[3, 9, 8]");
  expect_input_error(run("run mha" + qkv + " --weights " + edited_weights(mh, "in_proj_bias") +
                         " --set num_heads=4" + out),
                     "missing 'in_proj_bias'");
  expect_input_error(run("run mha" + qkv + " --weights " +
                         edited_weights(mh, "", "in_proj_weight", Tensor::zeros({48, 12})) +
                         " --set num_heads=4" + out),
                     "'in_proj_weight' expected [48, 16], got [48, 12]");
  expect_input_error(run("run mha" + qkv + " --weights " + nl.path("weights.safetensors") +
                         " --set num_heads=4" + out),
                     "missing 'out_proj.weight'");
  // nonlocal: wrong channel count, a missing key, weights of another module.
  expect_input_error(run("run nonlocal --in input=" +
                         test::fixture("non_local/nonlocal_c72_bump").path("input.npy") +
                         " --weights " + nl.path("weights.safetensors") + out),
                     "nonlocal: tensor 'input' expected shape [*, 16, *, *], got [1, 72, 4, 3]");
  expect_input_error(run("run nonlocal --in input=" + nl.path("input.npy") + " --weights " +
                         edited_weights(nl, "z.weight") + out),
                     "missing 'z.weight'");
  expect_input_error(run("run nonlocal --in input=" + nl.path("input.npy") + " --weights " +
                         mh.path("weights.safetensors") + out),
                     "NonLocalAttnOptions::from_state_dict: missing 't.weight'");
  EXPECT_FALSE(std::filesystem::exists(path("out.npy")));
  EXPECT_TRUE(no_temporary_files());
}

}  // namespace
}  // namespace cvattn
