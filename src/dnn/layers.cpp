#include "cvattn/dnn/layers.hpp"

#include <cstring>
#include <mutex>
#include <sstream>

#include <opencv2/dnn.hpp>
#include <opencv2/dnn/shape_utils.hpp>

#include "cvattn/core/error.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/functional/deform_conv.hpp"
#include "cvattn/functional/sampling.hpp"

// How OpenCV 4.6's ONNX importer hands an op it does not know to a registered layer
// (docs/dnn.md has the source lines): the attributes arrive in LayerParams, with kernel_shape,
// strides, pads and dilations renamed to kernel_size, stride, pad and dilation; every input that
// is an initializer (or a Constant output) is taken off the input list and appended, in order,
// to LayerParams::blobs (int64 tensors become CV_32S, 1-D tensors [n, 1] Mats); the other
// inputs are connected in order. The layer is constructed and getMemoryShapes() is called while
// the model is read, so a bad attribute fails in readNetFromONNX.

namespace cvattn::dnn {
namespace {

using cv::dnn::LayerParams;
using cv::dnn::MatShape;
namespace F = cvattn::functional;

[[noreturn]] void fail(const cv::String& where, const std::string& what) {
  CV_Error(cv::Error::StsBadArg, "cvattn::dnn " + where + ": " + what);
}

// Runs body and reports any cvattn::Error (or other std::exception) as a cv::Exception naming
// the layer, so cv::dnn callers see one exception type.
template <class Body>
auto guarded(const cv::String& where, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const cv::Exception&) {
    throw;
  } catch (const std::exception& e) {
    fail(where, e.what());
  }
}

std::string str(const MatShape& s) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < s.size(); ++i) out << (i ? ", " : "") << s[i];
  out << ']';
  return out.str();
}

// An int attribute restricted to 0 or 1.
bool flag(const LayerParams& p, const char* key, const cv::String& where) {
  const int v = p.get<int>(key, 0);
  if (v != 0 && v != 1) fail(where, cv::format("attribute %s must be 0 or 1, got %d", key, v));
  return v == 1;
}

// An int-list attribute under OpenCV's renamed key or the ONNX one; `fallback` when absent.
std::vector<int> ints(const LayerParams& p, const char* cv_key, const char* onnx_key,
                      std::vector<int> fallback) {
  const char* key = p.has(cv_key) ? cv_key : (p.has(onnx_key) ? onnx_key : nullptr);
  if (key == nullptr) return fallback;
  const cv::dnn::DictValue& v = p.get(key);
  std::vector<int> out(static_cast<std::size_t>(v.size()));
  for (int i = 0; i < v.size(); ++i) out[static_cast<std::size_t>(i)] = v.get<int>(i);
  return out;
}

// A float32 tensor over a dnn blob (no copy); cv::dnn runs float32 on the CPU backend.
Tensor as_tensor(const cv::Mat& m, const cv::String& where, const char* what) {
  if (m.depth() != CV_32F) fail(where, cv::format("%s must be float32 (CV_32F)", what));
  return Tensor(m.isContinuous() ? m : m.clone());
}

// The output shape, after checking its element count against cvattn's caps: cv::dnn allocates
// it before forward and counts elements in int.
std::vector<MatShape> output_shape(const Shape& shape, const cv::String& where) {
  guarded(where, [&] { (void)checked_numel(shape, "output"); });
  return {MatShape(shape.begin(), shape.end())};
}

void store(const Tensor& y, cv::Mat& out, const cv::String& where) {
  if (out.type() != CV_32F || out.total() != static_cast<std::size_t>(y.numel())) {
    fail(where, "output blob of unexpected size " + str(cv::dnn::shape(out)));
  }
  std::memcpy(out.ptr<float>(), y.data(), static_cast<std::size_t>(y.nbytes()));
}

class CvattnLayer : public cv::dnn::Layer {
 public:
  explicit CvattnLayer(const LayerParams& params) {
    setParamsFrom(params);
    where_ = type + " '" + name + "'";
  }

  void forward(cv::InputArrayOfArrays inputs_arr, cv::OutputArrayOfArrays outputs_arr,
               cv::OutputArrayOfArrays /*internals*/) final {
    std::vector<cv::Mat> inputs, outputs;
    inputs_arr.getMatVector(inputs);
    outputs_arr.getMatVector(outputs);
    guarded(where_, [&] { store(compute(inputs), outputs.at(0), where_); });
  }

 protected:
  // The layer's single output from the connected inputs (constants are in `blobs`).
  virtual Tensor compute(const std::vector<cv::Mat>& inputs) const = 0;

