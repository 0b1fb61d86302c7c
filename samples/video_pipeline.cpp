// video_pipeline: cvattn inside a frame-by-frame OpenCV pipeline.
//
//   cv::VideoCapture (video file or printf image sequence) or a folder of images
//   -> cv::dnn::blobFromImage -> a cv::dnn::Net read from ONNX with cvattn's custom layers
//      (AffineGrid + GridSample) and the same network as a cvattn StnClassifier module
//   -> overlays (the transformer's sampling region, the rectified digit, the prediction)
//   -> cv::VideoWriter (MJPG in AVI: OpenCV's built-in writer, present in every build)
//
// Default input: the bundled distorted digits assets/digits/distorted_%02d.png as a sequence,
// with the trained spatial-transformer classifier assets/models/stn_digits.onnx (and its
// state_dict assets/weights/stn_digits.safetensors for the cvattn path). Prints the time of each
// stage per frame and a summary.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>
#include <string>
#include <vector>

#include "cvattn/cvattn.hpp"
#include "sample_cli.hpp"

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Frames from a folder of images (sorted by name) or from anything cv::VideoCapture opens.
class FrameSource {
 public:
  explicit FrameSource(const std::string& input) {
    if (fs::is_directory(input)) {
      for (const auto& e : fs::directory_iterator(input)) files_.push_back(e.path().string());
      std::sort(files_.begin(), files_.end());
    } else if (!capture_.open(input)) {
      throw std::runtime_error("cannot open input '" + input + "'");
    }
  }
  bool next(cv::Mat& frame) {
    if (!capture_.isOpened()) {
      while (index_ < files_.size()) {
        frame = cv::imread(files_[index_++], cv::IMREAD_COLOR);
        if (!frame.empty()) return true;  // skips non-images (labels.json, ...)
      }
      return false;
    }
    return capture_.read(frame) && !frame.empty();
  }

 private:
  cv::VideoCapture capture_;
  std::vector<std::string> files_;
  std::size_t index_ = 0;
};

// A printf-style sequence ("digits/distorted_%02d.png") is found through its folder, anything
// else through sample::find_asset: relative to --assets unless it exists as given.
std::string sample_input(const std::string& input) {
  const fs::path p(input);
  if (input.find('%') != std::string::npos && p.has_parent_path() && !fs::exists(p.parent_path())) {
    return (sample::find_asset(p.parent_path().string()) / p.filename()).string();
  }
  return sample::find_asset(input).string();
}

int argmax(const float* p, int n) { return int(std::max_element(p, p + n) - p); }

}  // namespace

