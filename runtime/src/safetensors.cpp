// safetensors.cpp - reading and writing safetensors checkpoints: a strict
// reader of the header's JSON (only the structure the format allows, every
// number and offset checked) and a writer of f32 tensors.

#include "safetensors.h"

#include "json.h"
#include "locus/half.hpp"

#include "status_impl.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

namespace locus::rt {

namespace {

uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}

/// Bytes per element; 0 for a dtype the format does not have.
uint64_t elementSize(const std::string &dtype) {
  static const struct {
    const char *name;
    uint64_t size;
  } kSizes[] = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
                {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U64", 8},  {"U32", 4},
                {"U16", 2}, {"U8", 1},  {"BOOL", 1}};
  for (const auto &s : kSizes)
    if (dtype == s.name)
      return s.size;
  return 0;
}

/// A reader of the header's JSON: an object of objects, strings, arrays of
/// non-negative integers. Stops at the first fault, kept in `error`.
class Header {
public:
  Header(const char *p, size_t n) : begin_(p), p_(p), end_(p + n) {}

  std::string error;

  bool fail(const std::string &what) {
    if (error.empty())
      error = what + " at byte " + std::to_string(8 + (p_ - begin_));
    return false;
  }

  void skipSpace() {
    while (p_ < end_ &&
           (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t'))
      ++p_;
  }

  bool expect(char c) {
    skipSpace();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return fail(std::string("expected '") + c + "'");
  }

  /// Consumes `c` if it comes next.
  bool accept(char c) {
    skipSpace();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }

  bool atEnd() {
    skipSpace();
    return p_ == end_;
  }

  bool string(std::string &out) {
    out.clear();
    if (!expect('"'))
      return false;
    while (p_ < end_ && *p_ != '"') {
      auto c = static_cast<unsigned char>(*p_++);
      if (c < 0x20)
        return fail("a control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (p_ == end_)
        break;
      char e = *p_++;
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u':
        if (!unicode(out))
          return false;
        break;
      default:
        return fail("a bad escape in a string");
      }
    }
    if (p_ == end_)
      return fail("an unterminated string");
    ++p_;
    return true;
  }

  /// A non-negative integer below 2^63.
  bool integer(uint64_t &out) {
    skipSpace();
    out = 0;
    const char *start = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
      if (out > (uint64_t(INT64_MAX) - 9) / 10)
        return fail("a number too large");
      out = out * 10 + static_cast<uint64_t>(*p_++ - '0');
    }
    if (p_ == start)
      return fail("expected a non-negative integer");
    if (p_ - start > 1 && *start == '0')
      return fail("a number with a leading zero");
    if (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E'))
      return fail("expected an integer");
    return true;
  }

  /// [n, n, ...] of at most `max` entries.
  bool integers(std::vector<uint64_t> &out, size_t max) {
    out.clear();
    if (!expect('['))
      return false;
    if (accept(']'))
      return true;
    do {
      uint64_t v = 0;
      if (!integer(v))
        return false;
      if (out.size() == max)
        return fail("an array too long");
      out.push_back(v);
    } while (accept(','));
    return expect(']');
  }

  /// {"key": "value", ...}: the metadata, checked and dropped.
  bool stringMap() {
    if (!expect('{'))
      return false;
    if (accept('}'))
      return true;
    std::string key, value;
    do {
      if (!string(key) || !expect(':') || !string(value))
        return false;
    } while (accept(','));
    return expect('}');
  }

private:
  bool hex4(uint32_t &v) {
    v = 0;
    for (int i = 0; i < 4; ++i) {
      if (p_ == end_)
        return fail("a short \\u escape");
      char c = *p_++;
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0)
        return fail("a bad \\u escape");
      v = v << 4 | static_cast<uint32_t>(d);
    }
    return true;
  }

  bool unicode(std::string &out) {
    uint32_t cp = 0;
    if (!hex4(cp))
      return false;
    if (cp >= 0xD800 && cp < 0xDC00) {
      uint32_t low = 0;
      if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u')
        return fail("a lone surrogate");
      p_ += 2;
      if (!hex4(low) || low < 0xDC00 || low >= 0xE000)
        return fail("a lone surrogate");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    } else if (cp >= 0xDC00 && cp < 0xE000) {
      return fail("a lone surrogate");
    }
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | cp >> 6);
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | cp >> 12);
      out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | cp >> 18);
      out += static_cast<char>(0x80 | (cp >> 12 & 0x3F));
      out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return true;
  }

  const char *begin_;
  const char *p_;
  const char *end_;
};