  cv::String where_;  // "GridSample 'onnx_node!gs0'"
};

// ONNX GridSample-16 (and -20's "linear"/"cubic" spellings) -> functional::grid_sample.
// Operands: X [N, C, H, W] and grid [N, Ho, Wo, 2]; a constant grid arrives as blobs[0].
class GridSampleLayer final : public CvattnLayer {
 public:
  explicit GridSampleLayer(const LayerParams& p) : CvattnLayer(p) {
    guarded(where_, [&] {
      std::string mode = p.get<cv::String>("mode", "bilinear");
      if (mode == "linear") mode = "bilinear";
      if (mode == "cubic") mode = "bicubic";
      options_.mode(F::parse_interpolation(mode))
          .padding_mode(F::parse_padding_mode(p.get<cv::String>("padding_mode", "zeros")))
          .align_corners(flag(p, "align_corners", where_));
    });
    if (blobs.size() > 1) fail(where_, "X must not be a constant initializer");
  }

  bool getMemoryShapes(const std::vector<MatShape>& in, const int /*required*/,
                       std::vector<MatShape>& out, std::vector<MatShape>& /*internal*/) const override {
    if (in.size() + blobs.size() != 2 || in.empty()) {
      fail(where_, cv::format("expects inputs X and grid, got %d", int(in.size() + blobs.size())));
    }
    const MatShape& x = in[0];
    const MatShape grid = in.size() > 1 ? in[1] : cv::dnn::shape(blobs[0]);
    if (x.size() != 4) fail(where_, "X must be [N, C, H, W], got " + str(x));
    if (grid.size() != 4 || grid[3] != 2 || grid[0] != x[0]) {
      fail(where_, "grid must be [N, Ho, Wo, 2] with N = " + std::to_string(x[0]) + ", got " +
                       str(grid));
    }
    out = output_shape({x[0], x[1], grid[1], grid[2]}, where_);
    return false;
  }

  Tensor compute(const std::vector<cv::Mat>& inputs) const override {
    const Tensor x = as_tensor(inputs.at(0), where_, "X");
    const Tensor grid = as_tensor(inputs.size() > 1 ? inputs[1] : blobs.at(0), where_, "grid");
    return F::grid_sample(x, grid, options_);
  }

 private:
  F::GridSampleOptions options_;
};

// ONNX AffineGrid-20 (2-D) -> functional::affine_grid. theta [N, 2, 3] is an input (or a
// constant); size [N, C, H, W] must be constant: the importer needs the output shape while it
// reads the model, before any input is known.
class AffineGridLayer final : public CvattnLayer {
 public:
  explicit AffineGridLayer(const LayerParams& p) : CvattnLayer(p) {
    align_corners_ = flag(p, "align_corners", where_);
    if (blobs.empty()) {
      fail(where_, "input 'size' must be a constant initializer (OpenCV infers output shapes "
                   "when it reads the model)");
    }
    if (blobs.back().depth() != CV_32S) {  // the importer turns int64 into CV_32S
      fail(where_, "input 'size' must be a constant int64 tensor");
    }
    cv::Mat size;
    blobs.back().convertTo(size, CV_64F);
    if (size.total() != 4) {
      fail(where_, cv::format("only 2-D AffineGrid is supported: size must have 4 entries "
                              "(N, C, H, W), got %d", int(size.total())));
    }
    for (int i = 0; i < 4; ++i) {
      const double v = size.at<double>(i);
      if (!(v >= 1 && v <= double(1 << 30))) fail(where_, cv::format("size[%d] = %g is invalid", i, v));
      size_.push_back(static_cast<std::int64_t>(v));
    }
  }

  bool getMemoryShapes(const std::vector<MatShape>& in, const int /*required*/,
                       std::vector<MatShape>& out, std::vector<MatShape>& /*internal*/) const override {
    if (in.size() + blobs.size() != 2) {
      fail(where_, cv::format("expects inputs theta and size, got %d", int(in.size() + blobs.size())));
    }
    const MatShape theta = in.empty() ? cv::dnn::shape(blobs[0]) : in[0];
    if (theta.size() != 3 || theta[1] != 2 || theta[2] != 3 || theta[0] != size_[0]) {
      fail(where_, "theta must be [N, 2, 3] with N = size[0] = " + std::to_string(size_[0]) +
                       ", got " + str(theta));
    }
    out = output_shape({size_[0], size_[2], size_[3], 2}, where_);
    return false;
  }

