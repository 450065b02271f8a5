// Names by rule (ggml_adapter.hpp, check_names): a tensor ggml cannot name as itself is refused, not
// renamed. ggml_set_name copies a C string and cuts it at GGML_MAX_NAME - 1 bytes, so "w\0evil"
// would become "w" and two long names sharing their first 63 bytes one name: ggml_get_tensor would
// then answer another tensor's bytes, or none. No mapping keeps ggml's own lookup by the model's
// names, so there is none: the name is refused with the limit, and the model loads once the tensor
// is left out (LoadOptions::plan.only) or renamed.
#include <string>
#include <string_view>
#include <unordered_set>

#include "ggml_adapter.hpp"
#include "lwload/error.hpp"

namespace lwload::ggml {
namespace {

// The name as an error message can show it: control bytes (NUL among them) escaped as \xNN.
std::string shown(std::string_view name) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += hex[byte >> 4];
      out += hex[byte & 15];
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

void check_names(const Manifest& manifest, const Plan& plan) {
  constexpr std::size_t kLongest = GGML_MAX_NAME - 1;  // ggml_tensor::name holds the C string's NUL
  std::unordered_set<std::string_view> seen;
  for (std::size_t i = 0; i < manifest.tensors.size(); ++i) {
    if (plan.tensors[i].placement == Placement::skipped) continue;
    const std::string& name = manifest.tensors[i].name;
    if (const std::size_t nul = name.find('\0'); nul != std::string::npos)
      fail(ErrorCode::unsupported, "tensor '", shown(name), "': its name holds a NUL byte at byte ", nul,
           ", and ggml reads names as C strings (it would be named '", shown(name.substr(0, nul)),
           "'); leave it out (LoadOptions::plan.only) or rename it");
    if (name.size() > kLongest)
      fail(ErrorCode::unsupported, "tensor '", shown(name), "': its name is ", name.size(),
           " bytes, but ggml keeps at most ", kLongest, " (GGML_MAX_NAME ", GGML_MAX_NAME,
           " with the C string's NUL); leave it out (LoadOptions::plan.only) or rename it");
    if (!seen.insert(name).second)
      fail(ErrorCode::unsupported, "tensor '", shown(name),
           "': two loaded tensors have this name, and ggml_get_tensor finds only one");
  }
}

}  // namespace lwload::ggml
