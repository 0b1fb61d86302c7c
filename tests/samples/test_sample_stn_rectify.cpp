// The stn_rectify sample on the bundled distorted digits: one picture per digit plus a contact
// sheet, predictions equal to the ones PyTorch stored in labels.json, and an accuracy of the
// order the model card reports (85.1 % on 3000 held-out digits; 13 of the 16 bundled ones).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "samples/sample_run.hpp"

namespace cvattn::test {
namespace {

TEST(SampleStnRectify, WritesPicturesAndPrintsTheAccuracy) {
  const TempDir dir("sample_stn_rectify");
  const RunResult r = run_command(std::string(CVATTN_SAMPLE) + " --output=" + dir.path().string());
  ASSERT_EQ(r.status, 0) << r.output;

  std::ifstream in(std::string(CVATTN_ASSETS_DIR) + "/digits/labels.json");
  const nlohmann::json labels = nlohmann::json::parse(in);
  ASSERT_EQ(labels.size(), 16u);
  for (const auto& [name, entry] : labels.items()) {
    const std::string stem = name.substr(0, name.size() - 4);
    expect_picture(dir.path() / (stem + "_stn.png"), {2 * 28 * 8, 28 * 8 + 24});
    // The C++ forward predicts what PyTorch predicted on the same PNG.
    const std::string line = name + ": label " + std::to_string(entry.at("label").get<int>()) +
                             " predicted " + std::to_string(entry.at("stn_prediction").get<int>());
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
  }
  expect_picture(dir.path() / "contact_sheet.png", {4 * 2 * 28 * 8, 4 * (28 * 8 + 24)});

  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(accuracy: (\d+)/(\d+) = ([\d.]+)%)")))
      << r.output;
  EXPECT_EQ(m[2].str(), "16");
  const double accuracy = std::stod(m[3].str());
  EXPECT_GE(accuracy, 60.0);  // the model card's 85 %, give or take a 16-digit sample
  EXPECT_LE(accuracy, 100.0);
}

TEST(SampleStnRectify, HelpAndBadInput) {
  const RunResult help = run_command(std::string(CVATTN_SAMPLE) + " --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.output.find("--output"), std::string::npos) << help.output;
  const TempDir dir("sample_stn_rectify_bad");
  const RunResult bad =
      run_command(std::string(CVATTN_SAMPLE) + " --input=" + (dir.path() / "none.png").string() +
                  " --output=" + dir.path().string());
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("stn_rectify: error: cannot read image"), std::string::npos)
      << bad.output;
}

}  // namespace
}  // namespace cvattn::test
