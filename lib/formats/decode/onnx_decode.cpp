// Load-time conversion of ONNX typed fields into a tensor's stored bytes (formats::decode_onnx_fields).
//
// The ONNX reader reports such tensors with pieces that are complete protobuf fields of one typed
// field number, tags included (see onnx.cpp): a run may be packed (tag, length, elements) or a
// single unpacked element (tag, value), and writers may mix both. Parsing the tags here, rather
// than handing over bare payloads, keeps that general and lets every element be checked:
//   onnx_varint — int32_data (INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16/BFLOAT16/FLOAT8 bit
//                 patterns), int64_data (INT64), uint64_data (UINT64, UINT32): one varint per
//                 element, truncated to the element width (int32_data sign-extends negatives to
//                 10-byte varints; truncation restores two's complement); BOOL is 1 for any
//                 non-zero int32, as numpy_helper.to_array reads it;
//   onnx_fixed  — float_data / double_data with some element written unpacked: little-endian
//                 4- or 8-byte values copied as they are (COMPLEX64/128 are pairs of them).
#include <cstring>

#include "formats/decode/encoded.hpp"
#include "formats/onnx/protobuf_onnx.hpp"
#include "formats/varint.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {
namespace {

class FieldDecoder {
 public:
  FieldDecoder(const TensorInfo& tensor, std::span<const std::byte> encoded, std::span<std::byte> out,
               const std::filesystem::path& file, onnx::TypedField field, std::size_t width)
      : tensor_(tensor), in_(encoded), out_(out), file_(file), field_(field), width_(width) {}

  void run() {
    while (pos_ < in_.size()) {
      const std::size_t tag_at = pos_;
      const std::uint64_t tag = varint("field tag");
      const std::uint64_t number = tag >> 3;
      // Every field is the same one: the dtype's typed field, or (a Constant node's value_ints /
      // value_floats) the attribute field holding such elements.
      if (tag_at == 0 && number != field_.number &&
          onnx::is_attribute_alias(tensor_.dtype, static_cast<std::uint32_t>(number)))
        number_ = static_cast<std::uint32_t>(number);
      if (number != number_)
        fail_at(tag_at, "field number ", number, " where ", onnx::tensor_field_name(field_.number), " (", number_,
                ") was expected");
      const std::uint64_t wire = tag & 7;
      if (wire == 2) {
        const std::uint64_t length = varint("packed length");
        if (length > in_.size() - pos_)
          fail_at(tag_at, "packed run of ", length, " bytes runs past the encoded data (", in_.size() - pos_,
                  " bytes left)");
        const std::size_t end = pos_ + static_cast<std::size_t>(length);
        if (field_.wire == onnx::TypedWire::varint) {
          while (pos_ < end) {
            store(varint("packed element"));
            if (pos_ > end) fail_at(end, "a packed varint runs past its field");
          }
        } else {
          if (length % width_ != 0) fail_at(tag_at, "packed length ", length, " is not a multiple of ", width_);
          copy_fixed(static_cast<std::size_t>(length));
        }
      } else if (wire == 0 && field_.wire == onnx::TypedWire::varint) {
        store(varint("element"));
      } else if ((wire == 5 && field_.wire == onnx::TypedWire::fixed32) ||
                 (wire == 1 && field_.wire == onnx::TypedWire::fixed64)) {
        if (in_.size() - pos_ < width_) fail_at(pos_, "truncated ", width_, "-byte element");
        copy_fixed(width_);
      } else {
        fail_at(tag_at, "wire type ", wire, " does not fit ", onnx::tensor_field_name(field_.number));
      }
    }
    if (written_ != out_.size())
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", tensor_.name,
           "': ", onnx::tensor_field_name(field_.number), " holds ", written_ / element_bytes(), " elements but ",
           dtype_name(tensor_.dtype), " shape needs ", out_.size() / element_bytes());
  }

 private:
  // Bytes of one element as counted against the shape (a COMPLEX64 element is two floats).
  std::size_t element_bytes() const { return dtype_layout(tensor_.dtype)->block_bytes; }

  template <typename... Parts>
  [[noreturn]] void fail_at(std::size_t at, const Parts&... detail) const {
    fail(ErrorCode::bad_input, file_.string(), ": tensor '", tensor_.name,
         "': ", onnx::tensor_field_name(field_.number), " at encoded byte ", at, ": ", detail...);
  }

  void too_many() const {
    fail(ErrorCode::bad_input, file_.string(), ": tensor '", tensor_.name,
         "': ", onnx::tensor_field_name(field_.number), " holds more elements than the ", dtype_name(tensor_.dtype),
         " shape's ", out_.size() / element_bytes());
  }

  std::uint64_t varint(std::string_view what) {
    const Varint v = decode_varint(in_.subspan(pos_));
    switch (v.status) {
      case Varint::Status::ok: break;
      case Varint::Status::truncated: fail_at(pos_, "truncated varint (", what, ")");
      case Varint::Status::overflow: fail_at(pos_, "varint overflows 64 bits (", what, ")");
      case Varint::Status::too_long: fail_at(pos_, "varint longer than 10 bytes (", what, ")");
    }
    pos_ += v.length;
    return v.value;
  }

  void store(std::uint64_t value) {
    if (out_.size() - written_ < width_) too_many();
    // BOOL in int32_data: onnx's numpy_helper reads the int32 and casts it to bool (any non-zero is
    // True); a bare low byte would turn 256 into False and 2 into a byte that is not a bool.
    if (tensor_.dtype == DType::BOOL) value = static_cast<std::uint32_t>(value) != 0 ? 1 : 0;
    std::memcpy(out_.data() + written_, &value, width_);  // little-endian host: low bytes first
    written_ += width_;
  }

  void copy_fixed(std::size_t bytes) {
    if (out_.size() - written_ < bytes) too_many();
    std::memcpy(out_.data() + written_, in_.data() + pos_, bytes);
    written_ += bytes;
    pos_ += bytes;
  }

  const TensorInfo& tensor_;
  std::span<const std::byte> in_;
  std::span<std::byte> out_;
  const std::filesystem::path& file_;
  onnx::TypedField field_;
  std::size_t width_;                     // bytes one wire element becomes
  std::uint32_t number_ = field_.number;  // the field number every element carries
  std::size_t pos_ = 0;
  std::size_t written_ = 0;
};

}  // namespace

void decode_onnx_fields(const TensorInfo& tensor, std::span<const std::byte> encoded, std::span<std::byte> out,
                        const std::filesystem::path& file) {
  const auto field = onnx::typed_field_for(tensor.dtype);
  const auto expected = field && field->wire == onnx::TypedWire::varint ? Encoding::onnx_varint : Encoding::onnx_fixed;
  if (!field || expected != tensor.encoding)
    fail(ErrorCode::unsupported, file.string(), ": tensor '", tensor.name, "': ", dtype_name(tensor.dtype),
         " cannot be decoded from ", encoding_name(tensor.encoding));
  const std::size_t width = field->wire == onnx::TypedWire::fixed32   ? 4
                            : field->wire == onnx::TypedWire::fixed64 ? 8
                                                                      : dtype_layout(tensor.dtype)->block_bytes;
  FieldDecoder(tensor, encoded, out, file, *field, width).run();
}

}  // namespace lwload::formats
