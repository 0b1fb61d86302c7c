// Batch mode of `cvattn run` (tools/cvattn/batch.hpp, docs/batch.md): one job per line of a
// --list file, outputs named by each job's input stem, --shard=I/N a partition of the sorted
// jobs. The N shards' outputs together are byte for byte the unsharded run's, and each job's
// output is byte for byte the output of the same op run alone on that input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "cvattn/io/npy.hpp"
#include "support/cli.hpp"
#include "support/fixtures.hpp"

namespace cvattn {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Result = test::CliResult;

class CliBatch : public test::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    fs::create_directories(path("in"));
    std::string list = "# conv2d jobs: input=FILE or a bare FILE (the first input)\n";
    for (int i = 0; i < 7; ++i) {
      const std::string name = "x_" + std::to_string(6 - i) + ".npy";
      Tensor x = Tensor::empty({1 + i % 2, 2, 5 + i, 4 + 2 * i});
      for (std::int64_t k = 0; k < x.numel(); ++k)
        x[k] = static_cast<float>((k * 37 + i) % 23) / 7.0f - 1.5f;
      io::write_npy(path("in/" + name), x);
      list += (i % 2 ? "input=" : "  ") + path("in/" + name) + "\n";
    }
    list += path("in/x_3.npy") + "\n";  // a duplicate runs once
    Tensor w = Tensor::empty({3, 2, 3, 3});
    for (std::int64_t k = 0; k < w.numel(); ++k) w[k] = static_cast<float>(k % 5) * 0.25f - 0.5f;
    io::write_npy(path("weight.npy"), w);
    write("jobs.txt", list);
  }
  std::string batch(const std::string& out_dir, const std::string& extra = "") {
    return "run conv2d --list " + path("jobs.txt") + " --in weight=" + path("weight.npy") +
           " --set padding=1 --out output=" + path(out_dir) + "/{}.npy" + extra;
  }
  static std::map<std::string, std::string> files(const fs::path& dir) {
    std::map<std::string, std::string> out;
    if (!fs::exists(dir)) return out;
    for (const auto& e : fs::directory_iterator(dir)) {
      std::ifstream in(e.path(), std::ios::binary);
      out[e.path().filename().string()] = std::string(std::istreambuf_iterator<char>(in), {});
    }
    return out;
  }
};

TEST_F(CliBatch, ShardsTogetherAreTheUnshardedRunByteForByte) {
  fs::create_directories(path("whole"));
  const Result whole = run(batch("whole"));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(whole.out, "");
  const auto expected = files(path("whole"));
  ASSERT_EQ(expected.size(), 7u);
  for (int n : {1, 2, 3, 7, 9}) {
    std::map<std::string, std::string> together;
    for (int i = 0; i < n; ++i) {
      const std::string dir = "shard_" + std::to_string(n) + "_" + std::to_string(i);
      fs::create_directories(path(dir));
      const Result r = run(batch(dir, " --shard " + std::to_string(i) + "/" + std::to_string(n)));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      for (auto& [name, bytes] : files(path(dir))) {
        EXPECT_TRUE(together.emplace(name, bytes).second) << name << " in two shards of " << n;
      }
    }
    EXPECT_EQ(together, expected) << n << " shards";
  }
  // Round robin over the sorted jobs: shard 1/3 holds the 2nd and 5th (x_1, x_4).
  fs::create_directories(path("one"));
  ASSERT_EQ(run(batch("one", " --shard=1/3")).exit_code, 0);
  const auto one = files(path("one"));
  EXPECT_EQ(one.size(), 2u);
  EXPECT_TRUE(one.count("x_1.npy") && one.count("x_4.npy"));
}

TEST_F(CliBatch, EachJobIsTheSingleRun) {
  fs::create_directories(path("whole"));
  ASSERT_EQ(run(batch("whole")).exit_code, 0);
  const auto batchout = files(path("whole"));
  for (int i = 0; i < 7; ++i) {
    const std::string stem = "x_" + std::to_string(i);
    const Result r = run("run conv2d --in input=" + path("in/" + stem + ".npy") +
                         " --in weight=" + path("weight.npy") +
                         " --set padding=1 --out output=" + path("single.npy"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(path("single.npy"), std::ios::binary);
    EXPECT_TRUE(std::string(std::istreambuf_iterator<char>(in), {}) == batchout.at(stem + ".npy"))
        << stem;
  }
}

TEST_F(CliBatch, UsageErrors) {
  const auto error = [&](const std::string& args, const std::string& what) {
    const Result r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_THAT(r.err, HasSubstr("cvattn: error: " + what)) << args;
  };
  error(batch("o", " --shard=3/3"), "--shard expects I/N");
  error(batch("o", " --shard=x"), "--shard expects I/N");
  error("run conv2d --in input=a.npy --in weight=b.npy --shard 0/2 --out output=o.npy",
        "--shard needs --list FILE");
  error("run conv2d --list " + path("jobs.txt") + " --in weight=" + path("weight.npy") +
            " --out output=" + path("fixed.npy"),
        "--list: --out output=");
  error("run conv2d --list " + path("none.txt") + " --in weight=" + path("weight.npy") +
            " --out output=" + path("{}.npy"),
        "--list: ");
  write("bad.txt", "nosuch=" + path("in/x_1.npy") + "\n");
  error("run conv2d --list " + path("bad.txt") + " --in weight=" + path("weight.npy") +
            " --out output=" + path("{}.npy"),
        "--list: line 'nosuch=");
  fs::create_directories(path("other"));
  fs::copy_file(path("in/x_1.npy"), path("other/x_1.npy"));
  write("clash.txt", path("in/x_1.npy") + "\n" + path("other/x_1.npy") + "\n");
  error("run conv2d --list " + path("clash.txt") + " --in weight=" + path("weight.npy") +
            " --out output=" + path("{}.npy"),
        "--list: lines '");
  error(batch("o", " --repeat 2"), "--list and --repeat cannot be combined");
  EXPECT_FALSE(fs::exists(path("o")));
  // Without --list, {} in an --out file is an ordinary file name, as before.
  const Result literal =
      run("run conv2d --in input=" + path("in/x_0.npy") + " --in weight=" + path("weight.npy") +
          " --out output=" + path("{}.npy"));
  EXPECT_EQ(literal.exit_code, 0) << literal.err;
  EXPECT_TRUE(fs::exists(path("{}.npy")));
}

}  // namespace
}  // namespace cvattn
