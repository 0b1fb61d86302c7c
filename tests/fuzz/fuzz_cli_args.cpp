// libFuzzer harness: the cvattn tool's command line. The input is split at '\n' into argv; the
// parsed plan then loads its files from an in-memory table (never the file system) and runs the
// op on those tiny tensors, so settings reach the kernels. Nothing is written.
#include <map>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/io/npy.hpp"
#include "fuzz_common.hpp"

namespace {

// A .npy image of a float32 tensor, built here so the harness needs no files.
std::vector<char> npy(const cvattn::Shape& shape, float start) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  std::int64_t n = 1;
  for (const auto d : shape) {
    dict += std::to_string(d) + ",";
    n *= d;
  }
  dict += "), }";
  dict.append((64 - (10 + dict.size() + 1) % 64) % 64, ' ');  // data starts 64-byte aligned
  dict += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  out += dict;
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = start + 0.25f * static_cast<float>(i % 7);
    out.append(reinterpret_cast<const char*>(&v), 4);
  }
  return {out.begin(), out.end()};
}

const std::map<std::string, std::vector<char>>& files() {
  static const std::map<std::string, std::vector<char>> table = {
      {"x.npy", npy({1, 4, 6, 5}, -1.0f)},
      {"x3.npy", npy({4, 6, 5}, -1.0f)},
      {"w.npy", npy({6, 2, 3, 3}, 0.5f)},
      {"w1.npy", npy({4, 4, 1, 1}, 0.5f)},
      {"dw.npy", npy({4, 1, 3, 3}, 0.5f)},
      {"b.npy", npy({6}, 0.1f)},
      {"e.npy", npy({0, 4, 6, 5}, 0.0f)},
      {"s.npy", npy({}, 1.0f)},
      {"junk.npy", {'n', 'o', 't'}},
      {"w.safetensors",
       [] {
         const std::string h = R"({"weight":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
         std::string out(8, '\0');
         out[0] = static_cast<char>(h.size());
         out += h;
         out.append(4, '\0');
         return std::vector<char>(out.begin(), out.end());
       }()},
  };
  return table;
}

std::vector<char> read_from_table(const std::string& path) {
  const auto it = files().find(path);
  if (it == files().end()) throw cvattn::IoError("cannot open '" + path + "': no such file");
  return it->second;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  cvattn::fuzz::init_limits();
  (void)files();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args;
  std::string current;
  for (std::size_t i = 0; i < size && args.size() < 64; ++i) {
    if (data[i] == '\n') {
      args.push_back(current);
      current.clear();
    } else {
      current += static_cast<char>(data[i]);
    }
  }
  if (args.size() < 64 && (!current.empty() || size == 0)) args.push_back(current);
  return cvattn::fuzz::guarded([&] {
    const cvattn::cli::Command command = cvattn::cli::parse_command(args);
    if (command.kind == cvattn::cli::Command::Kind::print) {
      CVATTN_FUZZ_ASSERT(!command.text.empty());
      return;
    }
    const cvattn::cli::RunPlan& plan = command.plan;
    CVATTN_FUZZ_ASSERT(plan.op != nullptr && plan.settings.has_value());
    CVATTN_FUZZ_ASSERT(plan.threads >= 0 && plan.threads <= cvattn::kMaxThreads);
    const cvattn::cli::Invocation inv = cvattn::cli::load_invocation(plan, read_from_table);
    const cvattn::cli::Computation compute = plan.op->prepare(inv);
    const cvattn::cli::Outputs outputs = compute();
    for (const auto& [name, t] : outputs) CVATTN_FUZZ_ASSERT(!t.defined() || t.numel() >= 0);
  });
}