/// One tensor's entry: {"dtype": ..., "shape": [...], "data_offsets":
/// [b, e]} in any order, each key once.
bool tensorEntry(Header &h, SafeTensor &t, uint64_t &begin, uint64_t &end) {
  if (!h.expect('{'))
    return false;
  bool dtype = false, shape = false, offsets = false;
  std::string key;
  std::vector<uint64_t> values;
  do {
    if (!h.string(key) || !h.expect(':'))
      return false;
    if (key == "dtype" && !dtype) {
      dtype = true;
      if (!h.string(t.dtype))
        return false;
    } else if (key == "shape" && !shape) {
      shape = true;
      if (!h.integers(values, kMaxSafetensorsRank))
        return false;
      t.shape.assign(values.begin(), values.end());
    } else if (key == "data_offsets" && !offsets) {
      offsets = true;
      if (!h.integers(values, 2))
        return false;
      if (values.size() != 2)
        return h.fail("data_offsets must be [begin, end]");
      begin = values[0];
      end = values[1];
    } else {
      return h.fail("tensor '" + t.name + "' has an unexpected or repeated '" +
                    key + "'");
    }
  } while (h.accept(','));
  if (!dtype || !shape || !offsets)
    return h.fail("tensor '" + t.name + "' lacks dtype, shape or data_offsets");
  return h.expect('}');
}

/// "tensor 'w': " + why, for `what`.
locus_status_t bad(const char *what, const std::string &why) {
  return makeStatus(LOCUS_STATUS_DATA_LOSS,
                    "%s is not a valid safetensors "
                    "file: %s",
                    what, why.c_str());
}

/// Checks a tensor's dtype, shape and offsets against the data.
std::string checkTensor(const SafeTensor &t, uint64_t begin, uint64_t end,
                        uint64_t dataSize) {
  uint64_t size = elementSize(t.dtype);
  if (!size)
    return "tensor '" + t.name + "' has the unknown dtype '" + t.dtype + "'";
  uint64_t bytes = size;
  for (int64_t d : t.shape) {
    auto ud = static_cast<uint64_t>(d);
    if (ud && bytes > UINT64_MAX / ud)
      return "tensor '" + t.name + "' has a shape too large";
    bytes *= ud;
  }
  if (begin > end || end > dataSize)
    return "tensor '" + t.name + "' has data_offsets [" +
           std::to_string(begin) + ", " + std::to_string(end) +
           "] outside the " + std::to_string(dataSize) + " bytes of data";
  if (end - begin != bytes)
    return "tensor '" + t.name + "' is " + std::to_string(bytes) +
           " bytes by its dtype and shape but its data_offsets give " +
           std::to_string(end - begin);
  return "";
}

/// No two tensors share a byte (the format's rule; one tensor's bytes
/// read as another's would load silently).
locus_status_t checkDisjoint(const std::vector<SafeTensor> &tensors,
                             const char *what) {
  std::vector<const SafeTensor *> order;
  order.reserve(tensors.size());
  for (const SafeTensor &t : tensors)
    if (t.bytes)
      order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](const SafeTensor *a, const SafeTensor *b) {
              return a->data < b->data;
            });
  for (size_t i = 1; i < order.size(); ++i)
    if (order[i]->data < order[i - 1]->data + order[i - 1]->bytes)
      return bad(what, "tensors '" + order[i - 1]->name + "' and '" +
                           order[i]->name + "' overlap in the data");
  return nullptr;
}

} // namespace

