#include "tests/npz_util.h"

#include <doctest/doctest.h>
#include <zip.h>

namespace irc::test {

std::string npy(const std::string& descr, const std::vector<int64_t>& shape, const std::vector<double>& values,
                const std::string& fortran) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  for (double v : values) {
    if (descr == "<f4") {
      float f = static_cast<float>(v);
      out.append(reinterpret_cast<const char*>(&f), 4);
    } else {
      int64_t i = static_cast<int64_t>(v);
      out.append(reinterpret_cast<const char*>(&i), 8);
    }
  }
  return out;
}

void writeNpz(const std::string& path, const std::vector<std::pair<std::string, std::string>>& arrays) {
  int code = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  REQUIRE(z != nullptr);
  std::vector<std::string> keep;  // libzip reads the buffers at zip_close
  keep.reserve(arrays.size());
  for (const auto& [name, bytes] : arrays) {
    keep.push_back(bytes);
    zip_source_t* src = zip_source_buffer(z, keep.back().data(), keep.back().size(), 0);
    REQUIRE(zip_file_add(z, (name + ".npy").c_str(), src, ZIP_FL_OVERWRITE) >= 0);
  }
  REQUIRE(zip_close(z) == 0);
}

}  // namespace irc::test