  Tensor compute(const std::vector<cv::Mat>& inputs) const override {
    const Tensor theta = as_tensor(inputs.empty() ? blobs.at(0) : inputs[0], where_, "theta");
    return F::affine_grid(theta, size_, align_corners_);
  }

 private:
  bool align_corners_ = false;
  Shape size_;
};

// ONNX DeformConv-19 (2-D) -> functional::deform_conv2d. Operands X, W, offset, optional B,
// optional mask. The importer moves constant ones (normally W and B) to blobs, so they are told
// apart by rank: B is the only 1-D operand; the 4-D ones keep their order.
class DeformConvLayer final : public CvattnLayer {
 public:
  explicit DeformConvLayer(const LayerParams& p) : CvattnLayer(p) {
    const auto stride = ints(p, "stride", "strides", {1, 1});
    const auto dilation = ints(p, "dilation", "dilations", {1, 1});
    const auto pads = ints(p, "pad", "pads", {0, 0, 0, 0});
    kernel_ = ints(p, "kernel_size", "kernel_shape", {});
    group_ = p.get<int>("group", 1);
    offset_group_ = p.get<int>("offset_group", 1);
    if (stride.size() != 2 || dilation.size() != 2 || (!kernel_.empty() && kernel_.size() != 2)) {
      fail(where_, "only 2-D DeformConv is supported (strides, dilations and kernel_shape "
                   "need 2 values)");
    }
    if (pads.size() != 4) fail(where_, "pads must have 4 values (h_begin, w_begin, h_end, w_end)");
    if (pads[0] != pads[2] || pads[1] != pads[3]) {
      fail(where_, cv::format("asymmetric pads [%d, %d, %d, %d] are not supported (begin must "
                              "equal end)", pads[0], pads[1], pads[2], pads[3]));
    }
    if (stride[0] < 1 || stride[1] < 1 || dilation[0] < 1 || dilation[1] < 1 || pads[0] < 0 ||
        pads[1] < 0) {
      fail(where_, "strides and dilations must be >= 1 and pads >= 0");
    }
    if (group_ < 1 || offset_group_ < 1) fail(where_, "group and offset_group must be >= 1");
    options_.stride(Pair2(stride[0], stride[1]))
        .padding(Pair2(pads[0], pads[1]))
        .dilation(Pair2(dilation[0], dilation[1]));
    for (std::size_t i = 0; i < blobs.size(); ++i) {
      const int slot = blobs[i].dims == 4 ? kW : kB;
      if (blob_of_[slot] >= 0) {
        fail(where_, "only W and B may be constant initializers (X, offset and mask must be "
                     "computed or graph inputs)");
      }
      blob_of_[slot] = static_cast<int>(i);
    }
  }

  bool getMemoryShapes(const std::vector<MatShape>& in, const int /*required*/,
                       std::vector<MatShape>& out, std::vector<MatShape>& /*internal*/) const override {
    std::vector<MatShape> blob_shapes;
    for (const auto& b : blobs) blob_shapes.push_back(cv::dnn::shape(b));
    const Slots s = resolve(in);
    auto shape_of = [&](int slot) -> MatShape {
      return s.from_blob[slot] ? blob_shapes[std::size_t(s.index[slot])] : in[std::size_t(s.index[slot])];
    };
    const MatShape x = shape_of(kX), w = shape_of(kW), off = shape_of(kOffset);
    if (x.size() != 4) fail(where_, "X must be [N, C, H, W], got " + str(x));
    const int cin = x[1], cout = w[0], kh = w[2], kw = w[3];
    if (w[1] * group_ != cin || cout % group_ != 0) {
      fail(where_, cv::format("W %s does not fit X with C = %d and group = %d (expected "
                              "[M, C/group, kH, kW] with M divisible by group)",
                              str(w).c_str(), cin, group_));
    }
    if (!kernel_.empty() && (kernel_[0] != kh || kernel_[1] != kw)) {
      fail(where_, cv::format("kernel_shape [%d, %d] differs from W %s", kernel_[0], kernel_[1],
                              str(w).c_str()));
    }
    if (cin % offset_group_ != 0) {
      fail(where_, cv::format("offset_group %d does not divide C = %d", offset_group_, cin));
    }
    const auto& st = options_.stride();
    const auto& pd = options_.padding();
    const auto& dl = options_.dilation();
    const std::int64_t ho = (x[2] + 2 * pd.h - dl.h * (kh - 1) - 1) / st.h + 1;
    const std::int64_t wo = (x[3] + 2 * pd.w - dl.w * (kw - 1) - 1) / st.w + 1;
    if (ho < 1 || wo < 1) fail(where_, "X " + str(x) + " is too small for the kernel");
    const MatShape want_off{x[0], 2 * offset_group_ * kh * kw, int(ho), int(wo)};
    if (off != want_off) fail(where_, "offset must be " + str(want_off) + ", got " + str(off));
    if (s.index[kMask] >= 0) {
      const MatShape want_mask{x[0], offset_group_ * kh * kw, int(ho), int(wo)};
      if (shape_of(kMask) != want_mask) {
        fail(where_, "mask must be " + str(want_mask) + ", got " + str(shape_of(kMask)));
      }
    }
    if (s.index[kB] >= 0) {
      const MatShape b = shape_of(kB);
      if (cv::dnn::total(b) != cout) fail(where_, cv::format("B must have %d entries, got ", cout) + str(b));
    }
    out = output_shape({x[0], cout, ho, wo}, where_);
    return false;
  }

