// The video_pipeline sample on the bundled digits: the written AVI opens with cv::VideoCapture and
// holds one frame of the expected size per input frame, both cv::dnn (with cvattn's layers) and
// the cvattn module predict the same digits, and per-frame timings are printed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <opencv2/videoio.hpp>
#include <regex>
#include <string>

#include "support/samples.hpp"

namespace cvattn::test {
namespace {

// OMP_WAIT_POLICY=passive: cv::dnn (TBB) and cvattn (OpenMP) alternate per frame, and spinning
// libgomp workers slow both down on a loaded machine (docs/dnn.md, pipeline sample).
class SampleVideoPipeline : public SampleTest {
 protected:
  void SetUp() override {
    SampleTest::SetUp();
    ::setenv("OMP_WAIT_POLICY", "passive", 1);
  }
  // The sample's stdout and stderr together.
  std::string run_pipeline(const std::string& args, int* status) {
    const SampleRun r = run("video_pipeline", args);
    *status = r.exit_code;
    return r.out + r.err;
  }
};

// Frames in the video and their common size (an empty size when they differ).
std::pair<int, cv::Size> read_video(const std::string& file) {
  cv::VideoCapture capture(file);
  EXPECT_TRUE(capture.isOpened()) << file;
  int frames = 0;
  cv::Size size;
  cv::Mat frame;
  while (capture.read(frame) && !frame.empty()) {
    if (frames++ == 0) size = frame.size();
    if (frame.size() != size) size = {};
  }
  return {frames, size};
}

TEST_F(SampleVideoPipeline, DigitSequenceToAvi) {
  const std::string out = path("digits.avi");
  int status = -1;
  const std::string output = run_pipeline("--output=" + out + " --fps=8 --panel=112", &status);
  ASSERT_EQ(status, 0) << output;
  // 16 bundled digits; two 112-pixel panels side by side under a 32-pixel caption.
  EXPECT_EQ(read_video(out), std::make_pair(16, cv::Size(224, 144)));
  EXPECT_TRUE(std::regex_search(output, std::regex(R"(frame +0: dnn [\d.]+ ms, cvattn [\d.]+ ms)")))
      << output;
  EXPECT_NE(output.find("Predictions agree on 16/16 frames"), std::string::npos) << output;
}

TEST_F(SampleVideoPipeline, FolderInputAndFrameLimit) {
  const std::string out = path("three.avi");
  int status = -1;
  const std::string output = run_pipeline("--input=" + std::string(CVATTN_ASSETS_DIR) +
                                              "/digits --output=" + out + " --frames=3 --panel=112",
                                          &status);
  ASSERT_EQ(status, 0) << output;
  EXPECT_EQ(read_video(out), std::make_pair(3, cv::Size(224, 144)));
}

TEST_F(SampleVideoPipeline, HelpAndBadInput) {
  int status = -1;
  const std::string help = run_pipeline("--help", &status);
  EXPECT_EQ(status, 0);
  EXPECT_NE(help.find("--output"), std::string::npos) << help;
  const std::string bad =
      run_pipeline("--input=" + path("none.avi") + " --output=" + path("out.avi"), &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(bad.find("video_pipeline: error: cannot open input"), std::string::npos) << bad;
}

}  // namespace
}  // namespace cvattn::test
