// End-to-end tests of `cvattn run sk` (docs/cli.md row `sk`) against the PyTorch fixtures in
// tests/fixtures/sk/ (written by tests/fixtures/sk.py).
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

namespace fs = std::filesystem;
using test::bool_arg;
using test::list_arg;
using ::testing::HasSubstr;
using Result = test::CliResult;
using CliSk = test::CliTest;

// The settings of a fixture case, spelled as the user would (kernel_size as given to timm, so
// the single-integer form is exercised too).
std::string settings_of(const test::Fixture& fx) {
  const auto& p = fx.params();
  return " --set kernel_size=" + list_arg(p["kernel_size_arg"]) +
         " --set stride=" + std::to_string(p["stride"].get<int>()) +
         " --set dilation=" + std::to_string(p["dilation"].get<int>()) +
         " --set split_input=" + bool_arg(p["split_input"]) +
         " --set keep_3x3=" + bool_arg(p["keep_3x3"]);
}

std::string io_of(const test::Fixture& fx) {
  return " --in input=" + fx.path("input.npy") + " --weights " + fx.path("weights.safetensors");
}

TEST_F(CliSk, MatchesTimm) {
  const auto cases = test::fixtures_in("sk");
  ASSERT_GE(cases.size(), 21u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    const Result r =
        run("run sk" + io_of(fx) + settings_of(fx) + " --out output=" + path("out.npy") +
            " --out attention=" + path("attn.npy"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "");
    EXPECT_TENSOR_NEAR(io::read_npy(path("out.npy")), fx.tensor("output"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(io::read_npy(path("attn.npy")), fx.tensor("attention"), test::Tolerance{});
  }
}

TEST_F(CliSk, DefaultsAreTimms) {
  // kernel_size 3,5, stride 1, dilation 1, split_input and keep_3x3 true: nothing to --set.
  const auto fx = test::fixture("sk/default_c16");
  const Result r = run("run sk" + io_of(fx) + " --out output=" + path("out.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TENSOR_NEAR(io::read_npy(path("out.npy")), fx.tensor("output"), test::Tolerance{});
  // Only the requested output is written.
  EXPECT_EQ(written(), std::vector<std::string>{"out.npy"});
}

TEST_F(CliSk, GroupsComeFromTheWeightsAndTheInput) {
  for (const char* name : {"sk/groups4_cout24", "sk/groups_depthwise", "sk/groups_clamped"}) {
    const auto fx = test::fixture(name);
    const Result r = run("run sk" + io_of(fx) + " --out output=" + path("out.npy"));
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_TENSOR_NEAR(io::read_npy(path("out.npy")), fx.tensor("output"), test::Tolerance{})
        << name;
  }
}

TEST_F(CliSk, RepeatPrintsOneJsonLine) {
  const auto fx = test::fixture("sk/stride2_odd");
  const Result r = run("run sk" + io_of(fx) + settings_of(fx) + " --repeat 3 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_repeat_report(r, "sk", 3);
}

TEST_F(CliSk, ListAndHelp) {
  Result r = run("list");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("sk\tinputs: input,--weights\toutputs: output,attention\t"
                               "settings: kernel_size=3,5,stride=1,dilation=1,split_input=true,"
                               "keep_3x3=true"));
  r = run("run sk --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("--set kernel_size=int list  default 3,5"));
  EXPECT_THAT(r.out, HasSubstr("--out attention=FILE.npy  [N,paths,C]"));
}

TEST_F(CliSk, InputErrorsExitTwoAndWriteNothing) {
  const auto fx = test::fixture("sk/default_c16");
  const std::string io = io_of(fx);
  const std::string out = " --out output=" + path("out.npy") + " --out attention=" + path("a.npy");
  expect_input_error(run("run sk --in input=" + fx.path("input.npy") + out),
                     "op 'sk' needs --weights");
  expect_input_error(run("run sk" + io + " --set kernel_size=3,5,7" + out),
                     "kernel_size [3, 5, 7] gives 3 path(s), but the state_dict has 2");
  expect_input_error(run("run sk" + io + " --set kernel_size=3,x" + out),
                     "kernel_size='3,x' is not a list of integers");
  expect_input_error(run("run sk" + io + " --set kernel_size=4" + out),
                     "kernel_size entries must be odd and in [3, 2^15], got [4, 4]");
  expect_input_error(run("run sk" + io + " --set keep_3x3=false" + out),
                     "'paths.1.conv.weight' expected [16, 8, 5, 5] (kernel_size[1] = 5, "
                     "keep_3x3 = false), got [16, 8, 3, 3]");
  expect_input_error(run("run sk" + io + " --set stride=0" + out),
                     "stride must be in [1, 2^20], got 0");
  expect_input_error(run("run sk" + io + " --set dilation=-3" + out),
                     "dilation must be in [1, 2^20], got -3");
  expect_input_error(run("run sk" + io + " --set split_input=maybe" + out),
                     "split_input='maybe' is not a boolean");
  expect_input_error(run("run sk" + io + " --set groups=2" + out),
                     "op 'sk' has no setting 'groups'");
  expect_input_error(run("run sk" + io + " --out offset=" + path("o.npy")), "no output 'offset'");

  // The input must be [N, C, H, W] with C a multiple of the per-group width.
  const auto run_on = [&](const std::string& file, const Tensor& input) {
    io::write_npy(path(file), input);
    return run("run sk --in input=" + path(file) + " --weights " + fx.path("weights.safetensors") +
               out);
  };
  const Tensor x = fx.tensor("input");
  expect_input_error(run_on("rank3.npy", x.reshape({x.dim(0) * x.dim(1), x.dim(2), x.dim(3)})),
                     "sk: tensor 'input'");
  expect_input_error(run_on("c20.npy", Tensor::zeros({1, 20, 5, 5})),
                     "has 8 input channels per group, which must divide the 10 input channels of "
                     "each path");
  expect_input_error(run_on("h0.npy", Tensor::zeros({1, 16, 0, 5})),
                     "expected H, W >= 1, got [1, 16, 0, 5]");

  // Weights: a missing key, an unexpected key, a shape that disagrees.
  const std::string in = "run sk --in input=" + fx.path("input.npy") + " --weights ";
  expect_input_error(run(in + edited_weights(fx, "attn.fc_select.weight") + out),
                     "missing 'attn.fc_select.weight'");
  expect_input_error(run(in + edited_weights(fx, "", "attn.extra", Tensor::zeros({2})) + out),
                     "unexpected 'attn.extra'");
  expect_input_error(
      run(in + edited_weights(fx, "", "paths.0.bn.running_mean", Tensor::zeros({12})) + out),
      "'paths.0.bn.running_mean' expected [16], got [12]");
  expect_input_error(run(in + edited_weights(fx, "paths.0.conv.weight") + out),
                     "missing 'paths.0.conv.weight'");

  EXPECT_FALSE(fs::exists(path("out.npy")));
  EXPECT_FALSE(fs::exists(path("a.npy")));
  EXPECT_TRUE(no_temporary_files()) << ::testing::PrintToString(written());
}

TEST_F(CliSk, NumBatchesTrackedIsOptional) {
  const auto fx = test::fixture("sk/no_split");
  StateDict w = io::load_safetensors(fx.path("weights.safetensors"));
  for (const char* key : {"paths.0.bn.num_batches_tracked", "paths.1.bn.num_batches_tracked",
                          "attn.bn.num_batches_tracked"}) {
    ASSERT_TRUE(w.erase(key)) << key;
  }
  io::save_safetensors(path("w.safetensors"), w);
  const Result r =
      run("run sk --in input=" + fx.path("input.npy") + " --weights " + path("w.safetensors") +
          settings_of(fx) + " --out output=" + path("out.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TENSOR_NEAR(io::read_npy(path("out.npy")), fx.tensor("output"), test::Tolerance{});
}

}  // namespace
}  // namespace cvattn
