// The protobuf wire scanner (see protobuf_wire.hpp for why ONNX is not parsed with libprotobuf).
#include "formats/onnx/protobuf_wire.hpp"

#include <algorithm>
#include <utility>

#include "formats/varint.hpp"

namespace lwload::formats::protobuf {
namespace {

// Field numbers are 29-bit (protobuf's limit); 0 is never valid.
constexpr std::uint64_t kMaxFieldNumber = (1u << 29) - 1;

std::string_view wire_name(std::uint64_t wire) {
  switch (wire) {
    case 0: return "varint";
    case 1: return "fixed64";
    case 2: return "length-delimited";
    case 3: return "start-group";
    case 4: return "end-group";
    case 5: return "fixed32";
    default: return "invalid";
  }
}

// A field's tag and scalar value or length: two varints of at most 10 bytes each.
constexpr std::uint64_t kMaxFieldHeader = 20;

}  // namespace

WindowedReader::WindowedReader(const RandomAccessFile& file) : file_(file), size_(file.size()) {}

std::uint64_t WindowedReader::bytes_fetched() const noexcept {
  return fetched_by_old_windows_ + (reader_ ? reader_->bytes_fetched() : 0);
}

HeaderReader& WindowedReader::at(std::uint64_t offset, std::uint64_t need, std::string_view what) {
  if (offset > size_) fail_at(offset, what, "lies past the end of the file (", size_, " bytes)");
  const std::uint64_t wanted_end = offset + std::min(need, size_ - offset);
  if (reader_ && offset >= window_begin_ && wanted_end <= reader_->end()) {
    reader_->seek(offset, what);
    return *reader_;
  }
  if (reader_) {
    // Reading on from (or within) the last window grows the window; a jump over unread bytes
    // (a skipped payload) starts small again.
    if (offset > reader_->end()) window_ = kMinWindow;
    else if (offset >= window_begin_) window_ = std::min(window_ * 2, kMaxWindow);
    fetched_by_old_windows_ += reader_->bytes_fetched();
  }
  const std::uint64_t length = std::min(std::max(window_, need), size_ - offset);
  reader_.emplace(file_, offset, offset + length);
  window_begin_ = offset;
  return *reader_;
}

MessageScanner::MessageScanner(WindowedReader& source, std::uint64_t begin, std::uint64_t end, std::string context,
                               FieldNamer namer)
    : source_(source), begin_(begin), next_(begin), end_(end), context_(std::move(context)), namer_(namer) {
  if (begin > end || end > source.size())
    source_.fail_at(begin, context_, "message [", begin, ", ", end, ") lies outside the file (", source.size(),
                    " bytes)");
}

// The common case, decoded from the bytes in memory without naming anything: a well-formed field
// inside its message. Anything else returns false and next() reads the field again the checked way,
// which names what is wrong (so this path builds no error text, and allocates nothing, per field).
bool MessageScanner::next_well_formed(HeaderReader& reader) {
  const std::span<const std::byte> head = reader.peek(kMaxFieldHeader, context_);
  const Varint tag = decode_varint(head);
  if (tag.status != Varint::Status::ok || (tag.value >> 3) == 0 || (tag.value >> 3) > kMaxFieldNumber) return false;
  Field f;
  f.number = static_cast<std::uint32_t>(tag.value >> 3);
  f.tag_offset = next_;
  f.value_offset = next_ + tag.length;
  const std::span<const std::byte> value = head.subspan(tag.length);
  std::uint64_t end = 0;
  switch (tag.value & 7) {
    case 0: {
      const Varint v = decode_varint(value);
      if (v.status != Varint::Status::ok) return false;
      f.value = v.value;
      end = f.value_offset + v.length;
      break;
    }
    case 1:
      if (value.size() < 8) return false;
      f.value = load_le<std::uint64_t>(value.data());
      end = f.value_offset + 8;
      break;
    case 5:
      if (value.size() < 4) return false;
      f.value = load_le<std::uint32_t>(value.data());
      end = f.value_offset + 4;
      break;
    case 2: {
      const Varint length = decode_varint(value);
      if (length.status != Varint::Status::ok) return false;
      f.length = length.value;
      f.offset = f.value_offset + length.length;
      if (f.offset > end_ || f.length > end_ - f.offset) return false;
      end = f.offset + f.length;
      break;
    }
    default: return false;
  }
  if (end > end_) return false;
  f.wire = static_cast<WireType>(tag.value & 7);
  f.end = end;
  reader.seek(f.wire == WireType::length_delimited ? f.offset : end, context_);  // where the checked read leaves it
  next_ = f.end;
  field_ = f;
  return true;
}

bool MessageScanner::next() {
  if (next_ >= end_) return false;
  HeaderReader& reader = source_.at(next_, kMaxFieldHeader, context_);
  if (next_well_formed(reader)) return true;
  Field f;
  f.tag_offset = next_;
  // `what_` (reused, so a scan does not allocate per field) names what is being read in errors.
  what_.assign(context_).append(": field tag");
  const std::uint64_t tag = reader.varint(what_);
  f.number = static_cast<std::uint32_t>(tag >> 3);
  const std::uint64_t wire = tag & 7;
  if ((tag >> 3) == 0 || (tag >> 3) > kMaxFieldNumber)
    fail_field("tag", f.tag_offset, "invalid field number ", tag >> 3);
  // "7 (graph)" when the message's vocabulary knows the number, "#20" otherwise.
  const std::string_view known = namer_ ? namer_(f.number) : std::string_view();
  what_.assign(context_).append(": field ");
  const std::size_t name_at = what_.size();
  if (known.empty()) what_.append("#");
  what_.append(std::to_string(f.number));
  if (!known.empty()) what_.append(" (").append(known).append(")");
  const std::string_view name = std::string_view(what_).substr(name_at);
  f.value_offset = reader.offset();
  switch (wire) {
    case 0: f.value = reader.varint(what_); break;
    case 1: f.value = reader.u64(what_); break;
    case 5: f.value = reader.u32(what_); break;
    case 2: {
      f.length = reader.varint(what_);
      f.offset = reader.offset();
      if (f.offset > end_ || f.length > end_ - f.offset)
        fail_field(name, f.tag_offset, "length ", f.length, " at payload offset ", f.offset,
                   " runs past the end of its message (ends at ", end_, ")");
      break;
    }
    default:
      fail_field(name, f.tag_offset, "wire type ", wire, " (", wire_name(wire),
                 ") is not supported (protobuf groups are deprecated and never used by ONNX)");
  }
  f.wire = static_cast<WireType>(wire);
  f.end = f.wire == WireType::length_delimited ? f.offset + f.length : reader.offset();
  if (f.end > end_) fail_field(name, f.tag_offset, "runs past the end of its message (ends at ", end_, ")");
  next_ = f.end;
  field_ = f;
  return true;
}

void MessageScanner::expect(WireType wire, std::string_view name) const {
  if (field_.wire != wire)
    fail_field(name, field_.tag_offset, "wire type ", static_cast<int>(field_.wire), " (",
               wire_name(static_cast<std::uint64_t>(field_.wire)), "), expected ", static_cast<int>(wire), " (",
               wire_name(static_cast<std::uint64_t>(wire)), ")");
}

std::string MessageScanner::read_string(std::string_view name, std::uint64_t max_length) {
  expect(WireType::length_delimited, name);
  if (field_.length > max_length)
    fail_field(name, field_.tag_offset, "string of ", field_.length, " bytes exceeds the limit of ", max_length);
  HeaderReader& reader = source_.at(field_.offset, field_.length, name);
  // The field's full name is written only for an error (a string past the file's end).
  if (reader.remaining() >= field_.length) return reader.string(field_.length, context_);
  return reader.string(field_.length, context_ + ": field " + std::string(name));
}

MessageScanner MessageScanner::nested(std::string context, FieldNamer namer) const {
  return MessageScanner(source_, field_.offset, field_.end, std::move(context), namer);
}

}  // namespace lwload::formats::protobuf
