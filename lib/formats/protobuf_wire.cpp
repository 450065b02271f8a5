// The protobuf wire scanner (see protobuf_wire.hpp for why ONNX is not parsed with libprotobuf).
#include "formats/protobuf_wire.hpp"

#include <utility>

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

}  // namespace

MessageScanner::MessageScanner(HeaderReader& reader, std::uint64_t begin, std::uint64_t end,
                               std::string context, FieldNamer namer)
    : reader_(reader), begin_(begin), next_(begin), end_(end), context_(std::move(context)), namer_(namer) {
  if (begin > end || end > reader.end())
    reader_.fail_at(begin, context_, "message [", begin, ", ", end, ") lies outside the file (",
                    reader.end(), " bytes)");
}

bool MessageScanner::next() {
  if (next_ >= end_) return false;
  reader_.seek(next_, context_);
  Field f;
  f.tag_offset = next_;
  const std::uint64_t tag = reader_.varint(context_ + ": field tag");
  f.number = static_cast<std::uint32_t>(tag >> 3);
  const std::uint64_t wire = tag & 7;
  if ((tag >> 3) == 0 || (tag >> 3) > kMaxFieldNumber)
    fail_field("tag", f.tag_offset, "invalid field number ", tag >> 3);
  // "7 (graph)" when the message's vocabulary knows the number, "#20" otherwise.
  const std::string_view known = namer_ ? namer_(f.number) : std::string_view();
  const std::string name =
      known.empty() ? "#" + std::to_string(f.number) : std::to_string(f.number) + " (" + std::string(known) + ")";
  f.value_offset = reader_.offset();
  switch (wire) {
    case 0: f.value = reader_.varint(context_ + ": field " + name); break;
    case 1: f.value = reader_.u64(context_ + ": field " + name); break;
    case 5: f.value = reader_.u32(context_ + ": field " + name); break;
    case 2: {
      f.length = reader_.varint(context_ + ": field " + name + " length");
      f.offset = reader_.offset();
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
  f.end = f.wire == WireType::length_delimited ? f.offset + f.length : reader_.offset();
  if (f.end > end_)
    fail_field(name, f.tag_offset, "runs past the end of its message (ends at ", end_, ")");
  next_ = f.end;
  field_ = f;
  return true;
}

void MessageScanner::expect(WireType wire, std::string_view name) const {
  if (field_.wire != wire)
    fail_field(name, field_.tag_offset, "wire type ", static_cast<int>(field_.wire), " (",
               wire_name(static_cast<std::uint64_t>(field_.wire)), "), expected ",
               static_cast<int>(wire), " (", wire_name(static_cast<std::uint64_t>(wire)), ")");
}

std::string MessageScanner::read_string(std::string_view name, std::uint64_t max_length) {
  expect(WireType::length_delimited, name);
  if (field_.length > max_length)
    fail_field(name, field_.tag_offset, "string of ", field_.length, " bytes exceeds the limit of ",
               max_length);
  reader_.seek(field_.offset, name);
  return reader_.string(field_.length, context_ + ": field " + std::string(name));
}

MessageScanner MessageScanner::nested(std::string context, FieldNamer namer) const {
  return MessageScanner(reader_, field_.offset, field_.end, std::move(context), namer);
}

}  // namespace lwload::formats::protobuf
