#include "cvattn/dnn/layers.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/shape_utils.hpp>
#include <sstream>
#include <string>

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

// Runs a layer's attribute parsing. An attribute of the wrong type (a string where an int
// belongs, a list where a scalar does) makes OpenCV's DictValue throw a cv::Exception that names
// neither the layer nor the attribute; it is re-raised naming the layer.
template <class Body>
void attributes(const cv::String& where, Body&& body) {
  try {
    body();
  } catch (const cv::Exception& e) {
    if (e.err.rfind("cvattn::dnn", 0) == 0) throw;
    fail(where, "malformed attribute: " + e.err);
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

// GridSample and the other producers' spellings of it -> functional::grid_sample, 2-D or
// volumetric. Operands: X [N, C, H, W] and grid [N, Ho, Wo, 2], or X [N, C, D, H, W] and grid
// [N, Do, Ho, Wo, 3]; a constant grid arrives as blobs[0].
//   GridSample (opset 16: bilinear/nearest/bicubic; opset 20: linear/nearest/cubic) and
//   com.microsoft.GridSample (the contrib op, opset-16 words): string mode and padding_mode.
//   mmcv.grid_sampler (mmcv's symbolic): int interpolation_mode 0/1/2 (bilinear, nearest,
//   bicubic), padding_mode 0/1/2 (zeros, border, reflection), align_corners.
class GridSampleLayer final : public CvattnLayer {
 public:
  explicit GridSampleLayer(const LayerParams& p) : CvattnLayer(p) {
    attributes(where_, [&] {
      if (type == "mmcv.grid_sampler" || type == "grid_sampler") {
        const int mode = p.get<int>("interpolation_mode", 0);
        const int pad = p.get<int>("padding_mode", 0);
        if (mode < 0 || mode > 2)
          fail(where_,
               cv::format(
                   "interpolation_mode must be 0, 1 or 2 (bilinear, nearest, bicubic), got %d",
                   mode));
        if (pad < 0 || pad > 2)
          fail(where_,
               cv::format("padding_mode must be 0, 1 or 2 (zeros, border, reflection), got %d",
                          pad));
        options_.mode(static_cast<F::Interpolation>(mode))
            .padding_mode(static_cast<F::PaddingMode>(pad));
      } else {
        const std::string mode = p.get<cv::String>("mode", "bilinear");
        if (mode == "bilinear" || mode == "linear") {
          options_.mode(F::Interpolation::bilinear);
        } else if (mode == "nearest") {
          options_.mode(F::Interpolation::nearest);
        } else if (mode == "bicubic" || mode == "cubic") {
          options_.mode(F::Interpolation::bicubic);
        } else {
          fail(where_, "unknown mode '" + mode +
                           "' (opset 16: bilinear, nearest, bicubic; "
                           "opset 20: linear, nearest, cubic)");
        }
        const std::string pad = p.get<cv::String>("padding_mode", "zeros");
        if (pad != "zeros" && pad != "border" && pad != "reflection") {
          fail(where_, "unknown padding_mode '" + pad + "' (zeros, border, reflection)");
        }
        options_.padding_mode(F::parse_padding_mode(pad));
      }
      options_.align_corners(flag(p, "align_corners", where_));
    });
    if (blobs.size() > 1) fail(where_, "X must not be a constant initializer");
  }

  bool getMemoryShapes(const std::vector<MatShape>& in, const int /*required*/,
                       std::vector<MatShape>& out,
                       std::vector<MatShape>& /*internal*/) const override {
    if (in.size() + blobs.size() != 2 || in.empty()) {
      fail(where_, cv::format("expects inputs X and grid, got %d", int(in.size() + blobs.size())));
    }
    const MatShape& x = in[0];
    const MatShape grid = in.size() > 1 ? in[1] : cv::dnn::shape(blobs[0]);
    if (x.size() != 4 && x.size() != 5) {
      fail(where_, "X must be [N, C, H, W] or [N, C, D, H, W], got " + str(x));
    }
    const int spatial = int(x.size()) - 2;
    if (spatial == 3 && options_.mode() == F::Interpolation::bicubic) {
      fail(where_, "mode bicubic/cubic supports 4-D X only (as in PyTorch), got 5-D X " + str(x));
    }
    if (grid.size() != x.size() || grid.back() != spatial || grid[0] != x[0]) {
      fail(where_, (spatial == 2 ? "grid must be [N, Ho, Wo, 2] with N = "
                                 : "grid must be [N, Do, Ho, Wo, 3] with N = ") +
                       std::to_string(x[0]) + ", got " + str(grid));
    }
    Shape y{x[0], x[1]};
    for (int i = 1; i <= spatial; ++i) y.push_back(grid[std::size_t(i)]);
    out = output_shape(y, where_);
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

// ONNX AffineGrid-20 -> functional::affine_grid, 2-D (theta [N, 2, 3], size [N, C, H, W]) or
// 3-D (theta [N, 3, 4], size [N, C, D, H, W]). theta is an input (or a constant); size must be
// constant: the importer needs the output shape while it reads the model, before any input is
// known. N is taken from theta, the spatial size from `size`: OpenCV folds a Shape(x)-derived
// size of a dynamic-batch export into a constant with N = 1, so size[0] is not trusted.
class AffineGridLayer final : public CvattnLayer {
 public:
  explicit AffineGridLayer(const LayerParams& p) : CvattnLayer(p) {
    attributes(where_, [&] { align_corners_ = flag(p, "align_corners", where_); });
    if (blobs.empty()) {
      fail(where_,
           "input 'size' must be a constant initializer (OpenCV infers output shapes "
           "when it reads the model)");
    }
    if (blobs.back().depth() != CV_32S) {  // the importer turns int64 into CV_32S
      fail(where_, "input 'size' must be a constant int64 tensor");
    }
    cv::Mat size;
    blobs.back().convertTo(size, CV_64F);
    if (size.total() != 4 && size.total() != 5) {
      fail(where_, cv::format("size must have 4 entries (N, C, H, W) or 5 (N, C, D, H, W), got "
                              "%d",
                              int(size.total())));
    }
    for (int i = 0; i < int(size.total()); ++i) {
      const double v = size.at<double>(i);
      if (!(v >= 1 && v <= double(1 << 30)))
        fail(where_, cv::format("size[%d] = %g is invalid", i, v));
      size_.push_back(static_cast<std::int64_t>(v));
    }
  }

  bool getMemoryShapes(const std::vector<MatShape>& in, const int /*required*/,
                       std::vector<MatShape>& out,
                       std::vector<MatShape>& /*internal*/) const override {
    if (in.size() + blobs.size() != 2) {
      fail(where_,
           cv::format("expects inputs theta and size, got %d", int(in.size() + blobs.size())));
    }
    const MatShape theta = in.empty() ? cv::dnn::shape(blobs[0]) : in[0];
    const int k = int(size_.size()) - 2;  // 2 or 3 spatial axes
    if (theta.size() != 3 || theta[0] < 1 || theta[1] != k || theta[2] != k + 1) {
      fail(where_, cv::format("theta must be [N, %d, %d] for a size of %d entries, got ", k, k + 1,
                              int(size_.size())) +
                       str(theta));
    }
    Shape grid{theta[0]};
    grid.insert(grid.end(), size_.begin() + 2, size_.end());
    grid.push_back(k);
    out = output_shape(grid, where_);
    return false;
  }

  Tensor compute(const std::vector<cv::Mat>& inputs) const override {
    const Tensor theta = as_tensor(inputs.empty() ? blobs.at(0) : inputs[0], where_, "theta");
    Shape size = size_;
    size[0] = theta.dim(0);
    return F::affine_grid(theta, size, align_corners_);
  }

 private:
  bool align_corners_ = false;
  Shape size_;
};

// Deformable convolution -> functional::deform_conv2d, under three spellings:
//   DeformConv (ONNX opset 19): inputs X, W, offset, optional B, optional mask; attributes
//     strides, pads (begin and end per axis, may differ), dilations, group, offset_group,
//     kernel_shape (optional, checked against W).
//   mmcv.MMCVModulatedDeformConv2d (mmcv's DCNv2 symbolic): inputs input, offset, mask, weight,
//     optional bias; attributes stride, padding, dilation (pairs), groups, deform_groups.
//   mmcv.MMCVDeformConv2d (mmcv's DCNv1 symbolic): inputs input, offset, weight; the same
//     attributes plus bias (must be 0) and im2col_step (a CUDA batching detail, ignored).
// The importer moves constant operands (normally W and B) to blobs, so they are told apart by
// rank: B is the only 1-D operand; the 4-D ones keep the producer's order.
class DeformConvLayer final : public CvattnLayer {
 public:
  explicit DeformConvLayer(const LayerParams& p) : CvattnLayer(p) {
    mmcv_ = type.find("MMCV") != std::string::npos;
    const bool modulated = type.find("Modulated") != std::string::npos;
    if (!mmcv_) {
      order_ = {kX, kW, kOffset, kMask};
      optional_ = 1;  // the mask may be left out
    } else if (modulated) {
      order_ = {kX, kOffset, kMask, kW};
    } else {
      order_ = {kX, kOffset, kW};
    }
    std::vector<int> stride, dilation, pads;
    attributes(where_, [&] {
      if (mmcv_) {
        stride = pair(ints(p, "stride", "stride", {1, 1}), "stride");
        dilation = pair(ints(p, "dilation", "dilation", {1, 1}), "dilation");
        const auto pad = pair(ints(p, "padding", "padding", {0, 0}), "padding");
        pads = {pad[0], pad[1], pad[0], pad[1]};
        group_ = p.get<int>("groups", 1);
        offset_group_ = p.get<int>("deform_groups", 1);
        if (p.get<int>("bias", 0) != 0) {
          fail(where_, "attribute bias = 1 is not supported (mmcv exports bias as an input)");
        }
      } else {
        stride = ints(p, "stride", "strides", {1, 1});
        dilation = ints(p, "dilation", "dilations", {1, 1});
        pads = ints(p, "pad", "pads", {0, 0, 0, 0});
        kernel_ = ints(p, "kernel_size", "kernel_shape", {});
        group_ = p.get<int>("group", 1);
        offset_group_ = p.get<int>("offset_group", 1);
      }
    });
    if (stride.size() != 2 || dilation.size() != 2 || (!kernel_.empty() && kernel_.size() != 2)) {
      fail(where_, cv::format("only 2-D DeformConv is supported (strides, dilations and "
                              "kernel_shape need 2 values, got %d, %d and %d)",
                              int(stride.size()), int(dilation.size()), int(kernel_.size())));
    }
    if (pads.size() != 4) {
      fail(where_, cv::format("pads must have 4 values (h_begin, w_begin, h_end, w_end), got %d",
                              int(pads.size())));
    }
    for (const int v : pads) {
      if (v < 0)
        fail(where_, cv::format("pads must be >= 0, got [%d, %d, %d, %d]", pads[0], pads[1],
                                pads[2], pads[3]));
    }
    if (stride[0] < 1 || stride[1] < 1 || dilation[0] < 1 || dilation[1] < 1) {
      fail(where_, cv::format("strides and dilations must be >= 1, got strides [%d, %d], "
                              "dilations [%d, %d]",
                              stride[0], stride[1], dilation[0], dilation[1]));
    }
    if (!kernel_.empty() && (kernel_[0] < 1 || kernel_[1] < 1)) {
      fail(where_, cv::format("kernel_shape must be >= 1, got [%d, %d]", kernel_[0], kernel_[1]));
    }
    if (group_ < 1 || offset_group_ < 1) {
      fail(where_,
           cv::format("group and offset_group must be >= 1, got %d and %d", group_, offset_group_));
    }
    // Asymmetric pads: deform_conv2d pads both sides by the smaller amount; the layer pads the
    // input with zeros by the excess (a zero row reads exactly like a sample outside the image).
    for (int a = 0; a < 2; ++a) {
      sym_[a] = std::min(pads[std::size_t(a)], pads[std::size_t(a) + 2]);
      extra_[a] = pads[std::size_t(a)] - sym_[a];
      extra_[a + 2] = pads[std::size_t(a) + 2] - sym_[a];
    }
    options_.stride(Pair2(stride[0], stride[1]))
        .padding(Pair2(sym_[0], sym_[1]))
        .dilation(Pair2(dilation[0], dilation[1]));
    for (std::size_t i = 0; i < blobs.size(); ++i) {
      const int slot = blobs[i].dims == 4 ? kW : kB;
      if (blob_of_[slot] >= 0) {
        fail(where_,
             "only W and B may be constant initializers (X, offset and mask must be "
             "computed or graph inputs)");
      }
      blob_of_[slot] = static_cast<int>(i);
    }
  }

  bool getMemoryShapes(const std::vector<MatShape>& in, const int /*required*/,
                       std::vector<MatShape>& out,
                       std::vector<MatShape>& /*internal*/) const override {
    std::vector<MatShape> blob_shapes;
    for (const auto& b : blobs) blob_shapes.push_back(cv::dnn::shape(b));
    const Slots s = resolve(in);
    auto shape_of = [&](int slot) -> MatShape {
      return s.from_blob[slot] ? blob_shapes[std::size_t(s.index[slot])]
                               : in[std::size_t(s.index[slot])];
    };
    const MatShape x = shape_of(kX), w = shape_of(kW), off = shape_of(kOffset);
    if (x.size() != 4) fail(where_, "X must be [N, C, H, W], got " + str(x));
    if (w.size() != 4) fail(where_, "W must be [M, C/group, kH, kW], got " + str(w));
    const std::int64_t cin = x[1], cout = w[0], kh = w[2], kw = w[3];
    if (std::int64_t{w[1]} * group_ != cin || cout % group_ != 0 || kh < 1 || kw < 1) {
      fail(where_, cv::format("W %s does not fit X with C = %d and group = %d (expected "
                              "[M, C/group, kH, kW] with M divisible by group)",
                              str(w).c_str(), int(cin), group_));
    }
    if (!kernel_.empty() && (kernel_[0] != kh || kernel_[1] != kw)) {
      fail(where_, cv::format("kernel_shape [%d, %d] differs from W %s", kernel_[0], kernel_[1],
                              str(w).c_str()));
    }
    if (cin % offset_group_ != 0) {
      fail(where_, cv::format("offset_group %d does not divide C = %d", offset_group_, int(cin)));
    }
    const auto& st = options_.stride();
    const auto& dl = options_.dilation();
    const std::int64_t ho =
        (x[2] + std::int64_t{sym_[0]} * 2 + extra_[0] + extra_[2] - dl.h * (kh - 1) - 1) / st.h + 1;
    const std::int64_t wo =
        (x[3] + std::int64_t{sym_[1]} * 2 + extra_[1] + extra_[3] - dl.w * (kw - 1) - 1) / st.w + 1;
    if (ho < 1 || wo < 1) fail(where_, "X " + str(x) + " is too small for the kernel");
    const Shape want_off{x[0], 2 * offset_group_ * kh * kw, ho, wo};
    guarded(where_, [&] { (void)checked_numel(want_off, "offset"); });
    if (Shape(off.begin(), off.end()) != want_off) {
      fail(where_, "offset must be " + to_string(want_off) + ", got " + str(off));
    }
    if (s.index[kMask] >= 0) {
      const Shape want_mask{x[0], offset_group_ * kh * kw, ho, wo};
      const MatShape mask = shape_of(kMask);
      if (Shape(mask.begin(), mask.end()) != want_mask) {
        fail(where_, "mask must be " + to_string(want_mask) + ", got " + str(mask));
      }
    }
    if (s.index[kB] >= 0) {
      const MatShape b = shape_of(kB);
      if (cv::dnn::total(b) != cout)
        fail(where_, cv::format("B must have %d entries, got ", int(cout)) + str(b));
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
    return F::deform_conv2d(padded(tensor_of(kX)), tensor_of(kOffset), w, b, tensor_of(kMask),
                            options_);
  }

 private:
  enum Slot { kX, kW, kOffset, kB, kMask, kSlots };
  struct Slots {
    int index[kSlots] = {-1, -1, -1, -1, -1};  // into inputs or blobs; -1: absent
    bool from_blob[kSlots] = {};
  };

  std::vector<int> pair(const std::vector<int>& v, const char* key) const {
    if (v.size() == 1) return {v[0], v[0]};
    if (v.size() != 2)
      fail(where_, cv::format("attribute %s must have 2 values, got %d", key, int(v.size())));
    return v;
  }

  // X with the asymmetric excess of the pads added as zeros (X itself when pads are symmetric).
  Tensor padded(const Tensor& x) const {
    if (extra_[0] == 0 && extra_[1] == 0 && extra_[2] == 0 && extra_[3] == 0) return x;
    const std::int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    const std::int64_t hp = h + extra_[0] + extra_[2], wp = w + extra_[1] + extra_[3];
    Tensor out = Tensor::zeros({n, c, hp, wp});
    for (std::int64_t plane = 0; plane < n * c; ++plane) {
      const cv::Mat src(int(h), int(w), CV_32F, const_cast<float*>(x.data()) + plane * h * w);
      cv::Mat dst(int(hp), int(wp), CV_32F, out.data() + plane * hp * wp);
      src.copyTo(dst(cv::Rect(extra_[1], extra_[0], int(w), int(h))));
    }
    return out;
  }

  // Which input or blob plays which operand, given the connected inputs' shapes.
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
      } else if (s.index[kB] < 0 && in[i].size() <= 2) {
        s.index[kB] = int(i);
      } else {
        fail(where_, "unexpected operand of shape " + str(in[i]));
      }
    }
    std::vector<int> order = order_;
    if (s.from_blob[kW]) order.erase(std::find(order.begin(), order.end(), int(kW)));
    if (four_d.size() + std::size_t(optional_) < order.size() || four_d.size() > order.size()) {
      fail(where_, cv::format("expects %s; got %d inputs and %d constants",
                              mmcv_ ? (order_.size() == 4
                                           ? "input, offset, mask, weight and optionally bias"
                                           : "input, offset, weight")
                                    : "X, W, offset and optionally B and mask",
                              int(in.size()), int(blobs.size())));
    }
    for (std::size_t i = 0; i < four_d.size(); ++i) s.index[order[i]] = four_d[i];
    return s;
  }

  F::DeformConv2dOptions options_;
  std::vector<int> order_;  // the producer's order of the 4-D operands
  int optional_ = 0;        // how many trailing ones of them may be left out
  bool mmcv_ = false;
  std::vector<int> kernel_;
  int sym_[2] = {0, 0};
  int extra_[4] = {0, 0, 0, 0};
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
// OpenCV 4.6 names a layer of a node in a domain other than ai.onnx "<domain>.<op_type>"
// (docs/dnn.md), or plain <op_type> with OPENCV_DNN_CUSTOM_ONNX_TYPE_INCLUDE_DOMAIN_NAME=0.
const Registration kLayers[] = {
    {"GridSample", &create<GridSampleLayer>},
    {"AffineGrid", &create<AffineGridLayer>},
    {"DeformConv", &create<DeformConvLayer>},
    {"com.microsoft.GridSample", &create<GridSampleLayer>},
    {"mmcv.grid_sampler", &create<GridSampleLayer>},
    {"grid_sampler", &create<GridSampleLayer>},
    {"mmcv.MMCVModulatedDeformConv2d", &create<DeformConvLayer>},
    {"MMCVModulatedDeformConv2d", &create<DeformConvLayer>},
    {"mmcv.MMCVDeformConv2d", &create<DeformConvLayer>},
    {"MMCVDeformConv2d", &create<DeformConvLayer>},
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
