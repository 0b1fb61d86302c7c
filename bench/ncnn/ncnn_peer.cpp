// ncnn as a peer of bench/compare_torch.py: one row's op built from ncnn's own layers (layer API,
// no model files), fed the .npy inputs compare_torch wrote, timed like `cvattn run --repeat`.
//
//     ncnn_peer --op conv2d|grid_sample|deform_conv2d|se --dir FOLDER --repeat N
//               [--out FILE.npy] [--packing 0|1] [--set KEY=VALUE]...
//
// Inputs are NCHW float32. The timed call includes what a caller holding NCHW data pays: the
// conversion of the data input to ncnn's packed layout (elempack chosen by the rule ncnn::Net
// applies between layers) and of the output back to elempack 1, whose channels are then plain
// CHW planes. ncnn Mats carry one image, so a batch is a loop over its images inside the call.
// One thread, fp32 storage and arithmetic (no fp16, bf16 or int8), pool allocators as a
// ncnn::Extractor uses. Prints {"median_ms", "min_ms", "runs", "elempack", "isa"} as one JSON
// line.
#include <allocator.h>
#include <cpu.h>
#include <layer.h>
#include <layer_type.h>
#include <mat.h>
#include <modelbin.h>
#include <option.h>
#include <paramdict.h>
#include <platform.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

struct Array {
  std::vector<int64_t> shape;
  std::vector<float> data;
  int64_t dim(size_t i) const { return i < shape.size() ? shape[i] : 1; }
};

// A minimal .npy reader: little-endian float32, C order (what compare_torch's np.save writes).
Array load_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("cannot open " + path);
  char magic[8];
  f.read(magic, 8);
  if (!f || std::memcmp(magic, "\x93NUMPY", 6) != 0) fail(path + ": not a .npy file");
  uint32_t header_len = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    f.read(reinterpret_cast<char*>(b), 2);
    header_len = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    f.read(reinterpret_cast<char*>(b), 4);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (uint32_t(b[3]) << 24);
  }
  std::string header(header_len, '\0');
  f.read(&header[0], header_len);
  if (!f) fail(path + ": truncated header");
  if (header.find("'<f4'") == std::string::npos) fail(path + ": not little-endian float32");
  if (header.find("'fortran_order': True") != std::string::npos) fail(path + ": Fortran order");
  size_t open = header.find('(', header.find("'shape'"));
  size_t close = header.find(')', open);
  if (open == std::string::npos || close == std::string::npos) fail(path + ": no shape");
  Array a;
  std::stringstream dims(header.substr(open + 1, close - open - 1));
  std::string item;
  int64_t count = 1;
  while (std::getline(dims, item, ',')) {
    if (item.find_first_not_of(" ") == std::string::npos) continue;
    a.shape.push_back(std::stoll(item));
    count *= a.shape.back();
  }
  a.data.resize(count);
  f.read(reinterpret_cast<char*>(a.data.data()), count * sizeof(float));
  if (!f) fail(path + ": truncated data");
  return a;
}

void save_npy(const std::string& path, const std::vector<int64_t>& shape, const float* data) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  int64_t count = 1;
  for (int64_t d : shape) {
    header += std::to_string(d) + ", ";
    count *= d;
  }
  header += "), }";
  // Version 1.0: magic, version, header length; the header padded with spaces to 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) fail("cannot write " + path);
  const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                                static_cast<unsigned char>(header.size() >> 8)};
  f.write("\x93NUMPY\x01\x00", 8);
  f.write(reinterpret_cast<const char*>(len), 2);
  f.write(header.data(), header.size());
  f.write(reinterpret_cast<const char*>(data), count * sizeof(float));
  if (!f) fail("cannot write " + path);
}

