#pragma once
// Helpers for the sample-program tests: run a sample into a fresh temporary folder, capture what
// it prints, and check the PNGs it wrote.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>

namespace cvattn::test {

// A temporary folder removed when the test ends.
class TempDir {
 public:
  explicit TempDir(const std::string& tag)
      : path_(std::filesystem::temp_directory_path() /
              ("cvattn_" + tag + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct RunResult {
  int status = -1;     // the shell's exit status
  std::string output;  // stdout and stderr
};

inline RunResult run_command(const std::string& command) {
  RunResult r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  std::size_t got = 0;
  while ((got = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), got);
  const int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

// The PNG exists, has the expected size (when given) and is not blank (some pixel spread).
inline void expect_picture(const std::filesystem::path& file, cv::Size size = {}) {
  SCOPED_TRACE(file.string());
  const cv::Mat image = cv::imread(file.string(), cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(image.empty()) << "missing or unreadable";
  if (!size.empty()) {
    EXPECT_EQ(image.size(), size);
  }
  cv::Scalar mean, stddev;
  cv::meanStdDev(image, mean, stddev);
  EXPECT_GT(stddev[0] + stddev[1] + stddev[2], 0.0) << "blank image";
}

}  // namespace cvattn::test
