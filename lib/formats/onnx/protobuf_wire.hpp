// A minimal protobuf wire-format scanner over a file region, for the ONNX reader.
//
// Why not libprotobuf: it parses a message into memory (an ONNX file may be 2 GiB of mostly tensor
// bytes) and hides where each field lies in the file. lwload needs the opposite: the absolute file
// offset of every raw_data payload, and to step over tensor bytes without reading them. This
// scanner walks fields one at a time through HeaderReaders (buffered, bounds-checked): scalar
// fields are decoded, length-delimited fields are reported as (offset, length) and only read when
// the caller asks for them. Every length is checked against the enclosing message before use.
#pragma once

#include "formats/onnx/layer.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "formats/header_reader.hpp"

namespace lwload::formats::protobuf {

enum class WireType : std::uint8_t {
  varint = 0,
  fixed64 = 1,
  length_delimited = 2,
  start_group = 3,  // deprecated groups: rejected
  end_group = 4,
  fixed32 = 5,
};

struct Field {
  std::uint32_t number = 0;
  WireType wire = WireType::varint;
  std::uint64_t tag_offset = 0;    // where the field's tag starts
  std::uint64_t value_offset = 0;  // just past the tag: where the value (or the length) starts
  std::uint64_t value = 0;         // varint / fixed32 / fixed64 fields
  std::uint64_t offset = 0;        // length-delimited fields: the payload's absolute offset
  std::uint64_t length = 0;        // ... and its length
  std::uint64_t end = 0;           // just past the whole field
};

// The scanner's bytes: HeaderReaders over windows of the file, re-opened as the scan moves.
// Why windows: a HeaderReader reads ahead up to 64 KiB, and in ONNX a tensor's payload follows its
// few header bytes, so plain read-ahead would fetch most of every small tensor's data (measured:
// 99.5% of a 10,000-tensor file). A window starts small after the scan has jumped over unread
// bytes (a skipped payload) and doubles while reading stays sequential (node lists), like the
// kernel's readahead.
class WindowedReader {
 public:
  static constexpr std::uint64_t kMinWindow = 256;
  static constexpr std::uint64_t kMaxWindow = 64 * 1024;

  explicit WindowedReader(const RandomAccessFile& file);
  const RandomAccessFile& file() const noexcept { return file_; }
  std::uint64_t size() const noexcept { return size_; }
  // Bytes fetched from the file so far, by every window.
  std::uint64_t bytes_fetched() const noexcept;

  // A reader positioned at `offset` that can read at least `need` bytes before its window ends
  // (fewer only where the file ends, so running out is a real truncation).
  HeaderReader& at(std::uint64_t offset, std::uint64_t need, std::string_view what);

  // Throws Error(bad_input): "<file>: <what> at offset <offset>: <detail>" (HeaderReader's form).
  template <typename... Parts>
  [[noreturn]] void fail_at(std::uint64_t offset, std::string_view what, const Parts&... detail) const {
    fail(ErrorCode::bad_input, file_.path().string(), ": ", what, " at offset ", offset, ": ", detail...);
  }

 private:
  const RandomAccessFile& file_;
  std::uint64_t size_;
  std::uint64_t window_ = kMinWindow;
  std::uint64_t window_begin_ = 0;
  std::uint64_t fetched_by_old_windows_ = 0;
  std::optional<HeaderReader> reader_;  // holds a 64 KiB buffer: keep this object on the heap
};

// Names a message's field numbers in errors ("" for numbers it does not know).
using FieldNamer = std::string_view (*)(std::uint32_t number);

// Walks the fields of one message occupying [begin, end) of the file. Scanners of nested messages
// share the WindowedReader: each one asks for its own position before reading its next field, so
// a parent can be resumed after a child has been scanned.
class MessageScanner {
 public:
  // `context` names the message in errors ("graph initializer #3"); `namer` its fields.
  MessageScanner(WindowedReader& source, std::uint64_t begin, std::uint64_t end, std::string context,
                 FieldNamer namer = nullptr);

  // Reads the next field's tag and scalar value (or length). False at the end of the message.
  // Fails on a truncated or malformed field, a group, or a length running past this message.
  bool next();
  const Field& field() const noexcept { return field_; }
  const std::string& context() const noexcept { return context_; }
  std::uint64_t begin() const noexcept { return begin_; }
  std::uint64_t end() const noexcept { return end_; }
  WindowedReader& source() noexcept { return source_; }

  // Checks that the current field has wire type `wire`; `name` names the field in the error.
  void expect(WireType wire, std::string_view name) const;
  // The current length-delimited field's payload as a string, at most `max_length` bytes.
  std::string read_string(std::string_view name, std::uint64_t max_length = 1u << 20);
  // A scanner over the current length-delimited field's payload (a nested message).
  MessageScanner nested(std::string context, FieldNamer namer = nullptr) const;

  // Throws Error(bad_input): "<file>: <context>: field <name> at offset <o>: <detail>".
  template <typename... Parts>
  [[noreturn]] void fail_field(std::string_view name, std::uint64_t offset, const Parts&... detail) const {
    source_.fail_at(offset, context_ + ": field " + std::string(name), detail...);
  }

 private:
  bool next_well_formed(HeaderReader& reader);

  WindowedReader& source_;
  std::uint64_t begin_;
  std::uint64_t next_;  // where the next field starts
  std::uint64_t end_;
  std::string context_;
  FieldNamer namer_;
  Field field_;
  std::string what_;
};

// Calls `on_value(value, value_offset)` for every varint in a packed repeated field's payload
// (the current field of `scanner`), or for the current field itself when it is an unpacked varint.
// Returns the number of values. Used for small fields (tensor dims), never for tensor data.
template <typename OnValue>
std::uint64_t for_each_varint(MessageScanner& scanner, std::string_view name, OnValue&& on_value) {
  const Field& f = scanner.field();
  if (f.wire == WireType::varint) {
    on_value(f.value, f.value_offset);
    return 1;
  }
  scanner.expect(WireType::length_delimited, name);
  std::uint64_t count = 0;
  std::uint64_t at = f.offset;
  while (at < f.end) {
    HeaderReader& reader = scanner.source().at(at, 10, name);  // a varint is at most 10 bytes
    const std::uint64_t value = reader.varint(name);
    if (reader.offset() > f.end)
      scanner.fail_field(name, at, "a packed varint runs past the end of the field (ends at ", f.end, ")");
    on_value(value, at);
    ++count;
    at = reader.offset();
  }
  return count;
}

}  // namespace lwload::formats::protobuf