// The elempack ncnn::Net converts an fp32 blob of `channels` channels to before a layer that
// supports packing (net.cpp, convert_layout), so the layers run the kernels a model would.
int packed_elempack(int channels, const ncnn::Option& opt) {
  if (!opt.use_packing_layout) return 1;
#if NCNN_AVX512
  if (channels % 16 == 0 && ncnn::cpu_support_x86_avx512()) return 16;
#endif
#if NCNN_AVX512 || NCNN_AVX
  if (channels % 8 == 0 && ncnn::cpu_support_x86_avx()) return 8;
#endif
  return channels % 4 == 0 ? 4 : 1;
}

// One NCHW image as an elempack-1 Mat: the caller's memory itself when ncnn's 16-byte channel
// step equals H*W (every row here), else a copy.
ncnn::Mat wrap_chw(const float* p, int c, int h, int w, const ncnn::Option& opt) {
  ncnn::Mat m(w, h, c, const_cast<float*>(p), 4u);
  if (m.cstep == static_cast<size_t>(w) * h) return m;
  ncnn::Mat copy(w, h, c, 4u, opt.blob_allocator);
  for (int q = 0; q < c; q++) std::memcpy(copy.channel(q), p + size_t(q) * w * h, 4 * w * h);
  return copy;
}

ncnn::Mat to_packed(const ncnn::Mat& m, const ncnn::Option& opt) {
  ncnn::Mat out;
  ncnn::convert_packing(m, out, packed_elempack(m.c * m.elempack, opt), opt);
  if (out.empty()) fail("convert_packing failed");
  return out;
}

ncnn::Mat to_nchw(const ncnn::Mat& m, const ncnn::Option& opt) {
  ncnn::Mat out;
  ncnn::convert_packing(m, out, 1, opt);
  if (out.empty()) fail("convert_packing failed");
  return out;
}

struct LayerDeleter {
  const ncnn::Option* opt;
  void operator()(ncnn::Layer* l) const {
    l->destroy_pipeline(*opt);
    delete l;
  }
};
using LayerPtr = std::unique_ptr<ncnn::Layer, LayerDeleter>;

LayerPtr make_layer(int type, const char* name, const ncnn::ParamDict& pd,
                    std::vector<ncnn::Mat> weights, const ncnn::Option& opt) {
  ncnn::Layer* raw = ncnn::create_layer(type);
  if (!raw) fail(std::string("this ncnn was built without the ") + name + " layer");
  LayerPtr layer(raw, LayerDeleter{&opt});
  if (layer->load_param(pd) != 0) fail(std::string(name) + ": load_param failed");
  weights.emplace_back();  // ModelBinFromMatArray needs an array even for no weights
  ncnn::ModelBinFromMatArray mb(weights.data());
  if (layer->load_model(mb) != 0) fail(std::string(name) + ": load_model failed");
  if (layer->create_pipeline(opt) != 0) fail(std::string(name) + ": create_pipeline failed");
  return layer;
}

// Weights as ncnn wants them: flat float Mats over the .npy data (which must outlive the layer
// until create_pipeline has repacked it).
ncnn::Mat flat(const Array& a) {
  return ncnn::Mat(static_cast<int>(a.data.size()), const_cast<float*>(a.data.data()), 4u);
}

void check_forward(int ret, const char* name) {
  if (ret != 0) fail(std::string(name) + ": forward returned " + std::to_string(ret));
}

struct Op {
  std::vector<int64_t> out_shape;  // NCHW
  int elempack = 1;                // of the data input, for the report
  virtual ~Op() = default;
  // One call over the batch: outs[n] gets image n's output as an elempack-1 CHW Mat.
  virtual void run(std::vector<ncnn::Mat>& outs) = 0;
};

using Settings = std::map<std::string, std::string>;

int setting(const Settings& s, const std::string& key, int fallback) {
  auto it = s.find(key);
  return it == s.end() ? fallback : std::stoi(it->second);
}

std::string setting(const Settings& s, const std::string& key, const std::string& fallback) {
  auto it = s.find(key);
  return it == s.end() ? fallback : it->second;
}

