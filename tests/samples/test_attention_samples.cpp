// The attention samples run on the bundled assets (their defaults) into a scratch folder and
// write every promised PNG, of the expected size and not blank; their numbers on the bundled
// Fashion-MNIST and synthetic images match PyTorch's (assets/fashion/labels.json,
// assets/synthetic/annotations.json); --help and bad options behave. One ctest entry per sample
// (sample_attention_demo, ...) filters this suite.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/samples.hpp"

namespace {

namespace fs = std::filesystem;
using cvattn::test::expect_picture;
using cvattn::test::SampleRun;
using cvattn::test::SampleTest;

const std::vector<std::string> kPhotos = {"astronaut", "camera", "chelsea", "coffee",
                                          "hubble",    "ihc",    "retina",  "rocket"};
std::vector<std::string> synthetic_stems() {
  std::vector<std::string> out;
  for (int i = 0; i < 12; ++i) out.push_back((i < 10 ? "shape_0" : "shape_") + std::to_string(i));
  return out;
}

// ---- attention_demo -----------------------------------------------------------------------

TEST_F(SampleTest, AttentionDemoWritesPanelsSheetsAndIndex) {
  const SampleRun r = run("attention_demo", "--model=shapes " + out_arg());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 10 panels for photos (with the fully convolutional gate), 9 for the 64x64 images, 4 columns
  // of 320x256 cells with 24-pixel labels: 3 rows either way.
  for (const auto& stem : kPhotos) expect_picture(out() / (stem + "_sheet.png"), {1280, 840});
  for (const auto& stem : synthetic_stems()) {
    expect_picture(out() / (stem + "_sheet.png"), {1280, 840});
    for (const char* panel : {"input", "cbam_spatial", "sk_share", "dcn_offsets", "dcn_taps",
                              "saliency_spectral", "saliency_fine_grained"}) {
      expect_picture(out() / stem / (std::string(panel) + ".png"), {256, 256});
    }
    for (const char* chart : {"cbam_channels", "sk_paths"}) {
      expect_picture(out() / stem / (std::string(chart) + ".png"), {320, 256});
    }
    EXPECT_FALSE(fs::exists(out() / stem / "cbam_spatial_fullres.png"));
  }
  // chelsea.jpg is 320x213: panels of 256x170, and the fully convolutional gate.
  expect_picture(out() / "chelsea" / "cbam_spatial_fullres.png", {256, 170});
  expect_picture(out() / "chelsea" / "saliency_spectral.png", {256, 170});
  expect_picture(out() / "index.png", {5 * 256, 4 * (256 + 24)});
  // The figures PyTorch recorded for these 12 images: 12 right, peak in the box for 9.
  EXPECT_NE(r.out.find("12 annotated images: accuracy 100.00 % (12), CBAM spatial-attention "
                       "peak inside the target box 75.00 % (9;"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("20/20"), std::string::npos) << "progress bar: " << r.err;
  // One prediction line per image.
  EXPECT_NE(r.out.find("chelsea.jpg: predicted stripes_"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", no label"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("shape_00.png: predicted stripes_"), std::string::npos) << r.out;
}

// The default: the Fashion-MNIST CNN on the bundled test images, with PyTorch's predictions
// (assets/fashion/labels.json), a CAM, CBAM's spatial gate and the three gates' bar charts.
TEST_F(SampleTest, AttentionDemoFashionByDefault) {
  const SampleRun r = run("attention_demo", out_arg());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(std::string(CVATTN_ASSETS_DIR) + "/fashion/labels.json");
  const nlohmann::json labels = nlohmann::json::parse(in);
  const auto& classes = labels.at("classes");
  int right = 0, images = 0;
  for (const auto& [name, entry] : labels.items()) {
    if (name == "classes") continue;
    ++images;
    const std::string stem = name.substr(0, name.size() - 4);
    const int label = entry.at("label").get<int>();
    const int pred = entry.at("fashion_cnn_prediction").get<int>();
    right += label == pred;
    const std::string line = name + ": predicted " + classes.at(pred).get<std::string>() + " (p ";
    const auto at = r.out.find(line);
    ASSERT_NE(at, std::string::npos) << line << "\n" << r.out;
    const std::string verdict =
        ", label " + classes.at(label).get<std::string>() + (label == pred ? " ok" : " WRONG");
    EXPECT_EQ(r.out.substr(r.out.find(')', at) + 1, verdict.size()), verdict) << name;
    for (const char* panel : {"input", "cam", "cbam_spatial"}) {
      expect_picture(out() / stem / (std::string(panel) + ".png"), {256, 256});
    }
    for (const char* chart : {"se_channels", "sk_paths", "cbam_channels"}) {
      expect_picture(out() / stem / (std::string(chart) + ".png"), {320, 256});
    }
    expect_picture(out() / (stem + "_sheet.png"), {3 * 320, 2 * (256 + 24)});
  }
  EXPECT_EQ(images, 30);
  expect_picture(out() / "index.png");
  char figure[96];
  std::snprintf(figure, sizeof figure, "30 labelled images: accuracy %.2f %% (%d)",
                100.0 * right / 30, right);
  EXPECT_NE(r.out.find(figure), std::string::npos) << figure << "\n" << r.out;
  EXPECT_NE(r.out.find("wrote 30 contact sheets, "), std::string::npos) << r.out;
}

TEST_F(SampleTest, AttentionDemoStatsOnlyOnOneFolderWritesNothing) {
  const SampleRun r = run("attention_demo", out_arg() + " --model=shapes --stats-only --input='" +
                                                std::string(CVATTN_ASSETS_DIR) + "/synthetic'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("accuracy 100.00 %"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out()));
}

TEST_F(SampleTest, AttentionDemoOptions) {
  const SampleRun help = run("attention_demo", "--help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* key : {"--input", "--output", "--colormap", "--alpha", "--stats-only"}) {
    EXPECT_NE(help.out.find(key), std::string::npos) << key;
  }
  const std::string one =
      "--model=shapes --input='" + std::string(CVATTN_ASSETS_DIR) + "/synthetic/shape_03.png'";
  const SampleRun jet =
      run("attention_demo", out_arg() + " " + one + " --colormap=jet --alpha=0.3");
  ASSERT_EQ(jet.exit_code, 0) << jet.err;
  expect_picture(out() / "shape_03_sheet.png", {1280, 840});
  const SampleRun bad_map = run("attention_demo", out_arg() + " " + one + " --colormap=nosuch");
  EXPECT_EQ(bad_map.exit_code, 1);
  EXPECT_NE(bad_map.err.find("attention_demo: error:"), std::string::npos) << bad_map.err;
  EXPECT_EQ(run("attention_demo", out_arg() + " " + one + " --alpha=1.5").exit_code, 1);
  const SampleRun missing = run("attention_demo", out_arg() + " --input=/no/such/folder");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/no/such/folder"), std::string::npos) << missing.err;
}

// ---- deform_sampling ----------------------------------------------------------------------

TEST_F(SampleTest, DeformSamplingWritesSheets) {
  const SampleRun r = run("deform_sampling", out_arg());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Photos: regular grid, taps at 64x64 and fully convolutional, in 320-pixel cells.
  expect_picture(out() / "chelsea_deform.png", {960, 213 + 24});
  for (const char* panel : {"regular", "dcn_64", "dcn_fullres"}) {
    expect_picture(out() / "chelsea" / (std::string(panel) + ".png"), {320, 213});
  }
  for (const auto& stem : synthetic_stems()) {
    expect_picture(out() / (stem + "_deform.png"), {960, 320 + 24});
    expect_picture(out() / stem / "dcn_64.png", {320, 320});
  }
  expect_picture(out() / "index.png", {5 * 320, 4 * (320 + 24)});
}

TEST_F(SampleTest, DeformSamplingPoints) {
  const std::string one = "--input='" + std::string(CVATTN_ASSETS_DIR) + "/images/coffee.jpg'";
  const SampleRun r = run("deform_sampling", out_arg() + " " + one + " --points='10,10;200,150'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_picture(out() / "coffee_deform.png");
  const SampleRun outside =
      run("deform_sampling", out_arg() + " " + one + " --points='10,10;999,5'");
  EXPECT_EQ(outside.exit_code, 1);
  EXPECT_NE(outside.err.find("(999, 5) lies outside"), std::string::npos) << outside.err;
  EXPECT_EQ(run("deform_sampling", out_arg() + " " + one + " --points='10;x'").exit_code, 1);
  EXPECT_EQ(run("deform_sampling", "--help").exit_code, 0);
}

// ---- self_attention_query -----------------------------------------------------------------

TEST_F(SampleTest, SelfAttentionQueryWritesSheets) {
  const SampleRun r = run("self_attention_query", out_arg());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Input + 4 default queries = 5 panels in 3 columns: 2 rows of 256-pixel cells.
  for (const auto& stem : synthetic_stems()) {
    expect_picture(out() / (stem + "_queries.png"), {768, 2 * (256 + 24)});
    for (int q = 0; q < 4; ++q) {
      expect_picture(out() / stem / ("query_" + std::to_string(q) + ".png"), {256, 256});
    }
  }
  expect_picture(out() / "chelsea_queries.png", {768, 2 * (170 + 24)});
  expect_picture(out() / "index.png", {5 * 256, 4 * (256 + 24)});
}

TEST_F(SampleTest, SelfAttentionQueryOptions) {
  const std::string one = "--input='" + std::string(CVATTN_ASSETS_DIR) + "/synthetic/shape_01.png'";
  const SampleRun r = run("self_attention_query",
                          out_arg() + " " + one + " --queries='32,32;5,60' --similarity=cosine");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_picture(out() / "shape_01_queries.png", {768, 256 + 24});
  EXPECT_FALSE(fs::exists(out() / "shape_01" / "query_2.png"));
  EXPECT_EQ(run("self_attention_query", out_arg() + " " + one + " --similarity=l2").exit_code, 1);
  EXPECT_EQ(run("self_attention_query", out_arg() + " " + one + " --temperature=0").exit_code, 1);
  EXPECT_EQ(run("self_attention_query", out_arg() + " " + one + " --queries='64,0'").exit_code, 1);
  EXPECT_EQ(run("self_attention_query", "--help").exit_code, 0);
}

}  // namespace
