// What every sample shares on its command line (samples/common/sample_cli.hpp): unknown or
// misspelled options and bare words are errors naming them with exit status 2, --help lists
// every option without cv::CommandLineParser's "(value:...)" noise, counts are singular or
// plural as they should be, and --list / --shard split the work so that the shards' outputs
// together are byte for byte the unsharded run's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sample_cli.hpp"
#include "support/samples.hpp"

namespace cvattn::test {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kSamples = {
    "attention_demo", "deform_sampling", "self_attention_query",
    "stn_rectify",    "align_images",    "video_pipeline",
    "classify",       "layer_maps"};
// The samples that process a folder of inputs, one output per input.
const std::vector<std::string> kFolderSamples = {
    "attention_demo", "deform_sampling", "self_attention_query",
    "stn_rectify",    "classify",        "layer_maps"};

// Every regular file under `root`, by path relative to it, with its bytes.
std::map<std::string, std::string> files_under(const fs::path& root);

class SampleCli : public SampleTest {
 protected:
  void expect_shards_reproduce(const std::string& sample, const std::string& args, int n,
                               const std::set<std::string>& gathered);
};

std::map<std::string, std::string> files_under(const fs::path& root) {
  std::map<std::string, std::string> out;
  if (!fs::exists(root)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    out[fs::relative(e.path(), root).string()] =
        std::string(std::istreambuf_iterator<char>(in), {});
  }
  return out;
}

// Runs `sample` unsharded into out()/whole and as `n` shards into out()/shard_i, and checks that
// the shards' files together are exactly the unsharded run's per-input files, byte for byte
// (the unsharded run alone also writes `gathered`, the pictures of all inputs).
void SampleCli::expect_shards_reproduce(const std::string& sample, const std::string& args, int n,
                                        const std::set<std::string>& gathered) {
  SCOPED_TRACE(sample);
  const fs::path whole_dir = path(sample + "_whole");
  const SampleRun whole = run(sample, args + " --output='" + whole_dir.string() + "'");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  std::map<std::string, std::string> expected = files_under(whole_dir);
  for (const std::string& g : gathered) {
    EXPECT_EQ(expected.erase(g), 1u) << g;
  }
  ASSERT_GT(expected.size(), 2u);
  std::map<std::string, std::string> together;
  for (int i = 0; i < n; ++i) {
    const fs::path dir = path(sample + "_shard_" + std::to_string(i));
    const SampleRun r = run(sample, args + " --shard=" + std::to_string(i) + "/" +
                                        std::to_string(n) + " --output='" + dir.string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (auto& [name, bytes] : files_under(dir)) {
      EXPECT_TRUE(together.emplace(name, std::move(bytes)).second) << name << " in two shards";
    }
  }
  EXPECT_EQ(together.size(), expected.size());
  for (const auto& [name, bytes] : expected) {
    const auto it = together.find(name);
    ASSERT_NE(it, together.end()) << name << " missing from the shards";
    EXPECT_TRUE(it->second == bytes) << name << " differs";
  }
}

TEST_F(SampleCli, UnknownOptionIsAnErrorNamingIt) {
  for (const std::string& s : kSamples) {
    SCOPED_TRACE(s);
    const SampleRun r = run(s, "--inptu=x " + out_arg());
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(s + ": error: unknown option '--inptu' (did you mean --input?)"),
              std::string::npos)
        << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;  // nothing ran
    EXPECT_FALSE(fs::exists(out()));
    const SampleRun far = run(s, "--zzzzzzzz");
    EXPECT_EQ(far.exit_code, 2);
    EXPECT_NE(far.err.find("unknown option '--zzzzzzzz'; see --help"), std::string::npos)
        << far.err;
    const SampleRun bare = run(s, "stray");
    EXPECT_EQ(bare.exit_code, 2);
    EXPECT_NE(bare.err.find("unexpected argument 'stray'"), std::string::npos) << bare.err;
  }
}

TEST_F(SampleCli, HelpListsEveryOptionWithoutParserNoise) {
  for (const std::string& s : kSamples) {
    SCOPED_TRACE(s);
    const SampleRun r = run(s, "--help");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find("(value:"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("true"), std::string::npos) << r.out;
    for (const char* key : {"--help, -h", "--input, -i", "--output", "--assets"}) {
      EXPECT_NE(r.out.find(key), std::string::npos) << key << "\n" << r.out;
    }
    EXPECT_EQ(run(s, "-h").out, r.out);
  }
  for (const std::string& s : kFolderSamples) {
    const SampleRun r = run(s, "--help");
    EXPECT_NE(r.out.find("--list"), std::string::npos) << s;
    EXPECT_NE(r.out.find("--shard"), std::string::npos) << s;
  }
}

TEST_F(SampleCli, BadValuesAndShardsAreErrors) {
  const SampleRun scale = run("stn_rectify", "--scale=abc " + out_arg());
  EXPECT_EQ(scale.exit_code, 2);
  EXPECT_NE(scale.err.find("stn_rectify: error: bad option value"), std::string::npos) << scale.err;
  for (const char* shard : {"3/3", "1", "-1/2", "a/b", "0/0", "1/2/3"}) {
    SCOPED_TRACE(shard);
    const SampleRun r = run("stn_rectify", std::string("--shard=") + shard + " " + out_arg());
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("--shard="), std::string::npos) << r.err;
  }
  const SampleRun list = run("stn_rectify", "--list=" + path("none.txt") + " " + out_arg());
  EXPECT_NE(list.exit_code, 0);
  EXPECT_NE(list.err.find("--list: cannot read"), std::string::npos) << list.err;
}

