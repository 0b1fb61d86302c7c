// libFuzzer harness: the cv::dnn custom layers (cvattn/dnn/layers.hpp) built from arbitrary
// attributes, constant blobs and input shapes, as OpenCV's ONNX importer would hand them over
// (LayerParams with ONNX or OpenCV-renamed keys, int/string/list values of any sign and size),
// then getMemoryShapes and, when that accepts, forward on small random data.
//
// Acceptable outcomes: success, or a cv::Exception whose message starts with "cvattn::dnn" and
// names the layer. Anything else (another exception, a cv::Exception from OpenCV's own code that
// does not name the node, a crash, a sanitizer report) aborts.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <opencv2/dnn.hpp>
#include <string>
#include <vector>

#include "cvattn/dnn/layers.hpp"
#include "fuzz_common.hpp"

namespace {

// Consumes the input bytes; 0 once they run out.
class Bytes {
 public:
  Bytes(const std::uint8_t* data, std::size_t size) : p_(data), end_(data + size) {}
  std::uint8_t u8() { return p_ < end_ ? *p_++ : 0; }
  int small() { return int(u8() % 8); }
  // Mostly small, sometimes negative, zero or huge.
  int value() {
    const std::uint8_t kind = u8();
    switch (kind % 8) {
      case 0:
        return 0;
      case 1:
        return -int(u8() % 4) - 1;
      case 2:
        return 1 << (u8() % 31);
      case 3:
        return -(1 << (u8() % 31));
      default:
        return int(u8() % 5) + 1;
    }
  }
  bool more() const { return p_ < end_; }

 private:
  const std::uint8_t* p_;
  const std::uint8_t* end_;
};

const char* const kTypes[] = {"GridSample",           "AffineGrid",
                              "DeformConv",           "com.microsoft.GridSample",
                              "mmcv.grid_sampler",    "mmcv.MMCVModulatedDeformConv2d",
                              "mmcv.MMCVDeformConv2d"};
const char* const kIntKeys[] = {"align_corners", "group",         "offset_group",
                                "groups",        "deform_groups", "interpolation_mode",
                                "padding_mode",  "bias",          "im2col_step"};
const char* const kListKeys[] = {"stride",    "strides",     "pad",          "pads",   "dilation",
                                 "dilations", "kernel_size", "kernel_shape", "padding"};
const char* const kStringKeys[] = {"mode", "padding_mode", "group", "stride"};
const char* const kWords[] = {"bilinear", "linear",     "nearest",   "bicubic", "cubic", "zeros",
                              "border",   "reflection", "trilinear", "",        "2"};

cv::dnn::MatShape shape_of(Bytes& in) {
  cv::dnn::MatShape s(std::size_t(in.u8() % 7));  // rank 0..6
  for (int& d : s) {
    const bool odd = in.small() == 7;  // then a value of any sign or size
    d = odd ? in.value() : in.small();
  }
  return s;
}

std::int64_t total(const cv::dnn::MatShape& s) {
  std::int64_t n = 1;
  for (const int d : s) {
    if (d < 0) return -1;
    n *= d;
    if (n > (1 << 14)) return -1;
  }
  return n;
}

cv::Mat blob_of(Bytes& in) {
  const cv::dnn::MatShape s = shape_of(in);
  if (s.empty() || total(s) < 0) return cv::Mat(1, 1, CV_32F, cv::Scalar(1.0f));
  const bool ints = in.u8() % 4 == 0;  // like an int64 initializer (AffineGrid's size)
  cv::Mat m(int(s.size()), s.data(), ints ? CV_32S : CV_32F);
  if (ints) {
    for (std::size_t i = 0; i < m.total(); ++i) m.ptr<int>()[i] = in.value();
  } else {
    for (std::size_t i = 0; i < m.total(); ++i) m.ptr<float>()[i] = float(int(in.u8()) - 128) / 32;
  }
  return m;
}

[[noreturn]] void escaped(const char* what) {
  std::fprintf(stderr, "fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  cvattn::fuzz::init_limits();
  cvattn::dnn::registerLayers();
  cv::setNumThreads(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes in(data, size);
  cv::dnn::LayerParams params;
  params.type = kTypes[in.u8() % (sizeof(kTypes) / sizeof(kTypes[0]))];
  params.name = "onnx_node!fuzz";
  for (int a = in.small(); a > 0; --a) {
    // Each attribute: kind byte, key byte, then the value (read in this order).
    const int kind = in.u8() % 3;
    const std::uint8_t key = in.u8();
    if (kind == 0) {
      const int v = in.value();
      params.set(kIntKeys[key % (sizeof(kIntKeys) / sizeof(kIntKeys[0]))], v);
    } else if (kind == 1) {
      std::vector<int> v(std::size_t(in.small()));
      for (int& x : v) x = in.value();
      params.set(kListKeys[key % (sizeof(kListKeys) / sizeof(kListKeys[0]))],
                 cv::dnn::DictValue::arrayInt(v.data(), int(v.size())));
    } else {
      const std::uint8_t word = in.u8();
      params.set(kStringKeys[key % (sizeof(kStringKeys) / sizeof(kStringKeys[0]))],
                 cv::String(kWords[word % (sizeof(kWords) / sizeof(kWords[0]))]));
    }
  }
  for (int b = in.u8() % 3; b > 0; --b) params.blobs.push_back(blob_of(in));
  std::vector<cv::dnn::MatShape> shapes(std::size_t(in.u8() % 6));
  for (auto& s : shapes) s = shape_of(in);

  try {
    cv::Ptr<cv::dnn::Layer> layer = cv::dnn::LayerFactory::createLayerInstance(params.type, params);
    CVATTN_FUZZ_ASSERT(!layer.empty());
    std::vector<cv::dnn::MatShape> outs, internals;
    layer->getMemoryShapes(shapes, 1, outs, internals);
    CVATTN_FUZZ_ASSERT(outs.size() == 1);
    if (total(outs[0]) < 0) return 0;  // valid but too big to run here
    std::vector<cv::Mat> inputs;
    for (const auto& s : shapes) {
      if (total(s) < 0) return 0;
      cv::Mat m(int(s.size()), s.data(), CV_32F);
      for (std::size_t i = 0; i < m.total(); ++i)
        m.ptr<float>()[i] = float(int(in.u8()) - 128) / 40;
      inputs.push_back(m);
    }
    std::vector<cv::Mat> outputs{cv::Mat(int(outs[0].size()), outs[0].data(), CV_32F)};
    std::vector<cv::Mat> scratch;
    layer->forward(inputs, outputs, scratch);
  } catch (const cv::Exception& e) {
    // Our layers' errors: "cvattn::dnn <type> 'onnx_node!fuzz': ...".
    if (e.err.rfind("cvattn::dnn", 0) != 0 || e.err.find("onnx_node!fuzz") == std::string::npos) {
      std::fprintf(stderr, "fuzz: cv::Exception not naming the layer: %s\n", e.what());
      std::abort();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: escaped %s\n", e.what());
    escaped("non-cv::Exception");
  } catch (...) {
    escaped("unknown exception");
  }
  return 0;
}
