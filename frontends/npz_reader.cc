#include "frontends/npz_reader.h"

#include <zip.h>

#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "ir/limits.h"

namespace irc {
namespace {

// The value of `key` in the header's Python dict literal ("{'descr': '<f4', 'fortran_order':
// False, 'shape': (2, 16), }"): the text up to the next top-level comma, or nullopt.
std::optional<std::string> headerField(const std::string& header, const std::string& key) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) return std::nullopt;
  size_t colon = header.find(':', at);
  if (colon == std::string::npos) return std::nullopt;
  size_t begin = header.find_first_not_of(' ', colon + 1);
  if (begin == std::string::npos) return std::nullopt;
  if (header[begin] == '(') {
    size_t end = header.find(')', begin);
    if (end == std::string::npos) return std::nullopt;
    return header.substr(begin, end - begin + 1);
  }
  size_t end = header.find_first_of(",}", begin);
  if (end == std::string::npos) return std::nullopt;
  std::string v = header.substr(begin, end - begin);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}

struct ElementType {
  DType dtype;
  size_t width;
  double (*read)(const char*);
};

template <typename T>
double readAs(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<double>(v);
}

double readHalf(const char* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa ? std::nan("") : sign * HUGE_VAL;
  return sign * std::ldexp(mantissa + 1024, exponent - 25);
}

// numpy's type strings for what irc holds ('<' little-endian, '|' no byte order, '=' native,
// which is little-endian on every machine irc runs on).
std::optional<ElementType> elementType(const std::string& descr) {
  if (descr.size() < 3 || (descr[0] != '<' && descr[0] != '|' && descr[0] != '=')) return std::nullopt;
  std::string t = descr.substr(1);
  if (t == "f4") return ElementType{DType::Float32, 4, readAs<float>};
  if (t == "f8") return ElementType{DType::Float64, 8, readAs<double>};
  if (t == "f2") return ElementType{DType::Float16, 2, readHalf};
  if (t == "i8") return ElementType{DType::Int64, 8, readAs<int64_t>};
  if (t == "i4") return ElementType{DType::Int32, 4, readAs<int32_t>};
  if (t == "i1") return ElementType{DType::Int8, 1, readAs<int8_t>};
  if (t == "u1") return ElementType{DType::UInt8, 1, readAs<uint8_t>};
  if (t == "b1") return ElementType{DType::Bool, 1, readAs<uint8_t>};
  return std::nullopt;
}

}  // namespace