TEST_F(SampleCli, CountsAreSingularOrPlural) {
  EXPECT_EQ(sample::count(0, "contact sheet"), "0 contact sheets");
  EXPECT_EQ(sample::count(1, "contact sheet"), "1 contact sheet");
  EXPECT_EQ(sample::count(2, "PNG"), "2 PNGs");
  EXPECT_EQ(sample::count(1, "query", "queries"), "1 query");
  EXPECT_EQ(sample::count(3, "query", "queries"), "3 queries");
  const std::string one = "--input=synthetic/shape_03.png";
  const SampleRun r = run("attention_demo", "--model=shapes " + one + " " + out_arg());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote 1 contact sheet, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": 1 annotated image: accuracy"), std::string::npos) << r.out;
  const SampleRun d = run("deform_sampling", one + " " + out_arg());
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("wrote 1 sheet and "), std::string::npos) << d.out;
}

TEST(SampleShard, PartitionsTheSortedInputs) {
  EXPECT_EQ(sample::parse_shard("").count, 1u);
  EXPECT_EQ(sample::parse_shard("2/5").index, 2u);
  EXPECT_EQ(sample::parse_shard("2/5").count, 5u);
  for (const char* bad : {"5/5", "x", "1/", "/2", "+1/2", "1/-2", "0/0", "1.5/2", " 1/2"}) {
    EXPECT_THROW((void)sample::parse_shard(bad), std::runtime_error) << bad;
  }
  std::vector<fs::path> inputs;
  for (const char* name : {"e", "b", "a", "d", "c", "b", "g"}) inputs.emplace_back(name);
  std::multiset<fs::path> together;
  for (std::size_t i = 0; i < 3; ++i) {
    const auto part = sample::shard_of(inputs, {i, 3});
    together.insert(part.begin(), part.end());
  }
  EXPECT_EQ(together, (std::multiset<fs::path>{"a", "b", "c", "d", "e", "g"}));  // once each
  EXPECT_EQ(sample::shard_of(inputs, {1, 3}), (std::vector<fs::path>{"b", "e"}));
  EXPECT_TRUE(sample::shard_of(inputs, {6, 8}).empty());
}

TEST_F(SampleCli, ShardsReproduceTheUnshardedOutputsByteForByte) {
  expect_shards_reproduce("stn_rectify",
                          "--input=digits "
                          "--weights=weights/stn_digits.safetensors",
                          3, {"contact_sheet.png"});
  expect_shards_reproduce("deform_sampling", "--input=synthetic --full-res=0 --size=64", 3,
                          {"index.png"});
}

TEST_F(SampleCli, ListFileNamesTheInputs) {
  const std::string assets = CVATTN_ASSETS_DIR;
  const std::string list =
      write("inputs.txt", "# two digits\n" + assets + "/digits/distorted_03.png\n\n  " + assets +
                              "/digits/distorted_01.png  \n");
  const SampleRun r = run(
      "stn_rectify", "--list=" + list + " --weights=weights/stn_digits.safetensors " + out_arg());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Sorted: 01 before 03; labels.json beside them still applies.
  const auto first = r.out.find("distorted_01.png: label ");
  const auto second = r.out.find("distorted_03.png: label ");
  ASSERT_NE(first, std::string::npos) << r.out;
  ASSERT_NE(second, std::string::npos) << r.out;
  EXPECT_LT(first, second);
  EXPECT_NE(r.out.find("accuracy: "), std::string::npos);
  EXPECT_NE(r.out.find("/2 = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote 3 PNGs"), std::string::npos) << r.out;
}

TEST_F(SampleCli, UnlabelledImagesSaySo) {
  fs::create_directories(path("plain"));
  fs::copy_file(std::string(CVATTN_ASSETS_DIR) + "/digits/distorted_00.png",
                path("plain/digit.png"));
  const SampleRun r =
      run("stn_rectify",
          "--input=" + path("plain") + " --weights=weights/stn_digits.safetensors " + out_arg());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("digit.png: predicted "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" (no label)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("label -"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("accuracy: no labels"), std::string::npos) << r.out;
}

TEST_F(SampleCli, AssetsOptionIsUsedAndChecked) {
  const SampleRun bad = run("stn_rectify", "--assets=" + path("nowhere") + " " + out_arg());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("stn_rectify: error: --assets: no such folder"), std::string::npos)
      << bad.err;
  // A copy of the two files it needs elsewhere, found through --assets.
  fs::create_directories(path("mine/weights"));
  fs::create_directories(path("mine/digits"));
  const std::string assets = CVATTN_ASSETS_DIR;
  fs::copy_file(assets + "/weights/stn_digits.safetensors",
                path("mine/weights/stn_digits.safetensors"));
  fs::copy_file(assets + "/digits/distorted_05.png", path("mine/digits/distorted_05.png"));
  const SampleRun r = run("stn_rectify", "--assets=" + path("mine") +
                                             " --input=digits --weights="
                                             "weights/stn_digits.safetensors " +
                                             out_arg());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("distorted_05.png: predicted"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace cvattn::test
