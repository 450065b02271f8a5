// The ggml adapter's rules, each on real files this suite writes: names ggml can hold (refused, never
// cut into another tensor's), every type the linked ggml reads, integer tensors, and a ggml device
// unlike lavapipe — the fake one of fake_device.hpp, whose buffer_from_host_ptr is NULL, declines,
// or wants a larger alignment, and which caps live buffers as Vulkan drivers do.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <ggml-backend.h>
#include <ggml.h>

#include "fake_device.hpp"
#include "lwload/error.hpp"
#include "lwload/ggml.hpp"
#include "lwload/lwload.hpp"

namespace fs = std::filesystem;
using lwload::ErrorCode;

namespace {

fs::path scratch() {
  static const fs::path dir = [] {
    const char* root = std::getenv("LWLOAD_SCRATCH");
    fs::path d = fs::path(root ? root : "/tmp") / ("ggml-adapter-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

ggml_backend_dev_t cpu() {
  static ggml_backend_dev_t dev = [] {
    ggml_backend_load_all_from_path(LWLOAD_GGML_BACKEND_DIR);
    return ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
  }();
  REQUIRE(dev != nullptr);
  return dev;
}

struct Entry {
  std::string name;  // may hold any byte, NUL included
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::vector<unsigned char> bytes;
};

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", byte);
      out += esc;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A safetensors file as the reference writer lays it out, its header padded with spaces so the data
// starts at a multiple of `data_alignment` from the file's start.
fs::path write_safetensors(const std::string& file, const std::vector<Entry>& entries,
                           std::uint64_t data_alignment = 8) {
  std::string header = "{";
  std::uint64_t offset = 0;
  for (const Entry& e : entries) {
    if (header.size() > 1) header += ",";
    header += json_string(e.name) + ":{\"dtype\":\"" + e.dtype + "\",\"shape\":[";
    for (std::size_t i = 0; i < e.shape.size(); ++i) header += (i ? "," : "") + std::to_string(e.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + e.bytes.size()) + "]}";
    offset += e.bytes.size();
  }
  header += "}";
  while ((8 + header.size()) % data_alignment) header += ' ';
  const fs::path path = scratch() / file;
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t length = header.size();
  out.write(reinterpret_cast<const char*>(&length), 8);  // little-endian hosts only, as lwload's CI
  out << header;
  for (const Entry& e : entries)
    out.write(reinterpret_cast<const char*>(e.bytes.data()), static_cast<std::streamsize>(e.bytes.size()));
  return path;
}

std::vector<unsigned char> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> bytes(n);
  for (auto& b : bytes) b = static_cast<unsigned char>(rng());
  return bytes;
}

Entry f32(std::string name, std::int64_t elements, unsigned seed) {
  return {std::move(name), "F32", {elements}, random_bytes(static_cast<std::size_t>(elements) * 4, seed)};
}

std::vector<unsigned char> bytes_of(const ggml_tensor* t) {
  std::vector<unsigned char> out(ggml_nbytes(t));
  ggml_backend_tensor_get(t, out.data(), 0, out.size());
  return out;
}

// The message of what `body` throws as lwload::Error with `code`; fails the test when nothing is.
template <typename Body>
std::string refusal(ErrorCode code, Body&& body) {
  try {
    body();
  } catch (const lwload::Error& e) {
    CHECK(e.code() == code);
    return e.what();
  }
  FAIL("nothing was thrown");
  return {};
}

lwload::LoadOptions only(std::vector<std::string> names) {
  lwload::LoadOptions options;
  options.plan.only = std::move(names);
  return options;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a name with a NUL byte is refused, not cut into another tensor's name") {
  // "w\0evil" comes first: ggml_set_name would make it "w", and ggml_get_tensor(ctx, "w") would
  // answer its bytes instead of w's.
  const Entry evil = f32(std::string("w\0evil", 6), 4, 1);
  const Entry w = f32("w", 4, 2);
  const fs::path path = write_safetensors("nul.safetensors", {evil, w});
  const std::string message =
      refusal(ErrorCode::unsupported, [&] { lwload::ggml::load(lwload::open_manifest(path), cpu()); });
  CHECK(contains(message, "tensor 'w\\x00evil'"));
  CHECK(contains(message, "NUL byte at byte 1"));
  CHECK(contains(message, "C strings"));

  // Left out, the rest loads, and ggml's own lookup finds w's bytes under its name.
  lwload::ggml::Model model = lwload::ggml::load(lwload::open_manifest(path), cpu(), only({"w"}));
  ggml_tensor* found = ggml_get_tensor(model.context(), "w");
  REQUIRE(found != nullptr);
  CHECK(bytes_of(found) == w.bytes);
  CHECK(model.tensor(std::string("w\0evil", 6)) == nullptr);
}

TEST_CASE("names longer than ggml keeps are refused, naming the tensor and the limit") {
  // Two 89-byte names sharing their first 63 bytes: ggml would hold both as the same 63 bytes.
  const std::string stem(63, 'a');
  const std::string first = stem + std::string(26, 'x'), second = stem + std::string(26, 'y');
  const fs::path path = write_safetensors("long.safetensors", {f32(first, 4, 3), f32(second, 4, 4), f32(stem, 4, 5)});
  const std::string message =
      refusal(ErrorCode::unsupported, [&] { lwload::ggml::load(lwload::open_manifest(path), cpu()); });
  CHECK(contains(message, "tensor '" + first + "'"));
  CHECK(contains(message, "89 bytes"));
  CHECK(contains(message, "at most 63"));

  // The longest name ggml holds (63 bytes) loads and is found by ggml_get_tensor; 64 does not.
  lwload::ggml::Model model = lwload::ggml::load(lwload::open_manifest(path), cpu(), only({stem}));
  ggml_tensor* found = ggml_get_tensor(model.context(), stem.c_str());
  REQUIRE(found != nullptr);
  CHECK(std::string(ggml_get_name(found)) == stem);
  const fs::path sixty_four = write_safetensors("64.safetensors", {f32(std::string(64, 'b'), 4, 6)});
  CHECK(contains(refusal(ErrorCode::unsupported, [&] { lwload::ggml::load(lwload::open_manifest(sixty_four), cpu()); }),
                 "64 bytes"));
}

TEST_CASE("two loaded tensors of one name are refused: ggml_get_tensor would find only one") {
  // No reader lets a model name two tensors alike; a manifest an application edits or builds can.
  const fs::path path = write_safetensors("twice.safetensors", {f32("a", 4, 20), f32("b", 4, 21)});
  lwload::Manifest manifest = lwload::open_manifest(path);
  manifest.tensors[1].name = "a";
  const std::string message = refusal(ErrorCode::unsupported, [&] { lwload::ggml::load(std::move(manifest), cpu()); });
  CHECK(contains(message, "tensor 'a': two loaded tensors have this name"));
}

TEST_CASE("a refused name is refused before anything is allocated or imported") {
  fake::Config config;
  config.entry = fake::Config::Entry::imports;
  const fs::path path =
      write_safetensors("nul-fake.safetensors", {f32(std::string("a\0b", 3), 1024, 7), f32("a", 1024, 8)}, 4096);
  ggml_backend_dev_t dev = fake::device(config);
  refusal(ErrorCode::unsupported, [&] { lwload::ggml::load(lwload::open_manifest(path), dev); });
  CHECK(fake::counts().allocations == 0);
  CHECK(fake::counts().imports == 1);  // the probe at open, nothing of the model
  CHECK(fake::counts().live == 0);
}

struct GgufTensor {
  std::string name;
  std::uint32_t type;
  std::int64_t ne0;
  std::vector<unsigned char> bytes;
};

// A GGUF v3 file with no metadata: tensor infos, then the data at 32-byte alignment.
fs::path write_gguf(const std::string& file, const std::vector<GgufTensor>& tensors) {
  std::string out = "GGUF";
  auto put = [&](auto value) { out.append(reinterpret_cast<const char*>(&value), sizeof value); };
  put(std::uint32_t{3});
  put(static_cast<std::uint64_t>(tensors.size()));
  put(std::uint64_t{0});
  std::uint64_t offset = 0;
  for (const GgufTensor& t : tensors) {
    put(static_cast<std::uint64_t>(t.name.size()));
    out += t.name;
    put(std::uint32_t{1});
    put(static_cast<std::uint64_t>(t.ne0));
    put(t.type);
    put(offset);
    offset += (t.bytes.size() + 31) / 32 * 32;
  }
  out.resize((out.size() + 31) / 32 * 32, '\0');
  for (const GgufTensor& t : tensors) {
    out.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
    out.resize((out.size() + 31) / 32 * 32, '\0');
  }
  const fs::path path = scratch() / file;
  std::ofstream(path, std::ios::binary) << out;
  return path;
}

TEST_CASE("a GGUF with 64-byte names does not load through the adapter as one name") {
  // ggml's own gguf_init_from_file refuses it ("tensor name 0 is too long: 64 >= 64"); two such
  // names sharing 63 bytes would be one name in ggml.
  const std::string stem(63, 'n');
  const fs::path path =
      write_gguf("names64.gguf", {{stem + "1", 0, 4, random_bytes(16, 30)}, {stem + "2", 0, 4, random_bytes(16, 31)}});
  try {
    lwload::ggml::load(lwload::open_manifest(path), cpu());
    FAIL("the GGUF loaded");
  } catch (const lwload::Error& e) {
    CHECK_MESSAGE(contains(e.what(), "64"), e.what());  // the adapter's refusal, or the reader's
  }
}

TEST_CASE(
    "every type the linked ggml reads loads through the adapter, checked against ggml's traits, or is refused naming "
    "it") {
  std::vector<GgufTensor> mapped;
  std::size_t unnamed = 0;
  for (int id = 0; id < GGML_TYPE_COUNT; ++id) {
    const ggml_type_traits* traits = ggml_get_type_traits(static_cast<ggml_type>(id));
    const std::optional<lwload::DType> dtype = lwload::dtype_from_ggml(static_cast<std::uint32_t>(id));
    if (!traits || traits->blck_size <= 0) {
      // A retired id: lwload has no dtype for it either, so no tensor of it reaches the adapter.
      CHECK_MESSAGE(!dtype, "retired ggml type ", id);
      continue;
    }
    // Two blocks of it, random bytes: ggml reads them as they are.
    GgufTensor tensor{"t" + std::to_string(id), static_cast<std::uint32_t>(id), 2 * traits->blck_size,
                      random_bytes(2 * traits->type_size, static_cast<unsigned>(id))};
    if (!dtype) {
      // lwload's table does not name it (yet): the file is refused, naming the type, never misread.
      ++unnamed;
      const fs::path path = write_gguf("type" + std::to_string(id) + ".gguf", {tensor});
      const std::string message =
          refusal(ErrorCode::bad_input, [&] { lwload::ggml::load(lwload::open_manifest(path), cpu()); });
      CHECK_MESSAGE(contains(message, "ggml type " + std::to_string(id)), message);
      continue;
    }
    lwload::TensorInfo info;
    info.name = tensor.name;
    info.dtype = *dtype;
    info.shape = {tensor.ne0};
    CHECK_MESSAGE(lwload::ggml::type_of(info, "gguf") == id, traits->type_name);
    mapped.push_back(std::move(tensor));
  }
  MESSAGE(mapped.size(), " ggml types load through the adapter; ", unnamed,
          " have no lwload dtype yet and are refused");
  CHECK(mapped.size() >= 30);
  const fs::path path = write_gguf("every-type.gguf", mapped);
  lwload::ggml::Model model = lwload::ggml::load(lwload::open_manifest(path), cpu());
  for (const GgufTensor& t : mapped) {
    CAPTURE(t.name);
    ggml_tensor* loaded = ggml_get_tensor(model.context(), t.name.c_str());
    REQUIRE(loaded != nullptr);
    CHECK(loaded->type == static_cast<ggml_type>(t.type));
    CHECK(loaded->ne[0] == t.ne0);
    CHECK(bytes_of(loaded) == t.bytes);
  }
}

TEST_CASE("integer tensors go through the adapter with their ggml type, shape and bytes") {
  const std::vector<Entry> entries = {
      {"i32", "I32", {3, 5}, random_bytes(3 * 5 * 4, 9)},
      {"i8", "I8", {7}, random_bytes(7, 10)},
      {"i16", "I16", {2, 2, 3}, random_bytes(2 * 2 * 3 * 2, 11)},
      {"i64", "I64", {4}, random_bytes(4 * 8, 12)},
  };
  const fs::path path = write_safetensors("ints.safetensors", entries);
  const ggml_type types[] = {GGML_TYPE_I32, GGML_TYPE_I8, GGML_TYPE_I16, GGML_TYPE_I64};
  auto check = [&](lwload::ggml::Model& model) {
    for (std::size_t i = 0; i < entries.size(); ++i) {
      CAPTURE(entries[i].name);
      ggml_tensor* t = ggml_get_tensor(model.context(), entries[i].name.c_str());
      REQUIRE(t != nullptr);
      CHECK(t->type == types[i]);
      for (std::size_t d = 0; d < entries[i].shape.size(); ++d)  // ggml's ne: the row-major shape reversed
        CHECK(t->ne[d] == entries[i].shape[entries[i].shape.size() - 1 - d]);
      CHECK(bytes_of(t) == entries[i].bytes);
    }
    ggml_tensor* i32 = model.tensor("i32");
    std::int32_t second;
    std::memcpy(&second, entries[0].bytes.data() + 4, 4);
    CHECK(static_cast<const std::int32_t*>(i32->data)[1] == second);
  };
  SUBCASE("on ggml's CPU device") {
    lwload::ggml::Model model = lwload::ggml::load(lwload::open_manifest(path), cpu());
    check(model);
  }
  SUBCASE("staged into a device's own buffers") {
    fake::Config config;
    config.entry = fake::Config::Entry::none;
    config.host_buffers = false;
    lwload::ggml::Model model = lwload::ggml::load(lwload::open_manifest(path), fake::device(config));
    CHECK(model.weights().plan().count(lwload::Placement::staged) == entries.size());
    check(model);
  }
}

TEST_CASE(
    "a device whose buffer_from_host_ptr entry is NULL is never asked to import, even when its caps say it imports") {
  const fs::path path = write_safetensors("null-entry.safetensors", {f32("a", 4096, 13), f32("b", 4096, 14)}, 4096);
  fake::Config config;
  config.entry = fake::Config::Entry::none;
  config.caps_say_import = true;  // as a backend whose caps and interface disagree
  ggml_backend_dev_t dev = fake::device(config);
  const auto device = lwload::ggml::open_device(dev);
  CHECK_FALSE(device->info().caps.import_host_ptr);
  bool said = false;
  for (const auto& [key, value] : device->info().details)
    if (key == "zero_copy") said = contains(value, "no buffer_from_host_ptr entry (NULL)");
  CHECK(said);

  lwload::ggml::Model model = lwload::ggml::load(lwload::open_manifest(path), dev);
  CHECK(fake::counts().import_calls == 0);
  const lwload::Plan& plan = model.weights().plan();
  CHECK(plan.count(lwload::Placement::direct) == 2);
  CHECK(bytes_of(model.tensor("b")) == f32("b", 4096, 14).bytes);
}

TEST_CASE("a device whose buffer_from_host_ptr answers NULL imports nothing, and a decline at load re-plans direct") {
  const Entry a = f32("a", 4096, 15), b = f32("b", 4096, 16);
  const fs::path path = write_safetensors("declines.safetensors", {a, b}, 4096);
  fake::Config config;
  SUBCASE("every call (OpenCL, SYCL)") {
    config.entry = fake::Config::Entry::declines;
    ggml_backend_dev_t dev = fake::device(config);
    lwload::ggml::Model model = lwload::ggml::load(lwload::open_manifest(path), dev);
    CHECK(fake::counts().import_calls == 9);  // the probes, a page to 1 MiB; none at load
    CHECK(model.weights().plan().count(lwload::Placement::direct) == 2);
    bool said = false;
    const auto device = lwload::ggml::open_device(dev);
    for (const auto& [key, value] : device->info().details)
      if (key == "zero_copy") said = contains(value, "declined every probe");
    CHECK(said);
    CHECK(bytes_of(model.tensor("a")) == a.bytes);
  }
  SUBCASE("after the probe") {
    config.declines_after = 1;
    lwload::ggml::Model model = lwload::ggml::load(lwload::open_manifest(path), fake::device(config));
    const lwload::Plan& plan = model.weights().plan();
    CHECK(plan.count(lwload::Placement::direct) == 2);
    CHECK(contains(plan.tensors[0].reason, "declined buffer_from_host_ptr"));
    CHECK(fake::counts().import_calls == 2);  // the probe, then the one region
    CHECK(bytes_of(model.tensor("b")) == b.bytes);
  }
}

TEST_CASE("20,000 tensors load on a device that allows 4096 live buffers") {
  std::vector<Entry> entries;
  for (int i = 0; i < 20000; ++i) entries.push_back(f32("t" + std::to_string(i), 4, static_cast<unsigned>(i)));
  const fs::path path = write_safetensors("many.safetensors", entries);
  fake::Config config;
  config.entry = fake::Config::Entry::none;
  config.max_live = 4096;
  config.max_buffer = 64 << 10;  // more than one buffer, each within the type's max size
  SUBCASE("direct") { config.host_buffers = true; }
  SUBCASE("staged") { config.host_buffers = false; }
  lwload::LoadOptions options;
  options.plan.staging_budget = 64 << 10;  // slots within the device's largest allocation too
  lwload::ggml::Model model = lwload::ggml::load(lwload::open_manifest(path), fake::device(config), options);
  const fake::Counts& counts = fake::counts();
  CHECK(counts.refused_allocations == 0);
  CHECK(counts.peak_live <= 4096);
  CHECK(counts.allocations >= 5);  // 20,000 × 32 bytes in buffers of 64 KiB
  MESSAGE(counts.allocations, " ggml buffers for ", entries.size(), " tensors");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    ggml_tensor* t = model.tensors()[i];
    REQUIRE(t != nullptr);
    if (bytes_of(t) != entries[i].bytes) FAIL_CHECK("tensor ", entries[i].name, " has other bytes");
  }
  // Each tensor in its own slice of a shared buffer, as its handle says.
  const auto place = lwload::ggml::place_of(model.weights().tensors()[1]);
  REQUIRE(place);
  CHECK(place->buffer == model.tensors()[1]->buffer);
  CHECK(static_cast<char*>(ggml_backend_buffer_get_base(place->buffer)) + place->offset == model.tensors()[1]->data);
}

TEST_CASE("lwload::load on a ggml device cuts its tensors from shared buffers too, without the plan's sizes") {
  std::vector<Entry> entries;
  for (int i = 0; i < 20000; ++i) entries.push_back(f32("u" + std::to_string(i), 4, static_cast<unsigned>(7 * i)));
  const fs::path path = write_safetensors("many-plain.safetensors", entries);
  fake::Config config;
  config.entry = fake::Config::Entry::none;
  config.max_live = 4096;
  config.host_buffers = false;
  const auto device = lwload::ggml::open_device(fake::device(config));
  lwload::Weights weights = lwload::load(lwload::open_manifest(path), *device);
  CHECK(fake::counts().refused_allocations == 0);
  CHECK(fake::counts().peak_live <= 2);  // 640,000 bytes: a 1 MiB buffer
  for (const lwload::TensorHandle& handle : weights.tensors()) {
    const auto place = lwload::ggml::place_of(handle);
    REQUIRE(place);
    std::vector<unsigned char> got(handle.bytes);
    handle.buffer->read_back(handle.offset, std::as_writable_bytes(std::span(got)));
    if (got != entries[handle.index].bytes) FAIL_CHECK("tensor ", handle.info->name, " has other bytes");
  }
}

TEST_CASE("imports meet the alignment a probe found and stay below the device's largest buffer") {
  // A device that wants 16 KiB-aligned pointers and sizes (minImportedHostPointerAlignment above a
  // page) and buffers of at most 256 KiB: 40 tensors of 32 KiB from a 16 KiB-aligned data start.
  std::vector<Entry> entries;
  for (int i = 0; i < 40; ++i) entries.push_back(f32("w" + std::to_string(i), 8192, static_cast<unsigned>(100 + i)));
  const fs::path path = write_safetensors("aligned.safetensors", entries, 16384);
  fake::Config config;
  config.import_alignment = 16384;
  config.max_buffer = 256 << 10;
  ggml_backend_dev_t dev = fake::device(config);
  const auto device = lwload::ggml::open_device(dev);
  CHECK(device->info().caps.import_host_ptr);
  CHECK(device->info().caps.import_alignment == 16384);
  CHECK(device->info().caps.size_multiple == 16384);
  CHECK(device->info().caps.max_alloc == 256 << 10);

  lwload::ggml::Model model = lwload::ggml::load(lwload::open_manifest(path), fake::device(config));
  const fake::Counts& counts = fake::counts();
  CHECK(counts.misaligned_imports == 2);  // the probe's 4 and 8 KiB tries; nothing of the model is asked misaligned
  CHECK(counts.oversized_imports == 0);
  const lwload::Plan& plan = model.weights().plan();
  CHECK(plan.regions.size() >= 5);  // 1.25 MiB in regions of at most 256 KiB
  // A region is imported where its mapping's address meets the alignment; where it does not (mmap
  // places a file mapping at any page), lwload declines it before the device is asked, and its
  // tensors load direct. Either way every byte is the file's.
  for (const lwload::ImportRegion& region : plan.regions)
    if (!region.imported())
      CHECK_MESSAGE(contains(region.declined, "not aligned to the import alignment of 16384"), region.declined);
  MESSAGE(plan.imported_regions(), " of ", plan.regions.size(), " regions imported");
  for (std::size_t i = 0; i < entries.size(); ++i) CHECK(bytes_of(model.tensors()[i]) == entries[i].bytes);
}
