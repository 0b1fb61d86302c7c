// check_video <file> <frames> <width> <height>: exits 0 when cv::VideoCapture opens the video
// and it holds exactly that many decodable frames of that size (used by sample tests).
#include <cstdlib>
#include <iostream>

#include <opencv2/core.hpp>
#include <opencv2/videoio.hpp>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: check_video <file> <frames> <width> <height>\n";
    return 2;
  }
  const int want_frames = std::atoi(argv[2]);
  const cv::Size want_size(std::atoi(argv[3]), std::atoi(argv[4]));
  cv::VideoCapture capture(argv[1]);
  if (!capture.isOpened()) {
    std::cerr << "check_video: cannot open " << argv[1] << "\n";
    return 1;
  }
  int frames = 0;
  cv::Mat frame;
  while (capture.read(frame) && !frame.empty()) {
    if (frame.size() != want_size) {
      std::cerr << "check_video: frame " << frames << " is " << frame.size() << ", expected "
                << want_size << "\n";
      return 1;
    }
    ++frames;
  }
  if (frames != want_frames) {
    std::cerr << "check_video: " << frames << " frames, expected " << want_frames << "\n";
    return 1;
  }
  std::cout << "check_video: " << argv[1] << ": " << frames << " frames of " << want_size << "\n";
  return 0;
}
