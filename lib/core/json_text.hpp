// JSON text appended by hand, for documents with one object per tensor (manifests, plans): a
// million Boost.JSON objects cost more than reading the header they describe. The bytes are
// what Boost.JSON's serializer would write for the same values.
#pragma once

#include "core/layer.hpp"

#include <charconv>
#include <string>
#include <string_view>

namespace lwload::json_text {

// The length of the well-formed UTF-8 sequence (RFC 3629) at text[i], or 0: a stray continuation
// byte, an overlong form, a surrogate, a code point past U+10FFFF or a truncated sequence.
inline std::size_t utf8_sequence(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
  const auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) { return at(k) >= lo && at(k) <= hi; };
  const unsigned c = at(0);
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c == 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (c == 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

// A JSON string literal, escaped as Boost.JSON's serializer does (", \\, control bytes), and
// always valid UTF-8: a byte that begins no well-formed UTF-8 sequence (names are a file's bytes)
// is written \ufffd, U+FFFD REPLACEMENT CHARACTER.
inline void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (std::size_t i = 0; i < text.size(); ++i) {
    // A run of bytes that need no escape is appended at once (names are mostly such runs).
    std::size_t plain = i;
    while (plain < text.size() && static_cast<unsigned char>(text[plain]) >= 0x20 &&
           static_cast<unsigned char>(text[plain]) < 0x80 && text[plain] != '"' && text[plain] != '\\')
      ++plain;
    if (plain > i) {
      out.append(text.substr(i, plain - i));
      i = plain - 1;
      continue;
    }
    const char ch = text[i];
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x80) {
      const std::size_t n = utf8_sequence(text, i);
      if (n == 0) {
        out += "\\ufffd";
      } else {
        out.append(text.substr(i, n));
        i += n - 1;
      }
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