locus_status_t parseSafetensors(const void *bytes, size_t size,
                                const char *what,
                                std::vector<SafeTensor> &out) {
  out.clear();
  const auto *b = static_cast<const unsigned char *>(bytes);
  if (size < 8)
    return bad(what, "shorter than its 8-byte header length");
  uint64_t headerSize = get64(b);
  if (headerSize > kMaxSafetensorsHeader || headerSize > size - 8)
    return bad(what, "its header length " + std::to_string(headerSize) +
                         " exceeds the file's " + std::to_string(size - 8) +
                         " bytes (or 100 MB)");
  const unsigned char *data = b + 8 + headerSize;
  uint64_t dataSize = size - 8 - headerSize;
  Header h(reinterpret_cast<const char *>(b + 8), headerSize);
  std::unordered_set<std::string> names;
  if (!h.expect('{'))
    return bad(what, h.error);
  if (!h.accept('}')) {
    std::string name;
    do {
      if (!h.string(name) || !h.expect(':'))
        return bad(what, h.error);
      if (name == "__metadata__") {
        if (!names.insert(name).second)
          return bad(what, "two __metadata__ entries");
        if (!h.stringMap())
          return bad(what, h.error);
        continue;
      }
      if (!names.insert(name).second)
        return bad(what, "two tensors named '" + name + "'");
      SafeTensor t;
      t.name = name;
      uint64_t begin = 0, end = 0;
      if (!tensorEntry(h, t, begin, end))
        return bad(what, h.error);
      std::string fault = checkTensor(t, begin, end, dataSize);
      if (!fault.empty())
        return bad(what, fault);
      t.data = data + begin;
      t.bytes = end - begin;
      out.push_back(std::move(t));
    } while (h.accept(','));
    if (!h.expect('}'))
      return bad(what, h.error);
  }
  if (!h.atEnd())
    return bad(what, "text after the header's JSON object");
  return checkDisjoint(out, what);
}

std::string writeSafetensors(const std::vector<SafeTensorOut> &tensors) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  uint64_t offset = 0;
  for (const SafeTensorOut &t : tensors) {
    header += "," + jsonQuoted(t.name) + ":{\"dtype\":\"F32\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i)
      header += (i ? "," : "") + std::to_string(t.shape[i]);
    uint64_t bytes = t.data.size() * 4;
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += "}";
  // The data starts 8-byte aligned, as the reference writer does.
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>(uint64_t(header.size()) >> (8 * i) & 0xFF);
  out += header;
  out.reserve(out.size() + offset);
  for (const SafeTensorOut &t : tensors)
    for (float f : t.data) { // little-endian, as the format says
      uint32_t bits = 0;
      std::memcpy(&bits, &f, 4);
      for (int i = 0; i < 4; ++i)
        out += static_cast<char>(bits >> (8 * i) & 0xFF);
    }
  return out;
}

bool toF32(const SafeTensor &t, float *out, size_t count) {
  const unsigned char *p = t.data;
  auto le = [&](size_t i, int n) {
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k)
      v = v << 8 | p[i * n + k];
    return v;
  };
  if (t.dtype == "F32") {
    for (size_t i = 0; i < count; ++i) {
      auto bits = static_cast<uint32_t>(le(i, 4));
      std::memcpy(&out[i], &bits, 4);
    }
  } else if (t.dtype == "F64") {
    for (size_t i = 0; i < count; ++i) {
      uint64_t bits = le(i, 8);
      double d = 0;
      std::memcpy(&d, &bits, 8);
      out[i] = static_cast<float>(d);
    }
  } else if (t.dtype == "F16") {
    for (size_t i = 0; i < count; ++i)
      out[i] = half::fromF16Bits(static_cast<uint16_t>(le(i, 2)));
  } else if (t.dtype == "BF16") {
    for (size_t i = 0; i < count; ++i)
      out[i] = half::fromBf16Bits(static_cast<uint16_t>(le(i, 2)));
  } else {
    return false;
  }
  return true;
}

} // namespace locus::rt

extern "C" float locus_f16_to_f32(uint16_t bits) {
  return locus::half::fromF16Bits(bits);
}
