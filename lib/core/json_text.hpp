// JSON text appended by hand, for documents with one object per tensor (manifests, plans): a
// million Boost.JSON objects cost more than reading the header they describe. The bytes are
// what Boost.JSON's serializer would write for the same values.
#pragma once

#include <charconv>
#include <string>
#include <string_view>

namespace lwload::json_text {

// A JSON string literal, escaped exactly as Boost.JSON's serializer does (", \\, control bytes;
// other bytes pass through).
inline void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && ch != '"' && ch != '\\') {
      out += ch;
      continue;
    }
    out += '\\';
    switch (ch) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '\b': out += 'b'; break;
      case '\f': out += 'f'; break;
      case '\n': out += 'n'; break;
      case '\r': out += 'r'; break;
      case '\t': out += 't'; break;
      default:
        out += "u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
  }
  out += '"';
}

template <typename Integer>
void append_number(std::string& out, Integer value) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, end);
}

// `,"key":value`: a member after an object's first (keys are plain ASCII names, never escaped).
template <typename Integer>
void append_member(std::string& out, std::string_view key, Integer value) {
  out += ",\"";
  out += key;
  out += "\":";
  append_number(out, value);
}

inline void append_member(std::string& out, std::string_view key, std::string_view value) {
  out += ",\"";
  out += key;
  out += "\":";
  append_json_string(out, value);
}

}  // namespace lwload::json_text
