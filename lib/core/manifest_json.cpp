// Manifest → JSON, the single serializer behind `inspect --json` and the tests. Written as text
// (core/json_text.hpp) in 64 KiB pieces, never held whole and never as a DOM: what it costs does
// not grow with the tensors, the metadata or the output. A quantization record several tensors
// share (a TFLite table the file stores once) is written once, in "quantizations", and the
// tensors name it by its index there.
#include "lwload/manifest_json.hpp"

#include <boost/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/json_text.hpp"

namespace lwload {
using json_text::append_json_string;
using json_text::append_member;
using json_text::append_number;
namespace {

// Doubles as Boost.JSON writes them ("5E-1"), the text `inspect --json` has always printed: one
// serializer reset per number, which allocates nothing for a scalar.
class DoubleText {
 public:
  void append(std::string& out, double d) {
    value_ = d;
    serializer_.reset(&value_);
    char text[64];
    while (!serializer_.done()) {
      const auto piece = serializer_.read(text, sizeof text);
      out.append(piece.data(), piece.size());
    }
  }

 private:
  boost::json::value value_;
  boost::json::serializer serializer_;
};

// Quantization records by address → their index in "quantizations", in the order first met. An
// open-addressing table of 16-byte slots at most half full: a million TFJS tensors each with its
// own record cost 32 MiB here, not a hash node each.
class RecordIndex {
 public:
  explicit RecordIndex(std::size_t records) {
    std::size_t slots = 4;
    while (slots < 2 * records) slots *= 2;
    slots_.assign(slots, Slot{});
  }

  // The record's index, and whether this is its first use.
  std::pair<std::size_t, bool> insert(const Quantization* record) {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t s = std::hash<const void*>{}(record)&mask;; s = (s + 1) & mask) {
      if (slots_[s].record == record) return {slots_[s].index, false};
      if (!slots_[s].record) {
        slots_[s] = Slot{record, order_.size()};
        order_.push_back(record);
        return {order_.size() - 1, true};
      }
    }
  }

  const std::vector<const Quantization*>& order() const noexcept { return order_; }