void expect_rank(const Array& a, size_t rank, const char* name) {
  if (a.shape.size() != rank)
    fail(std::string(name) + ".npy: expected " + std::to_string(rank) + " dimensions");
}

// F.conv2d(x, w, b, padding=pad), stride and dilation 1, one group: ncnn Convolution.
struct Conv2d : Op {
  Array x, w, b;
  const ncnn::Option& opt;
  LayerPtr conv;
  int N, C, H, W;

  Conv2d(const std::string& dir, const Settings& s, const ncnn::Option& o)
      : x(load_npy(dir + "/input.npy")),
        w(load_npy(dir + "/weight.npy")),
        b(load_npy(dir + "/bias.npy")),
        opt(o),
        conv(nullptr, LayerDeleter{&o}) {
    expect_rank(x, 4, "input");
    expect_rank(w, 4, "weight");
    N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
    const int O = w.dim(0), kh = w.dim(2), kw = w.dim(3), pad = setting(s, "pad", 0);
    if (w.dim(1) != C)
      fail("conv2d: weight has " + std::to_string(w.dim(1)) + " input channels, input " +
           std::to_string(C) + " (groups?)");
    ncnn::ParamDict pd;
    pd.set(0, O);
    pd.set(1, kw);
    pd.set(11, kh);
    pd.set(4, pad);                              // left; right, top and bottom default to it
    pd.set(5, 1);                                // bias_term
    pd.set(6, static_cast<int>(w.data.size()));  // OIHW, ncnn's order
    conv = make_layer(ncnn::LayerType::Convolution, "Convolution", pd, {flat(w), flat(b)}, opt);
    out_shape = {N, O, H + 2 * pad - kh + 1, W + 2 * pad - kw + 1};
    elempack = packed_elempack(C, opt);
  }

  void run(std::vector<ncnn::Mat>& outs) override {
    for (int n = 0; n < N; n++) {
      ncnn::Mat in = to_packed(wrap_chw(&x.data[size_t(n) * C * H * W], C, H, W, opt), opt);
      ncnn::Mat out;
      check_forward(conv->forward(in, out, opt), "Convolution");
      outs[n] = to_nchw(out, opt);
    }
  }
};

// F.grid_sample(x, grid, mode, padding_mode, align_corners): ncnn GridSample. PyTorch's grid
// [N, Ho, Wo, 2] ((x, y) innermost) is, per image, the Mat GridSample reads without
// permute_fusion: w = 2, h = Wo, c = Ho (the same bytes).
struct GridSample : Op {
  Array x, g;
  const ncnn::Option& opt;
  LayerPtr layer;
  int N, C, H, W, Ho, Wo;

  GridSample(const std::string& dir, const Settings& s, const ncnn::Option& o)
      : x(load_npy(dir + "/input.npy")),
        g(load_npy(dir + "/grid.npy")),
        opt(o),
        layer(nullptr, LayerDeleter{&o}) {
    expect_rank(x, 4, "input");
    expect_rank(g, 4, "grid");
    N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), Ho = g.dim(1), Wo = g.dim(2);
    if (g.dim(0) != N || g.dim(3) != 2) fail("grid_sample: grid must be [N, Ho, Wo, 2]");
    const std::string mode = setting(s, "mode", "bilinear");
    const std::string padding = setting(s, "padding_mode", "zeros");
    const std::map<std::string, int> modes = {{"bilinear", 1}, {"nearest", 2}, {"bicubic", 3}};
    const std::map<std::string, int> paddings = {{"zeros", 1}, {"border", 2}, {"reflection", 3}};
    if (!modes.count(mode)) fail("grid_sample: mode " + mode);
    if (!paddings.count(padding)) fail("grid_sample: padding_mode " + padding);
    ncnn::ParamDict pd;
    pd.set(0, modes.at(mode));
    pd.set(1, paddings.at(padding));
    pd.set(2, setting(s, "align_corners", 0));
    pd.set(3, 0);  // permute_fusion off: the grid as PyTorch lays it out
    layer = make_layer(ncnn::LayerType::GridSample, "GridSample", pd, {}, opt);
    out_shape = {N, C, Ho, Wo};
    elempack = packed_elempack(C, opt);
  }

  void run(std::vector<ncnn::Mat>& outs) override {
    for (int n = 0; n < N; n++) {
      std::vector<ncnn::Mat> in = {
          to_packed(wrap_chw(&x.data[size_t(n) * C * H * W], C, H, W, opt), opt),
          wrap_chw(&g.data[size_t(n) * Ho * Wo * 2], Ho, Wo, 2, opt)};
      std::vector<ncnn::Mat> out(1);
      check_forward(layer->forward(in, out, opt), "GridSample");
      outs[n] = to_nchw(out[0], opt);
    }
  }
};