  Tensor compute(const std::vector<cv::Mat>& inputs) const override {
    std::vector<MatShape> shapes;
    for (const auto& m : inputs) shapes.push_back(cv::dnn::shape(m));
    const Slots s = resolve(shapes);
    static const char* const kNames[] = {"X", "W", "offset", "B", "mask"};
    auto tensor_of = [&](int slot) -> Tensor {
      if (s.index[slot] < 0) return {};
      const auto i = std::size_t(s.index[slot]);
      return as_tensor(s.from_blob[slot] ? blobs[i] : inputs[i], where_, kNames[slot]);
    };
    const Tensor w = tensor_of(kW);
    Tensor b = tensor_of(kB);
    if (b.defined()) b = b.reshape({w.dim(0)});
    return F::deform_conv2d(tensor_of(kX), tensor_of(kOffset), w, b, tensor_of(kMask), options_);
  }

 private:
  enum Slot { kX, kW, kOffset, kB, kMask, kSlots };
  struct Slots {
    int index[kSlots] = {-1, -1, -1, -1, -1};  // into inputs or blobs; -1: absent
    bool from_blob[kSlots] = {};
  };

  // Which input or blob plays which ONNX operand, given the connected inputs' shapes.
  Slots resolve(const std::vector<MatShape>& in) const {
    Slots s;
    for (int slot : {kW, kB}) {
      if (blob_of_[slot] >= 0) {
        s.index[slot] = blob_of_[slot];
        s.from_blob[slot] = true;
      }
    }
    std::vector<int> four_d;
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (in[i].size() == 4) {
        four_d.push_back(int(i));
      } else if (s.index[kB] < 0) {
        s.index[kB] = int(i);
      } else {
        fail(where_, "unexpected operand of shape " + str(in[i]));
      }
    }
    std::vector<int> order{kX, kW, kOffset, kMask};
    if (s.from_blob[kW]) order.erase(order.begin() + 1);
    if (four_d.size() + 1 < order.size() || four_d.size() > order.size()) {
      fail(where_, cv::format("expects X, W, offset and optionally B and mask; got %d inputs "
                              "and %d constants", int(in.size()), int(blobs.size())));
    }
    for (std::size_t i = 0; i < four_d.size(); ++i) s.index[order[i]] = four_d[i];
    return s;
  }

  F::DeformConv2dOptions options_;
  std::vector<int> kernel_;
  int group_ = 1;
  int offset_group_ = 1;
  int blob_of_[kSlots] = {-1, -1, -1, -1, -1};
};

template <class LayerClass>
cv::Ptr<cv::dnn::Layer> create(LayerParams& params) {
  return cv::makePtr<LayerClass>(params);
}

struct Registration {
  const char* type;
  cv::dnn::LayerFactory::Constructor constructor;
};
const Registration kLayers[] = {
    {"GridSample", &create<GridSampleLayer>},
    {"AffineGrid", &create<AffineGridLayer>},
    {"DeformConv", &create<DeformConvLayer>},
};

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
bool registered = false;  // guarded by registry_mutex()

}  // namespace

void registerLayers() {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  if (registered) return;
  for (const auto& r : kLayers) cv::dnn::LayerFactory::registerLayer(r.type, r.constructor);
  registered = true;
}

void unregisterLayers() {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  if (!registered) return;
  for (const auto& r : kLayers) cv::dnn::LayerFactory::unregisterLayer(r.type);
  registered = false;
}

std::vector<std::string> layerTypes() {
  std::vector<std::string> out;
  for (const auto& r : kLayers) out.emplace_back(r.type);
  return out;
}

}  // namespace cvattn::dnn