 private:
  struct Slot {
    const Quantization* record = nullptr;
    std::size_t index = 0;
  };
  std::vector<Slot> slots_;
  std::vector<const Quantization*> order_;
};

class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) { buffer_.reserve(kChunk + kChunk / 4); }

  void manifest(const Manifest& manifest, bool with_metadata) {
    buffer_ += "{\"format\":";
    append_json_string(buffer_, manifest.format);
    buffer_ += ",\"files\":[";
    for (std::size_t i = 0; i < manifest.files.size(); ++i) {
      if (i) buffer_ += ',';
      append_json_string(buffer_, manifest.files[i].string());
    }
    buffer_ += ']';
    append_member(buffer_, "total_bytes", manifest.total_bytes());
    buffer_ += ",\"tensors\":[";
    std::size_t quantized = 0;
    for (const auto& t : manifest.tensors) quantized += t.quantization != nullptr;
    RecordIndex records(quantized);
    for (std::size_t i = 0; i < manifest.tensors.size(); ++i) {
      if (i) buffer_ += ',';
      tensor(manifest.tensors[i], records);
      spill();
    }
    buffer_ += "],\"quantizations\":[";
    for (std::size_t i = 0; i < records.order().size(); ++i) {
      if (i) buffer_ += ',';
      quantization(*records.order()[i]);
      spill();
    }
    buffer_ += ']';
    if (with_metadata) metadata(manifest.metadata);
    buffer_ += '}';
    flush();
  }

 private:
  static constexpr std::size_t kChunk = 64 * 1024;

  void spill() {
    if (buffer_.size() >= kChunk) flush();
  }
  void flush() {
    out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
  }

  template <typename Numbers, typename Append>
  void list(const Numbers& values, Append append) {
    buffer_ += '[';
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (i) buffer_ += ',';
      append(values[i]);
      spill();
    }
    buffer_ += ']';
  }
  template <typename Integers>
  void integers(const Integers& values) {
    list(values, [&](auto v) { append_number(buffer_, v); });
  }

  // One tensor's object: same keys in the same order as ever, "quantization" an index or null.
  void tensor(const TensorInfo& t, RecordIndex& records) {
    buffer_ += "{\"name\":";
    append_json_string(buffer_, t.name);
    append_member(buffer_, "dtype", dtype_name(t.dtype));
    buffer_ += ",\"shape\":";
    integers(t.shape);
    append_member(buffer_, "bytes", t.bytes);
    buffer_ += ",\"pieces\":[";
    if (t.encoding == Encoding::raw) {
      for (std::size_t i = 0; i < t.pieces.size(); ++i) {
        buffer_ += i ? ",{\"file\":" : "{\"file\":";
        append_number(buffer_, t.pieces[i].file);
        append_member(buffer_, "offset", t.pieces[i].offset);
        append_member(buffer_, "length", t.pieces[i].length);
        buffer_ += '}';
        spill();
      }
    }
    buffer_ += ']';
    if (t.quantization) append_member(buffer_, "quantization", records.insert(t.quantization.get()).first);
    else buffer_ += ",\"quantization\":null";
    if (t.encoding != Encoding::raw) append_member(buffer_, "encoding", encoding_name(t.encoding));
    if (t.sparsity) {
      buffer_ += ",\"sparsity\":";
      sparsity(*t.sparsity);
    }
    if (t.origin) append_member(buffer_, "origin", std::string_view(*t.origin));
    buffer_ += '}';
  }

  void quantization(const Quantization& q) {
    buffer_ += "{\"scheme\":";
    append_json_string(buffer_, q.scheme);
    buffer_ += ",\"scale\":";
    list(q.scale, [&](double v) { doubles_.append(buffer_, v); });
    buffer_ += ",\"zero_point\":";
    integers(q.zero_point);
    buffer_ += ",\"min\":";
    if (q.min) doubles_.append(buffer_, *q.min);
    else buffer_ += "null";
    buffer_ += ",\"original_dtype\":";
    if (q.original_dtype) append_json_string(buffer_, dtype_name(*q.original_dtype));
    else buffer_ += "null";
    append_member(buffer_, "axis", q.axis);
    buffer_ += '}';
  }

  // The structure of a sparse tensor, by counts: its index arrays can be as large as its values.
  void sparsity(const Sparsity& s) {
    buffer_ += "{\"traversal_order\":";
    integers(s.traversal_order);
    buffer_ += ",\"block_map\":";
    integers(s.block_map);
    buffer_ += ",\"levels\":[";
    for (std::size_t i = 0; i < s.levels.size(); ++i) {
      const Sparsity::Level& level = s.levels[i];
      buffer_ += i ? ",{\"format\":" : "{\"format\":";
      append_json_string(buffer_, level.sparse ? "csr" : "dense");
      append_member(buffer_, "size", level.size);
      if (level.sparse) {
        append_member(buffer_, "segments", level.segments.size());
        append_member(buffer_, "indices", level.indices.size());
      }
      buffer_ += '}';
    }
    buffer_ += ']';
    append_member(buffer_, "stored_values", s.stored_values);
    append_member(buffer_, "dense_bytes", s.dense_bytes);
    buffer_ += '}';
  }

  // An object of the metadata: a key given twice (ONNX metadata_props may) is written once, where
  // it first appears, with its last value, as a JSON object built key by key would hold it.
  void metadata(const std::vector<MetaEntry>& entries) {
    std::unordered_map<std::string_view, std::size_t> last;
    last.reserve(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) last[entries[i].key] = i;
    buffer_ += ",\"metadata\":{";
    bool first = true;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const auto it = last.find(entries[i].key);
      if (it == last.end()) continue;  // written already
      if (!first) buffer_ += ',';
      first = false;
      append_json_string(buffer_, entries[i].key);
      buffer_ += ':';
      value(entries[it->second].value);
      last.erase(it);
      spill();
    }
    buffer_ += '}';
  }

  void value(const MetaValue& meta) {
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::monostate>) {
            buffer_ += "null";
          } else if constexpr (std::is_same_v<T, bool>) {
            buffer_ += v ? "true" : "false";
          } else if constexpr (std::is_same_v<T, double>) {
            doubles_.append(buffer_, v);
          } else if constexpr (std::is_same_v<T, std::string>) {
            append_json_string(buffer_, v);
          } else if constexpr (std::is_same_v<T, MetaValue::Array>) {
            list(v, [&](const MetaValue& item) { value(item); });
          } else if constexpr (std::is_same_v<T, PackedArray>) {
            packed(v);
          } else {
            append_number(buffer_, v);
          }
        },
        meta.value);
  }

  void packed(const PackedArray& array) {
    buffer_ += '[';
    const std::size_t n = array.size();
    for (std::size_t i = 0; i < n; ++i) {
      if (i) buffer_ += ',';
      value(array[i]);
      spill();
    }
    buffer_ += ']';
  }

  std::ostream& out_;
  std::string buffer_;
  DoubleText doubles_;
};

}  // namespace

void write_manifest_json(std::ostream& out, const Manifest& manifest, bool with_metadata) {
  Writer(out).manifest(manifest, with_metadata);
}

std::string manifest_to_json(const Manifest& manifest, bool with_metadata) {
  std::ostringstream out;
  write_manifest_json(out, manifest, with_metadata);
  return std::move(out).str();
}

}  // namespace lwload