// torchvision deform_conv2d(x, offset, w, b, padding=pad, mask=mask), stride and dilation 1, one
// offset group: ncnn DeformableConv2D. Its offset channels are (dy, dx) per tap in row-major tap
// order and its mask one channel per tap, as torchvision's, so both are passed unchanged.
struct DeformConv2d : Op {
  Array x, off, mask, w, b;
  const ncnn::Option& opt;
  LayerPtr layer;
  int N, C, H, W, K, Ho, Wo;

  DeformConv2d(const std::string& dir, const Settings& s, const ncnn::Option& o)
      : x(load_npy(dir + "/input.npy")),
        off(load_npy(dir + "/offset.npy")),
        mask(load_npy(dir + "/mask.npy")),
        w(load_npy(dir + "/weight.npy")),
        b(load_npy(dir + "/bias.npy")),
        opt(o),
        layer(nullptr, LayerDeleter{&o}) {
    expect_rank(x, 4, "input");
    expect_rank(w, 4, "weight");
    expect_rank(off, 4, "offset");
    expect_rank(mask, 4, "mask");
    N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
    const int O = w.dim(0), kh = w.dim(2), kw = w.dim(3), pad = setting(s, "pad", 0);
    K = kh * kw;
    Ho = H + 2 * pad - kh + 1, Wo = W + 2 * pad - kw + 1;
    if (w.dim(1) != C) fail("deform_conv2d: groups are not supported");
    if (off.dim(1) != 2 * K || mask.dim(1) != K || off.dim(2) != Ho || off.dim(3) != Wo)
      fail("deform_conv2d: one offset group of [2*kh*kw, Ho, Wo] and a mask expected");
    ncnn::ParamDict pd;
    pd.set(0, O);
    pd.set(1, kw);
    pd.set(11, kh);
    pd.set(4, pad);
    pd.set(5, 1);
    pd.set(6, static_cast<int>(w.data.size()));
    layer = make_layer(ncnn::LayerType::DeformableConv2D, "DeformableConv2D", pd,
                       {flat(w), flat(b)}, opt);
    out_shape = {N, O, Ho, Wo};
    elempack = packed_elempack(C, opt);
  }

  void run(std::vector<ncnn::Mat>& outs) override {
    for (int n = 0; n < N; n++) {
      // Offsets and mask stay elempack 1: the layer reads them so (18 and 9 channels
      // would not pack anyway).
      std::vector<ncnn::Mat> in = {
          to_packed(wrap_chw(&x.data[size_t(n) * C * H * W], C, H, W, opt), opt),
          wrap_chw(&off.data[size_t(n) * 2 * K * Ho * Wo], 2 * K, Ho, Wo, opt),
          wrap_chw(&mask.data[size_t(n) * K * Ho * Wo], K, Ho, Wo, opt)};
      std::vector<ncnn::Mat> out(1);
      check_forward(layer->forward(in, out, opt), "DeformableConv2D");
      outs[n] = to_nchw(out[0], opt);
    }
  }
};

