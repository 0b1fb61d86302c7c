// The video_pipeline sample on the bundled digits: the written AVI opens with cv::VideoCapture and
// holds one frame of the expected size per input frame, both cv::dnn (with cvattn's layers) and
// the cvattn module predict the same digits, and per-frame timings are printed.
#include <gtest/gtest.h>

#include <opencv2/videoio.hpp>
#include <regex>
#include <string>

#include "samples/sample_run.hpp"

namespace cvattn::test {
namespace {

// OMP_WAIT_POLICY=passive: cv::dnn (TBB) and cvattn (OpenMP) alternate per frame, and spinning
// libgomp workers slow both down on a loaded machine (docs/dnn.md, pipeline sample).
std::string sample() { return std::string("OMP_WAIT_POLICY=passive ") + CVATTN_SAMPLE; }

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

TEST(SampleVideoPipeline, DigitSequenceToAvi) {
  const TempDir dir("sample_video_pipeline");
  const std::string out = (dir.path() / "digits.avi").string();
  const RunResult r = run_command(sample() + " --output=" + out + " --fps=8 --panel=112");
  ASSERT_EQ(r.status, 0) << r.output;
  // 16 bundled digits; two 112-pixel panels side by side under a 32-pixel caption.
  EXPECT_EQ(read_video(out), std::make_pair(16, cv::Size(224, 144)));
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(frame +0: dnn [\d.]+ ms, cvattn [\d.]+ ms)")))
      << r.output;
  EXPECT_NE(r.output.find("Predictions agree on 16/16 frames"), std::string::npos) << r.output;
}

TEST(SampleVideoPipeline, FolderInputAndFrameLimit) {
  const TempDir dir("sample_video_pipeline_folder");
  const std::string out = (dir.path() / "three.avi").string();
  const RunResult r = run_command(sample() + " --input=" + CVATTN_ASSETS_DIR + "/digits --output=" +
                                  out + " --frames=3 --panel=112");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(read_video(out), std::make_pair(3, cv::Size(224, 144)));
}

TEST(SampleVideoPipeline, HelpAndBadInput) {
  const RunResult help = run_command(sample() + " --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.output.find("--output"), std::string::npos) << help.output;
  const TempDir dir("sample_video_pipeline_bad");
  const RunResult bad = run_command(sample() + " --input=" + (dir.path() / "none.avi").string() +
                                    " --output=" + (dir.path() / "out.avi").string());
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("video_pipeline: error: cannot open input"), std::string::npos)
      << bad.output;
}

}  // namespace
}  // namespace cvattn::test