int main(int argc, char** argv) {
  const std::string keys =
      std::string("{help h  |                                             | print this help }") +
      "{input i | digits/distorted_%02d.png | video file, printf-style image sequence or folder "
      "of images (relative to --assets unless it exists) }"
      "{model   | models/stn_digits.onnx | ONNX spatial-transformer classifier: input X "
      "[1,1,28,28] gray/255, outputs logprobs, warped, theta (relative to --assets unless it "
      "exists) }"
      "{weights | weights/stn_digits.safetensors | the same network's state_dict, run as a cvattn "
      "StnClassifier (relative to --assets unless it exists) }"
      "{output o| out/video_pipeline.avi                     | output video (MJPG AVI) }"
      "{fps     | 4                                           | output frame rate }"
      "{panel   | 224                                         | side of each panel in pixels }"
      "{frames  | 0                                           | stop after this many frames "
      "(0: all) }"
      "{threads | 0                                           | threads for cvattn and OpenCV "
      "(0: their defaults) }" +
      sample::assets_key();
  const std::string about =
      "video_pipeline: frames -> blobFromImage -> cv::dnn (cvattn custom layers) and a cvattn "
      "module -> overlays -> cv::VideoWriter, with per-frame timing";
  if (const auto done = sample::check_command_line(argc, argv, keys, about)) return *done;
  cv::CommandLineParser parser(argc, argv, keys);
  const std::string input = sample_input(parser.get<std::string>("input"));
  const std::string model = sample::find_asset(parser.get<std::string>("model")).string();
  const std::string weights = sample::find_asset(parser.get<std::string>("weights")).string();
  const std::string output = parser.get<std::string>("output");
  const double fps = parser.get<double>("fps");
  const int panel = parser.get<int>("panel");
  const int max_frames = parser.get<int>("frames");
  const int threads = parser.get<int>("threads");
  if (!parser.check()) return sample::value_errors(parser, "video_pipeline");
  if (!(fps > 0) || panel < 28 || max_frames < 0 || threads < 0) {
    std::cerr << "video_pipeline: error: need fps > 0, panel >= 28, frames >= 0, threads >= 0\n";
    return 2;
  }
  try {
    if (threads > 0) {
      cvattn::set_num_threads(threads);
      cv::setNumThreads(threads);
    }
    cvattn::dnn::registerLayers();  // before reading a model with GridSample / AffineGrid
    cv::dnn::Net net = cv::dnn::readNetFromONNX(model);
    const auto stn = cvattn::StnClassifier::from_state_dict(cvattn::io::load_safetensors(weights));

    FrameSource source(input);
    const int header = 32;
    const cv::Size out_size(2 * panel, panel + header);
    if (fs::path(output).has_parent_path()) fs::create_directories(fs::path(output).parent_path());
    cv::VideoWriter writer(output, cv::CAP_OPENCV_MJPEG,
                           cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), fps, out_size);
    if (!writer.isOpened()) throw std::runtime_error("cannot write video '" + output + "'");

    const std::vector<cv::String> outputs{"logprobs", "warped", "theta"};
    double total_dnn = 0, total_cvattn = 0, total_frame = 0, worst_diff = 0;
    int frames = 0, agree = 0;
    cv::Mat frame;
    while ((max_frames == 0 || frames < max_frames) && source.next(frame)) {
      const auto t_frame = Clock::now();
      cv::Mat gray = frame;
      if (frame.channels() != 1) {
        cv::cvtColor(frame, gray, frame.channels() == 4 ? cv::COLOR_BGRA2GRAY : cv::COLOR_BGR2GRAY);
      }
      // [1, 1, 28, 28] float32, pixels / 255: the layout both paths take.
      const cv::Mat blob = cv::dnn::blobFromImage(gray, 1.0 / 255, cv::Size(28, 28));

      auto t0 = Clock::now();
      net.setInput(blob, "X");
      std::vector<cv::Mat> out;
      net.forward(out, outputs);
      const double t_dnn = ms_since(t0);

      t0 = Clock::now();
      const cvattn::Attended direct = stn->forward_with_maps(cvattn::Tensor(blob));  // no copy
      const double t_cvattn = ms_since(t0);

      const float* logp = out[0].ptr<float>();
      const int pred = argmax(logp, 10);
      const int pred_cvattn = argmax(direct.output.data(), 10);
      double diff = 0;
      for (int k = 0; k < 10; ++k)
        diff = std::max(diff, double(std::abs(logp[k] - direct.output[k])));
      worst_diff = std::max(worst_diff, diff);
      agree += pred == pred_cvattn;

      // Left: the input with the transformer's sampling region; right: what it rectified.
      cv::Mat big, left, right;
      cv::resize(gray, big, cv::Size(panel, panel), 0, 0, cv::INTER_NEAREST);
      left = cvattn::viz::draw_grid_outline(
          big, direct.maps.at("grid"), cvattn::viz::GridOutlineOptions().thickness(2).lattice(4));
      const cvattn::Tensor warped(out[1]);
      cv::resize(cvattn::to_image(warped, 0, cvattn::ImageOptions().scale(1.0 / 255)), right,
                 cv::Size(panel, panel), 0, 0, cv::INTER_NEAREST);
      cv::cvtColor(right, right, cv::COLOR_GRAY2BGR);
      cv::Mat canvas(out_size, CV_8UC3, cv::Scalar(32, 32, 32));
      left.copyTo(canvas(cv::Rect(0, header, panel, panel)));
      right.copyTo(canvas(cv::Rect(panel, header, panel, panel)));
      const std::string text = cv::format("#%d  digit %d  p=%.2f  dnn %.2f ms  cvattn %.2f ms",
                                          frames, pred, std::exp(logp[pred]), t_dnn, t_cvattn);
      cv::putText(canvas, text, cv::Point(6, 22), cv::FONT_HERSHEY_SIMPLEX,
                  0.45 * panel / 224.0 + 0.05, cv::Scalar(255, 255, 255), 1, cv::LINE_AA);
      writer.write(canvas);
      const double t_total = ms_since(t_frame);

      std::cout << cv::format(
          "frame %3d: dnn %.3f ms, cvattn %.3f ms, frame total %.3f ms; "
          "digit %d (cvattn %d, max |dlogp| %.1e)\n",
          frames, t_dnn, t_cvattn, t_total, pred, pred_cvattn, diff);
      total_dnn += t_dnn;
      total_cvattn += t_cvattn;
      total_frame += t_total;
      ++frames;
    }
    writer.release();
    if (frames == 0) throw std::runtime_error("no frames read from '" + input + "'");
    std::cout << cv::format(
        "%d frames -> %s (%dx%d, %.3g fps). Mean per frame: dnn %.3f ms, "
        "cvattn %.3f ms, total %.3f ms. Predictions agree on %d/%d frames, "
        "max |dlogp| %.1e\n",
        frames, output.c_str(), out_size.width, out_size.height, fps, total_dnn / frames,
        total_cvattn / frames, total_frame / frames, agree, frames, worst_diff);
  } catch (const std::exception& e) {
    std::cerr << "video_pipeline: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
