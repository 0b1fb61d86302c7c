// The stn_rectify sample on the bundled RTS-distorted Fashion-MNIST images (its default) and on
// the distorted digits: one picture per image plus a contact sheet, predictions equal to the ones
// PyTorch stored in labels.json, and an accuracy of the order the model cards report.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "support/samples.hpp"

namespace cvattn::test {
namespace {

using SampleStnRectify = SampleTest;

TEST_F(SampleStnRectify, FashionByDefault) {
  const SampleRun r = run("stn_rectify", out_arg());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(std::string(CVATTN_ASSETS_DIR) + "/fashion_rts/labels.json");
  const nlohmann::json labels = nlohmann::json::parse(in);
  const auto& classes = labels.at("classes");
  int images = 0;
  for (const auto& [name, entry] : labels.items()) {
    if (name == "classes") continue;
    ++images;
    const std::string stem = name.substr(0, name.size() - 4);
    expect_image(out() / (stem + "_stn.png"), {2 * 28 * 8, 28 * 8 + 24});
    const int label = entry.at("label").get<int>(), pred = entry.at("stn_prediction").get<int>();
    const std::string line = name + ": label " + std::to_string(label) + " " +
                             classes.at(label).get<std::string>() + " predicted " +
                             std::to_string(pred) + " " + classes.at(pred).get<std::string>();
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  }
  EXPECT_EQ(images, 24);
  expect_image(out() / "contact_sheet.png", {4 * 2 * 28 * 8, 6 * (28 * 8 + 24)});
  EXPECT_NE(r.out.find("accuracy: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/24 = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote 25 PNGs"), std::string::npos) << r.out;
}

TEST_F(SampleStnRectify, WritesPicturesAndPrintsTheAccuracy) {
  const SampleRun r =
      run("stn_rectify", "--input=digits --weights=weights/stn_digits.safetensors " + out_arg());
  ASSERT_EQ(r.exit_code, 0) << r.err;

  std::ifstream in(std::string(CVATTN_ASSETS_DIR) + "/digits/labels.json");
  const nlohmann::json labels = nlohmann::json::parse(in);
  ASSERT_EQ(labels.size(), 16u);
  for (const auto& [name, entry] : labels.items()) {
    const std::string stem = name.substr(0, name.size() - 4);
    expect_image(out() / (stem + "_stn.png"), {2 * 28 * 8, 28 * 8 + 24});
    // The C++ forward predicts what PyTorch predicted on the same PNG.
    const std::string line = name + ": label " + std::to_string(entry.at("label").get<int>()) +
                             " predicted " + std::to_string(entry.at("stn_prediction").get<int>());
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  }
  expect_image(out() / "contact_sheet.png", {4 * 2 * 28 * 8, 4 * (28 * 8 + 24)});

  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(accuracy: (\d+)/(\d+) = ([\d.]+)%)")))
      << r.out;
  EXPECT_EQ(m[2].str(), "16");
  const double accuracy = std::stod(m[3].str());
  EXPECT_GE(accuracy, 60.0);  // the model card's 85 %, give or take a 16-digit sample
  EXPECT_LE(accuracy, 100.0);
}

TEST_F(SampleStnRectify, HelpAndBadInput) {
  const SampleRun help = run("stn_rectify", "--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--output"), std::string::npos) << help.out;
  const SampleRun bad = run("stn_rectify", "--input='" + path("none.png") + "' " + out_arg());
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("stn_rectify: error: no such file or folder: " + path("none.png")),
            std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace cvattn::test