// timm SEModule (no norm layer): x * sigmoid(fc2(relu(fc1(mean_hw(x))))), fc1 and fc2 1x1
// convolutions with bias, i.e. InnerProducts on the pooled vector. ncnn composition: global
// average Pooling, InnerProduct with fused ReLU, InnerProduct with fused sigmoid, BinaryOp
// multiply (a 1-D blob of C broadcasts over the channels of a C x H x W one).
struct Se : Op {
  Array x, w1, b1, w2, b2;
  const ncnn::Option& opt;
  LayerPtr pool, fc1, fc2, mul;
  int N, C, H, W;

  Se(const std::string& dir, const Settings&, const ncnn::Option& o)
      : x(load_npy(dir + "/input.npy")),
        w1(load_npy(dir + "/ncnn_fc1_weight.npy")),
        b1(load_npy(dir + "/ncnn_fc1_bias.npy")),
        w2(load_npy(dir + "/ncnn_fc2_weight.npy")),
        b2(load_npy(dir + "/ncnn_fc2_bias.npy")),
        opt(o),
        pool(nullptr, LayerDeleter{&o}),
        fc1(nullptr, LayerDeleter{&o}),
        fc2(nullptr, LayerDeleter{&o}),
        mul(nullptr, LayerDeleter{&o}) {
    expect_rank(x, 4, "input");
    N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
    const int R = w1.dim(0);
    if (w1.dim(1) != C || w2.dim(0) != C || w2.dim(1) != R)
      fail("se: fc weights must be [R, C] and [C, R]");
    ncnn::ParamDict pp;
    pp.set(0, 1);  // average
    pp.set(4, 1);  // global
    pool = make_layer(ncnn::LayerType::Pooling, "Pooling", pp, {}, opt);
    ncnn::ParamDict p1;
    p1.set(0, R);
    p1.set(1, 1);
    p1.set(2, R * C);
    p1.set(9, 1);  // ReLU
    fc1 = make_layer(ncnn::LayerType::InnerProduct, "InnerProduct", p1, {flat(w1), flat(b1)}, opt);
    ncnn::ParamDict p2;
    p2.set(0, C);
    p2.set(1, 1);
    p2.set(2, C * R);
    p2.set(9, 4);  // sigmoid
    fc2 = make_layer(ncnn::LayerType::InnerProduct, "InnerProduct", p2, {flat(w2), flat(b2)}, opt);
    ncnn::ParamDict pm;
    pm.set(0, 2);  // multiply
    mul = make_layer(ncnn::LayerType::BinaryOp, "BinaryOp", pm, {}, opt);
    out_shape = {N, C, H, W};
    elempack = packed_elempack(C, opt);
  }

  void run(std::vector<ncnn::Mat>& outs) override {
    for (int n = 0; n < N; n++) {
      ncnn::Mat in = to_packed(wrap_chw(&x.data[size_t(n) * C * H * W], C, H, W, opt), opt);
      ncnn::Mat pooled, hidden, gate;
      check_forward(pool->forward(in, pooled, opt), "Pooling");
      check_forward(fc1->forward(pooled, hidden, opt), "InnerProduct");
      check_forward(fc2->forward(hidden, gate, opt), "InnerProduct");
      std::vector<ncnn::Mat> ins = {in, gate}, out(1);
      check_forward(mul->forward(ins, out, opt), "BinaryOp");
      outs[n] = to_nchw(out[0], opt);
    }
  }
};

