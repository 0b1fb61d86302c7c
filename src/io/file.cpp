#include "cvattn/io/file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "cvattn/core/error.hpp"

namespace cvattn::io {

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  CVATTN_CHECK(in.is_open(), IoError, "cannot open '", path, "': ", std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  CVATTN_CHECK(size >= 0, IoError, "cannot read '", path, "' (not a regular file?)");
  in.seekg(0, std::ios::beg);
  std::vector<char> bytes(static_cast<std::size_t>(size));
  if (size > 0) in.read(bytes.data(), size);
  CVATTN_CHECK(in.good() || (size == 0 && !in.bad()), IoError, "cannot read '", path, "'");
  return bytes;
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  std::random_device rd;
  const std::string tmp = path + ".tmp" + std::to_string(rd());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    CVATTN_CHECK(out.is_open(), IoError, "cannot write '", path, "': ", std::strerror(errno));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out.good()) {
      out.close();
      std::remove(tmp.c_str());
      throw IoError(detail::concat("cannot write '", path, "': write failed"));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw IoError(detail::concat("cannot write '", path, "': ", std::strerror(err)));
  }
}

}  // namespace cvattn::io