std::optional<NpyArray> parseNpy(const std::string& bytes, std::string& error) {
  static const char kMagic[] = "\x93NUMPY";
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0) {
    error = "is not a .npy array (no \\x93NUMPY magic)";
    return std::nullopt;
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t headerLength = 0, headerStart = 0;
  if (major == 1) {
    headerLength = static_cast<unsigned char>(bytes[8]) | static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8;
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) {
      error = "ends inside its .npy header";
      return std::nullopt;
    }
    for (int i = 3; i >= 0; --i) headerLength = headerLength << 8 | static_cast<unsigned char>(bytes[8 + i]);
    headerStart = 12;
  } else {
    error = fmt::format("has .npy format version {}; irc reads versions 1 to 3", major);
    return std::nullopt;
  }
  if (headerLength > bytes.size() - headerStart) {
    error = "ends inside its .npy header";
    return std::nullopt;
  }
  std::string header = bytes.substr(headerStart, headerLength);
  auto descr = headerField(header, "descr");
  auto fortran = headerField(header, "fortran_order");
  auto shapeText = headerField(header, "shape");
  if (!descr || !fortran || !shapeText || descr->size() < 2 || (*descr)[0] != '\'' || descr->back() != '\'') {
    error = fmt::format("has a .npy header without descr, fortran_order and shape: {}", header);
    return std::nullopt;
  }
  std::string typeString = descr->substr(1, descr->size() - 2);
  auto type = elementType(typeString);
  if (!type) {
    error = fmt::format("has dtype '{}'; irc reads little-endian float16/32/64, int8/32/64, uint8 and bool", typeString);
    return std::nullopt;
  }
  if (*fortran != "False") {
    error = "is stored in Fortran order; save it C-ordered (numpy.ascontiguousarray)";
    return std::nullopt;
  }
  Shape shape;
  int64_t count = 1;
  std::string dims = shapeText->substr(1, shapeText->size() - 2);
  size_t pos = 0;
  while (pos < dims.size()) {
    size_t comma = dims.find(',', pos);
    std::string item = dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? dims.size() : comma + 1;
    item.erase(0, item.find_first_not_of(' '));
    if (item.empty()) continue;
    char* end = nullptr;
    long long d = std::strtoll(item.c_str(), &end, 10);
    auto next = d >= 0 ? checkedMul(count, d) : std::nullopt;
    if (*end != '\0' || !next || *next > kMaxTensorElements) {
      error =
          fmt::format("has shape {} with an entry that is not a size, or more than {} elements", *shapeText, kMaxTensorElements);
      return std::nullopt;
    }
    shape.push_back(d);
    count = *next;
  }
  size_t dataStart = headerStart + headerLength;
  if (bytes.size() - dataStart != static_cast<size_t>(count) * type->width) {
    error = fmt::format("holds {} bytes of data; shape {} of {} needs {}", bytes.size() - dataStart, formatShape(shape),
                        typeString, static_cast<size_t>(count) * type->width);
    return std::nullopt;
  }
  NpyArray array{type->dtype, TensorValue{shape, std::vector<double>(count)}};
  for (int64_t i = 0; i < count; ++i) array.value.data[i] = type->read(bytes.data() + dataStart + i * type->width);
  return array;
}

std::optional<std::map<std::string, NpyArray>> readNpz(const std::string& path, std::string& error) {
  int code = 0;
  std::unique_ptr<zip_t, decltype(&zip_discard)> archive(zip_open(path.c_str(), ZIP_RDONLY, &code), zip_discard);
  if (!archive) {
    zip_error_t e;
    zip_error_init_with_code(&e, code);
    error = fmt::format("{}: cannot read it as an .npz (a zip of .npy arrays): {}", path, zip_error_strerror(&e));
    zip_error_fini(&e);
    return std::nullopt;
  }
  std::map<std::string, NpyArray> arrays;
  zip_int64_t entries = zip_get_num_entries(archive.get(), 0);
  for (zip_int64_t i = 0; i < entries; ++i) {
    zip_stat_t st;
    if (zip_stat_index(archive.get(), i, 0, &st) != 0 || !(st.valid & ZIP_STAT_NAME) || !(st.valid & ZIP_STAT_SIZE)) {
      error = fmt::format("{}: entry {}: {}", path, i, zip_strerror(archive.get()));
      return std::nullopt;
    }
    std::string name = st.name;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
    if (st.size > static_cast<zip_uint64_t>(kMaxTensorElements) * 8 + 4096) {
      error = fmt::format("{}: array '{}' is {} bytes, more than irc reads", path, name, st.size);
      return std::nullopt;
    }
    std::unique_ptr<zip_file_t, decltype(&zip_fclose)> file(zip_fopen_index(archive.get(), i, 0), zip_fclose);
    std::string bytes(st.size, '\0');
    if (!file || zip_fread(file.get(), bytes.data(), st.size) != static_cast<zip_int64_t>(st.size)) {
      error = fmt::format("{}: array '{}' cannot be read: {}", path, name, zip_strerror(archive.get()));
      return std::nullopt;
    }
    std::string problem;
    auto array = parseNpy(bytes, problem);
    if (!array) {
      error = fmt::format("{}: array '{}' {}", path, name, problem);
      return std::nullopt;
    }
    arrays.emplace(name, std::move(*array));
  }
  return arrays;
}

}  // namespace irc