// The kernel set ncnn's runtime dispatch (create_layer_cpu) picks on this CPU.
const char* dispatched_isa() {
#if NCNN_RUNTIME_CPU && NCNN_AVX512
  if (ncnn::cpu_support_x86_avx512()) return "avx512";
#endif
#if NCNN_RUNTIME_CPU && NCNN_FMA
  if (ncnn::cpu_support_x86_fma()) return "fma";
#endif
#if NCNN_RUNTIME_CPU && NCNN_AVX
  if (ncnn::cpu_support_x86_avx()) return "avx";
#endif
  return "baseline";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

int usage() {
  std::fprintf(stderr,
               "usage: ncnn_peer --op conv2d|grid_sample|deform_conv2d|se --dir FOLDER "
               "--repeat N [--out FILE.npy] [--packing 0|1] [--set KEY=VALUE]...\n");
  return 1;
}

int run_main(int argc, char** argv) {
  std::string op, dir, out;
  int repeat = 0, packing = 1;
  Settings settings;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    const std::string v = argv[++i];
    if (a == "--op") {
      op = v;
    } else if (a == "--dir") {
      dir = v;
    } else if (a == "--repeat") {
      repeat = std::stoi(v);
    } else if (a == "--out") {
      out = v;
    } else if (a == "--packing") {
      packing = std::stoi(v);
    } else if (a == "--set") {
      const size_t eq = v.find('=');
      if (eq == std::string::npos) return usage();
      settings[v.substr(0, eq)] = v.substr(eq + 1);
    } else {
      return usage();
    }
  }
  if (op.empty() || dir.empty() || repeat < 1) return usage();

  // Pool allocators as ncnn::Extractor uses by default (use_local_pool_allocator), so buffers
  // are recycled across calls like in a deployed net.
  ncnn::PoolAllocator blob_pool, workspace_pool;
  blob_pool.set_size_compare_ratio(0.f);
  workspace_pool.set_size_compare_ratio(0.f);
  ncnn::Option opt;
  opt.num_threads = 1;
  opt.lightmode = true;
  opt.use_packing_layout = packing != 0;
  opt.use_vulkan_compute = false;
  // fp32 throughout, like cvattn and PyTorch (ncnn's defaults use fp16 storage where the CPU
  // has F16C, and int8 when a model is quantized).
  opt.use_fp16_packed = opt.use_fp16_storage = opt.use_fp16_arithmetic = false;
  opt.use_bf16_storage = opt.use_bf16_packed = false;
  opt.use_int8_packed = opt.use_int8_storage = opt.use_int8_arithmetic = false;
  opt.use_int8_inference = false;
  opt.blob_allocator = &blob_pool;
  opt.workspace_allocator = &workspace_pool;

  std::unique_ptr<Op> impl;
  if (op == "conv2d")
    impl.reset(new Conv2d(dir, settings, opt));
  else if (op == "grid_sample")
    impl.reset(new GridSample(dir, settings, opt));
  else if (op == "deform_conv2d")
    impl.reset(new DeformConv2d(dir, settings, opt));
  else if (op == "se")
    impl.reset(new Se(dir, settings, opt));
  else
    fail("unknown op " + op + " (conv2d, grid_sample, deform_conv2d, se)");

  std::vector<ncnn::Mat> outs(impl->out_shape[0]);
  for (int i = 0; i < 2; i++) impl->run(outs);  // warm-up: pools filled, caches warm
  std::vector<double> times;
  for (int i = 0; i < repeat; i++) {
    const auto t0 = std::chrono::steady_clock::now();
    impl->run(outs);
    const auto t1 = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }

  if (!out.empty()) {
    const auto& s = impl->out_shape;
    const size_t plane = size_t(s[2]) * s[3], image = plane * s[1];
    std::vector<float> data(image * s[0]);
    for (int64_t n = 0; n < s[0]; n++) {
      const ncnn::Mat& m = outs[n];
      if (m.dims != 3 || m.elempack != 1 || m.c != s[1] || size_t(m.h) * m.w != plane)
        fail("output of image " + std::to_string(n) + " has an unexpected shape");
      for (int q = 0; q < m.c; q++)
        std::memcpy(&data[n * image + q * plane], m.channel(q), plane * sizeof(float));
    }
    save_npy(out, s, data.data());
  }

  std::printf(
      "{\"median_ms\": %.6f, \"min_ms\": %.6f, \"runs\": %d, \"elempack\": %d, "
      "\"isa\": \"%s\"}\n",
      median(times), *std::min_element(times.begin(), times.end()), repeat, impl->elempack,
      dispatched_isa());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ncnn_peer: %s\n", e.what());
    return 1;
  }
}
