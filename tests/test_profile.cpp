// The memory profiler and the tools built on it: /proc/self/status parsing and sampling (checked
// against a deliberate allocation: memory, not timing), the contract's bound for each placement,
// the JSON/CSV/SVG writers, `lwload synth`, and profiled loads on the host and null devices
// through the library and the CLI (`lwload profile`, `lwload bench`).
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <boost/json.hpp>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/loader.hpp"
#include "lwload/manifest.hpp"
#include "lwload/profile.hpp"
#include "support/test_support.hpp"
#include "synth/synth.hpp"

using namespace lwload;
using namespace lwload::profile;

namespace {

constexpr std::uint64_t MiB = 1ull << 20;

const char* lwload_exe() { return std::getenv("LWLOAD_EXE"); }

// An anonymous mapping touched page by page, unmapped on destruction.
class TouchedMemory {
 public:
  explicit TouchedMemory(std::size_t bytes) : bytes_(bytes) {
    ptr_ = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(ptr_ != MAP_FAILED);
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    for (std::size_t i = 0; i < bytes; i += page) static_cast<volatile char*>(ptr_)[i] = 1;
  }
  ~TouchedMemory() { ::munmap(ptr_, bytes_); }
  TouchedMemory(const TouchedMemory&) = delete;
  TouchedMemory& operator=(const TouchedMemory&) = delete;

 private:
  void* ptr_;
  std::size_t bytes_;
};

// Checks that every element opened is closed in order (self-closing and <?...?> allowed):
// enough to say the SVG is well-formed XML for a viewer. Returns the element names seen.
std::vector<std::string> check_balanced_tags(const std::string& xml) {
  std::vector<std::string> stack, seen;
  std::size_t at = 0;
  while ((at = xml.find('<', at)) != std::string::npos) {
    const std::size_t end = xml.find('>', at);
    REQUIRE(end != std::string::npos);
    const std::string tag = xml.substr(at + 1, end - at - 1);
    at = end + 1;
    if (tag.starts_with("?") || tag.starts_with("!")) continue;
    if (tag.starts_with("/")) {
      REQUIRE_FALSE(stack.empty());
      CHECK(stack.back() == tag.substr(1));
      stack.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
    seen.push_back(name);
    if (!tag.ends_with("/")) stack.push_back(name);
  }
  CHECK(stack.empty());
  return seen;
}

Report sample_report() {
  Report r;
  r.model = "weights & <biases>.safetensors";
  r.format = "safetensors";
  r.device = "host:0 (CPU)";
  r.memory = "unified";
  r.placement = "direct";
  r.model_bytes = 100 * MiB;
  r.largest_tensor = 25 * MiB;
  r.load_ms = 40;
  r.inputs = {MemoryModel::unified, 100 * MiB, 25 * MiB, 0, 0, 100 * MiB, 0, true};
  for (int i = 0; i <= 20; ++i) {
    MemorySample s;
    s.ms = i * 2.0;
    s.anon = (20 + std::min(i, 10) * 10) * MiB;
    s.file = 5 * MiB;
    s.shmem = 1 * MiB;
    s.rss = s.anon + s.file + s.shmem;
    s.hwm = s.rss;
    r.samples.push_back(s);
  }
  r.phases = {{"allocate", 0, 3}, {"read", 3, 38}};
  r.in_flight = {{4, 16 * MiB}, {20, 0}};
  MemorySample peak = r.samples.back();
  finish_report(r, r.samples.front(), peak, false);
  return r;
}

std::filesystem::path synth_model(const test::TempDir& dir, const std::string& name, std::string format,
                                  std::uint64_t bytes, std::uint32_t tensors, std::uint64_t alignment) {
  synth::SynthSpec spec;
  spec.format = std::move(format);
  spec.total_bytes = bytes;
  spec.tensor_count = tensors;
  spec.alignment = alignment;
  const auto path = dir / name;
  synth::write_model(path, spec);
  return path;
}

// The number in `name="..."` on the SVG's root element.
double svg_attribute(const std::string& svg, const std::string& name) {
  const auto root = svg.find("<svg ");
  REQUIRE(root != std::string::npos);
  const auto at = svg.find(" " + name + "=\"", root);
  REQUIRE(at != std::string::npos);
  return std::stod(svg.substr(at + name.size() + 3));
}

// Renders `svg_path` with rsvg-convert (librsvg2-bin) and checks the
// PNG has the SVG's size, is not blank, and shows every colour in `colours` (RRGGBB). False when
// rsvg-convert is not installed (the check is skipped with a message).
bool check_renders(const std::filesystem::path& svg_path, const std::vector<std::string>& colours) {
  const char* rsvg = std::getenv("LWLOAD_RSVG_CONVERT");
  const char* summary = std::getenv("LWLOAD_PNG_SUMMARY");
  if (!test::available("rsvg", rsvg && summary,
                       "rsvg-convert not found (scripts/deps/install.sh installs librsvg2-bin): no render check"))
    return false;
  const auto png = svg_path.string() + ".png";
  REQUIRE(test::run_command(std::string(rsvg) + " " + svg_path.string() + " -o " + png) == 0);
  // The PNG header (IHDR: width and height, big-endian, at bytes 16 and 20) as written.
  const auto head = test::read_range(png, 0, 24);
  const auto be32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = v << 8 | std::to_integer<std::uint32_t>(head[at + i]);
    return v;
  };
  CHECK(std::to_integer<int>(head[1]) == 'P');
  const auto bytes = test::read_file(svg_path);
  const std::string svg(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  CHECK(be32(16) == static_cast<std::uint32_t>(std::lround(svg_attribute(svg, "width"))));
  CHECK(be32(20) == static_cast<std::uint32_t>(std::lround(svg_attribute(svg, "height"))));
  std::string command = std::string("/usr/bin/python3 ") + summary + " " + png;
  for (const auto& c : colours) command += " " + c;
  std::string out;
  REQUIRE(test::run_command(command, &out) == 0);
  INFO(out);
  const auto json = boost::json::parse(out);
  CHECK(json.at("width").to_number<std::uint32_t>() == be32(16));
  CHECK(json.at("colours").to_number<std::uint64_t>() > 16);  // not blank: text, lines, shading
  CHECK(json.at("present").as_array().size() == colours.size());
  return true;
}

}  // namespace

TEST_CASE("parse_status reads the four resident-set fields in bytes") {
  const std::string text =
      "Name:\tlwload\nVmPeak:\t  10000 kB\nVmHWM:\t    4000 kB\nVmRSS:\t    3000 kB\n"
      "RssAnon:\t    1000 kB\nRssFile:\t    1500 kB\nRssShmem:\t     500 kB\nVmData:\t 99 kB\n";
  MemorySample s;
  REQUIRE(parse_status(text, s));
  CHECK(s.rss == 3000 * 1024);
  CHECK(s.anon == 1000 * 1024);
  CHECK(s.file == 1500 * 1024);
  CHECK(s.shmem == 500 * 1024);
  CHECK(s.hwm == 4000 * 1024);

  // A prefix of another key ("VmRSSx") is not the field; a missing field fails the parse.
  MemorySample t;
  CHECK_FALSE(parse_status("VmRSSx:\t 1 kB\nRssAnon:\t 1 kB\nRssFile:\t 1 kB\nRssShmem:\t 1 kB\n", t));
  CHECK_FALSE(parse_status("VmRSS:\t 1 kB\nRssAnon:\t 1 kB\nRssFile:\t 1 kB\n", t));
  CHECK_FALSE(parse_status("VmRSS:\t kB\nRssAnon:\t 1 kB\nRssFile:\t 1 kB\nRssShmem:\t 1 kB\n", t));
}

TEST_CASE("this process's status is consistent: rss = anon + file + shmem") {
  const MemorySample s = read_memory_now();
  CHECK(s.rss > 0);
  CHECK(s.anon > 0);
  CHECK(s.rss == s.anon + s.file + s.shmem);
  CHECK(s.hwm >= s.rss);
}

TEST_CASE("the sampler sees a 64 MiB anonymous allocation touched page by page") {
  MemorySampler sampler(std::chrono::milliseconds(1));
  sampler.start();
  const MemorySample before = read_memory_now();
  {
    TouchedMemory block(64 * MiB);
    const MemorySample during = read_memory_now();
    CHECK(during.anon >= before.anon + 60 * MiB);
    sampler.stop();  // its last reading is taken while the block is held
  }
  CHECK(sampler.peak().anon >= before.anon + 60 * MiB);
  CHECK(sampler.peak().rss >= before.rss + 60 * MiB);
  const auto samples = sampler.samples();
  REQUIRE(samples.size() >= 2);  // the first (start) and last (stop) readings at least
  for (std::size_t i = 1; i < samples.size(); ++i) CHECK(samples[i].ms >= samples[i - 1].ms);
  CHECK(samples.back().anon >= before.anon + 60 * MiB);
}

TEST_CASE("measure() reports a body's growth; the kernel's high-water mark catches it exactly") {
  // The block is freed before the sampler stops, so only VmHWM is sure to have seen it.
  const Measurement m = measure([] { TouchedMemory block(64 * MiB); });
  if (!m.hwm_exact) {
    MESSAGE("/proc/self/clear_refs not writable: the kernel high-water mark is not usable here");
    return;
  }
  CHECK(m.growth().rss >= 60 * MiB);
  CHECK(m.seconds > 0);
}

TEST_CASE("a sampler with a small buffer merges readings and keeps time order and peaks") {
  MemorySampler sampler(std::chrono::microseconds(100), 16);
  sampler.start();
  {
    TouchedMemory block(8 * MiB);
    sampler.stop();
  }
  const auto samples = sampler.samples();
  CHECK(samples.size() <= 16);
  CHECK(sampler.readings() >= samples.size());
  std::uint64_t max_rss = 0;
  for (const auto& s : samples) max_rss = std::max(max_rss, s.rss);
  CHECK(max_rss == sampler.peak().rss);  // merging keeps the highest reading
}

TEST_CASE("contract bound for each placement") {
  const MemoryFigures base{100 * MiB, 60 * MiB, 40 * MiB, 0};

  SUBCASE("unified zero_copy: model + largest + 16 MiB + page rounding, anonymous growth <= 16 MiB") {
    ContractInputs in{MemoryModel::unified, 1024 * MiB, 256 * MiB, 0, 1024 * MiB, 0, 0, true, 8192, 1024 * MiB, false};
    const Contract ok = evaluate_contract(in, base, {1124 * MiB, 70 * MiB, 1054 * MiB, 0});
    CHECK(ok.bound == 100 * MiB + 1024 * MiB + 256 * MiB + 16 * MiB + 8192);
    REQUIRE(ok.anon_growth_limit);
    CHECK(*ok.anon_growth_limit == 16 * MiB);
    CHECK(ok.held);
    // Same total, but the growth is anonymous: copies, not mapped pages.
    const Contract copied = evaluate_contract(in, base, {1124 * MiB, 80 * MiB, 1044 * MiB, 0});
    CHECK_FALSE(copied.held);
    CHECK(copied.verdict.find("anonymous growth") != std::string::npos);
    // Ready means resident: a load that left most pages on disk did not keep the promise...
    in.resident_bytes = 512 * MiB;
    const Contract cold = evaluate_contract(in, base, {1124 * MiB, 70 * MiB, 1054 * MiB, 0});
    CHECK_FALSE(cold.held);
    CHECK(cold.verdict.find("resident 512.0 MiB < 90% of 1024.0 MiB") != std::string::npos);
    // ...unless the caller asked for lazy.
    in.lazy = true;
    CHECK(evaluate_contract(in, base, {1124 * MiB, 70 * MiB, 1054 * MiB, 0}).held);
  }
  SUBCASE("a tiny real model is not 'violated' by page granularity") {
    ContractInputs in{MemoryModel::unified, 30 * 1024, 8 * 1024, 0, 30 * 1024, 0, 0, true, 4096, 30 * 1024, false};
    CHECK(evaluate_contract(in, base, {100 * MiB + 400 * 1024, 60 * MiB, 40 * MiB + 400 * 1024, 0}).held);
  }
  SUBCASE("unified direct: model + largest tensor, no anonymous limit") {
    ContractInputs in{MemoryModel::unified, 1024 * MiB, 256 * MiB, 0, 0, 1024 * MiB, 0, true};
    const Contract c = evaluate_contract(in, base, {1300 * MiB, 1200 * MiB, 100 * MiB, 0});
    CHECK(c.bound == 1396 * MiB);
    CHECK_FALSE(c.anon_growth_limit);
    CHECK(c.held);
    CHECK_FALSE(evaluate_contract(in, base, {1397 * MiB, 0, 0, 0}).held);
  }
  SUBCASE("mixed zero_copy + direct: direct bytes may be anonymous") {
    ContractInputs in{MemoryModel::unified, 1024 * MiB, 256 * MiB, 0, 1000 * MiB, 24 * MiB, 0, true, 0,
                      1000 * MiB,           false};
    const Contract c = evaluate_contract(in, base, {1124 * MiB, 90 * MiB, 1034 * MiB, 0});
    REQUIRE(c.anon_growth_limit);
    CHECK(*c.anon_growth_limit == 40 * MiB);
    CHECK(c.held);
  }
  SUBCASE("discrete staged (null): budget + 16 MiB, independent of model size") {
    for (const std::uint64_t model : {256 * MiB, 2048 * MiB}) {
      ContractInputs in{MemoryModel::discrete, model, model / 8, 64 * MiB, 0, 0, model, false};
      const Contract c = evaluate_contract(in, base, {170 * MiB, 130 * MiB, 40 * MiB, 0});
      CHECK(c.bound == 100 * MiB + 64 * MiB + 16 * MiB);
      CHECK(c.held);
      CHECK_FALSE(evaluate_contract(in, base, {181 * MiB, 0, 0, 0}).held);
    }
  }
  SUBCASE("staged into buffers that live in this process (host, PoCL forced discrete)") {
    ContractInputs in{MemoryModel::discrete, 512 * MiB, 64 * MiB, 64 * MiB, 0, 0, 512 * MiB, true};
    const Contract c = evaluate_contract(in, base, {600 * MiB, 560 * MiB, 40 * MiB, 0});
    CHECK(c.bound == 100 * MiB + 64 * MiB + 16 * MiB + 512 * MiB);
    CHECK(c.held);
    CHECK(c.rule.find("buffers held in this process") != std::string::npos);
  }
  SUBCASE("a million tiny tensors: the allowance grows by lwload's bookkeeping per tensor") {
    ContractInputs in{MemoryModel::unified, 1000000, 1, 0, 1000000, 0, 0, true, 4096, 1000000, false, 1000000};
    const Contract c = evaluate_contract(in, base, {300 * MiB, 250 * MiB, 50 * MiB, 0});
    REQUIRE(c.anon_growth_limit);
    CHECK(*c.anon_growth_limit == 16 * MiB + 1000000 * kBookkeepingPerTensor);
    CHECK(c.rule.find("256 B per tensor") != std::string::npos);
    CHECK(c.held);
    in.tensor_count = 1000;  // the same growth from a thousand tensors is a leak, not bookkeeping
    CHECK_FALSE(evaluate_contract(in, base, {300 * MiB, 250 * MiB, 50 * MiB, 0}).held);
  }
  SUBCASE("staged on a unified device uses the staging rule") {
    ContractInputs in{MemoryModel::unified, 512 * MiB, 64 * MiB, 32 * MiB, 0, 0, 512 * MiB, true};
    CHECK(evaluate_contract(in, base, base).bound == 100 * MiB + 32 * MiB + 16 * MiB + 512 * MiB);
  }
}

TEST_CASE("growth clamps at zero when memory shrank below the baseline") {
  const MemoryFigures g = growth({10, 5, 5, 0}, {20, 2, 18, 0});
  CHECK(g.rss == 0);
  CHECK(g.anon == 3);
  CHECK(g.file == 0);
}

TEST_CASE("timeline closes phases and tensors, sorts bytes in flight") {
  const auto t0 = Clock::now();
  Timeline tl(t0);
  tl.phase_begin("allocate", t0);
  tl.phase_end("allocate", t0 + std::chrono::milliseconds(2));
  tl.phase_begin("read", t0 + std::chrono::milliseconds(2));
  tl.tensor_begin(3, 4096, t0 + std::chrono::milliseconds(3));
  tl.in_flight(8192, t0 + std::chrono::milliseconds(5));
  tl.in_flight(4096, t0 + std::chrono::milliseconds(4));
  tl.tensor_end(3, t0 + std::chrono::milliseconds(6));
  const auto phases = tl.phases(t0 + std::chrono::milliseconds(10));
  REQUIRE(phases.size() == 2);
  CHECK(phases[0].end_ms == doctest::Approx(2));
  CHECK(phases[1].end_ms == doctest::Approx(10));  // still open: closed at the end
  const auto tensors = tl.tensors(t0);
  REQUIRE(tensors.size() == 1);
  CHECK(tensors[0].end_ms == doctest::Approx(6));
  const auto points = tl.in_flight_points();
  REQUIRE(points.size() == 2);
  CHECK(points[0].ms < points[1].ms);
  CHECK(tl.max_in_flight() == 8192);
}

TEST_CASE("SVG timeline is well-formed and draws curves, levels, phases and a legend") {
  const Report r = sample_report();
  const std::string svg = report_to_svg(r);
  CHECK(svg.starts_with("<?xml"));
  const auto elements = check_balanced_tags(svg);
  CHECK(std::count(elements.begin(), elements.end(), "svg") == 1);
  CHECK(std::count(elements.begin(), elements.end(), "polyline") >= 1);
  CHECK(std::count(elements.begin(), elements.end(), "polygon") == 3);  // anon, file, shmem
  CHECK(svg.find("class=\"rss\"") != std::string::npos);
  CHECK(svg.find("class=\"in-flight\"") != std::string::npos);
  // Three reference levels: baseline, baseline + model, the bound.
  std::size_t levels = 0;
  for (std::size_t at = 0; (at = svg.find("class=\"level\"", at)) != std::string::npos; ++at) ++levels;
  CHECK(levels == 3);
  CHECK(svg.find("bound ") != std::string::npos);
  CHECK(svg.find("baseline + model") != std::string::npos);
  CHECK(svg.find("class=\"phase\"") != std::string::npos);
  CHECK(svg.find(">read<") != std::string::npos);
  CHECK(svg.find("resident memory (MiB)") != std::string::npos);
  CHECK(svg.find("HELD") != std::string::npos);
  // The model name is escaped, never raw markup.
  CHECK(svg.find("weights &amp; &lt;biases&gt;") != std::string::npos);
  CHECK(svg.find("<biases>") == std::string::npos);
}

// Whether /usr/bin/python3's XML parser (expat) reads `svg` as a well-formed document.
bool well_formed_xml(const std::string& svg, std::string* error) {
  test::TempDir dir;
  const auto path = dir / "t.svg";
  test::write_file(path, svg);
  return test::run_command(std::string(test::kPython) +
                               " -c \"import sys,xml.etree.ElementTree as E;E.parse(sys.argv[1])\" '" + path.string() +
                               "' 2>&1",
                           error) == 0;
}

TEST_CASE("SVG stays well-formed XML whatever bytes a model's name holds, clipped anywhere") {
  // Control bytes (which XML cannot hold even as references), invalid UTF-8 (stray, overlong,
  // past U+10FFFF, surrogate), U+FFFF, and 3- and 4-byte characters where the title is clipped
  // at 95 bytes: each offset 0-3 puts the cut at another byte of a character.
  const std::string hostile = "\x01\x1b[31m\x7f \xff \xc0\xaf \xf4\x90\x80\x80 \xed\xa0\x80 \xef\xbf\xbf x";
  std::vector<std::string> names{hostile, "model/" + hostile + ".gguf"};
  for (int offset = 0; offset < 4; ++offset) {
    std::string name(static_cast<std::size_t>(offset), 'a');
    for (int i = 0; i < 30; ++i) name += i % 2 ? "\xe4\xb8\xad" : "\xf0\x9f\x98\x80";  // 中, 😀
    names.push_back(name);
  }
  for (const std::string& name : names) {
    CAPTURE(name);
    Report r = sample_report();
    r.model = name;
    r.device = name;
    r.largest_tensor_name = name;
    r.phases.push_back({name, 1, 2});
    std::string error;
    CHECK_MESSAGE(well_formed_xml(report_to_svg(r), &error), error);
    CHECK_MESSAGE(well_formed_xml(comparison_to_svg({{name, r}, {"lwload", r}}), &error), error);
    // A clean name is clipped between characters, never into a replacement character.
    if (name != names[0] && name != names[1]) CHECK(report_to_svg(r).find("\xef\xbf\xbd") == std::string::npos);
  }
  // Control bytes are shown as the CLI prints them, never dropped.
  Report r = sample_report();
  r.model =
      "a\x01"
      "b";
  CHECK(report_to_svg(r).find("a\\x01b") != std::string::npos);
}

TEST_CASE("JSON and CSV reports carry the figures and the timeline") {
  const Report r = sample_report();
  const auto json = boost::json::parse(report_to_json(r)).as_object();
  CHECK(json.at("model_bytes").to_number<std::uint64_t>() == 100 * MiB);
  CHECK(json.at("baseline").at("rss").to_number<std::uint64_t>() == r.baseline.rss);
  CHECK(json.at("growth").at("anon").to_number<std::uint64_t>() == 100 * MiB);
  CHECK(json.at("contract").at("held").as_bool() == r.contract.held);
  CHECK(json.at("contract").at("bound").to_number<std::uint64_t>() == r.contract.bound);
  CHECK(json.at("samples").at("ms").as_array().size() == r.samples.size());
  CHECK(json.at("phases").as_array().size() == 2);

  const std::string csv = report_to_csv(r);
  CHECK(csv.starts_with("ms,rss,anon,file,shmem,in_flight\n"));
  CHECK(std::count(csv.begin(), csv.end(), '\n') == static_cast<long>(r.samples.size() + 1));
  // At 4 ms 16 MiB were in flight; by 20 ms none.
  CHECK(csv.find("\n4.000,") != std::string::npos);
  CHECK(csv.find(std::to_string(16 * MiB) + "\n6.000") != std::string::npos);
}

TEST_CASE("lwload synth writes models open_manifest reads with the requested count and alignment") {
  const char* exe = lwload_exe();
  if (!exe) {
    (void)lwload::test::have_exe();  // reports the skip; a failure under LWLOAD_REQUIRE=exe
    return;
  }
  test::TempDir dir;
  struct Case {
    std::string format;
    std::uint64_t alignment;
    std::uint32_t tensors;
    std::string dtype;
  };
  for (const Case& c : {Case{"safetensors", 4096, 6, "F32"}, Case{"safetensors", 0, 5, "F16"},
                        Case{"gguf", 64, 7, "Q8_0"}, Case{"gguf", 4096, 3, "U8"}}) {
    CAPTURE(c.format);
    CAPTURE(c.alignment);
    const auto out = dir / ("m." + c.format);
    std::string text;
    const std::string cmd = std::string(exe) + " synth " + out.string() + " --format " + c.format +
                            " --size 1MiB --tensors " + std::to_string(c.tensors) + " --alignment " +
                            std::to_string(c.alignment) + " --dtype " + c.dtype + " --seed 7 --json";
    if (c.format == "gguf" && c.dtype == "U8") {
      CHECK(test::run_command(cmd + " 2>/dev/null") == 2);  // GGUF has no U8 type: bad usage
      continue;
    }
    REQUIRE(test::run_command(cmd, &text) == 0);
    const auto summary = boost::json::parse(text).as_object();
    CHECK(summary.at("tensors").to_number<std::uint64_t>() == c.tensors);
    const Manifest m = open_manifest(out);
    CHECK(m.format == c.format);
    REQUIRE(m.tensors.size() == c.tensors);
    CHECK(dtype_name(m.tensors[0].dtype) == c.dtype);
    CHECK(m.total_bytes() <= 1 * MiB);
    CHECK(m.total_bytes() > 900 * 1024);
    bool all_aligned = true, any_misaligned = false;
    for (const auto& t : m.tensors) {
      REQUIRE(t.pieces.size() == 1);
      if (c.alignment) all_aligned = all_aligned && t.pieces[0].offset % c.alignment == 0;
      any_misaligned = any_misaligned || t.pieces[0].offset % 4096 != 0;
      // Contents are the seed's deterministic bytes.
      std::vector<std::byte> expected(64);
      synth::expected_bytes(7, static_cast<std::uint32_t>(&t - m.tensors.data()), 0, expected);
      CHECK(test::read_range(out, t.pieces[0].offset, 64) == expected);
    }
    CHECK(all_aligned);
    if (c.alignment == 0) CHECK(any_misaligned);  // packed: offsets fall where they fall
  }
  CHECK(test::run_command(std::string(exe) + " synth " + (dir / "x").string() + " --alignment 3000 2>/dev/null") == 2);
  CHECK(test::run_command(std::string(exe) + " synth " + (dir / "x").string() + " --format onnx 2>/dev/null") == 2);
}

TEST_CASE("lwload synth --layout: packed is what real writers produce, aligned puts tensors on pages") {
  const char* exe = lwload_exe();
  if (!exe) {
    (void)lwload::test::have_exe();  // reports the skip; a failure under LWLOAD_REQUIRE=exe
    return;
  }
  test::TempDir dir;
  const std::string synth = std::string(exe) + " synth ";
  // Packed safetensors: the header is padded to 8, tensors follow each other with no gap.
  const auto st = dir / "p.safetensors";
  REQUIRE(test::run_command(synth + st.string() + " --layout packed --size 1MiB --tensors 5 >/dev/null") == 0);
  const auto header_len = test::read_range(st, 0, 8);
  std::uint64_t json_len = 0;
  std::memcpy(&json_len, header_len.data(), 8);
  CHECK(json_len % 8 == 0);
  const Manifest packed = open_manifest(st);
  REQUIRE(packed.tensors.size() == 5);
  CHECK(packed.tensors[0].pieces[0].offset == 8 + json_len);
  bool any_off_page = false;
  for (std::size_t i = 1; i < packed.tensors.size(); ++i) {
    const auto& prev = packed.tensors[i - 1].pieces[0];
    CHECK(packed.tensors[i].pieces[0].offset == prev.offset + prev.length);
    any_off_page = any_off_page || packed.tensors[i].pieces[0].offset % 4096 != 0;
  }
  CHECK(any_off_page);
  // Packed is the default; a packed GGUF is at llama.cpp's alignment of 32, not on pages.
  const auto gg = dir / "p.gguf";
  std::string text;
  REQUIRE(test::run_command(synth + gg.string() + " --format gguf --size 1MiB --tensors 3 --json", &text) == 0);
  CHECK(boost::json::parse(text).at("alignment").to_number<std::uint64_t>() == 32);
  CHECK(boost::json::parse(text).at("layout").as_string() == "packed");
  for (const auto& t : open_manifest(gg).tensors) CHECK(t.pieces[0].offset % 32 == 0);
  // Aligned: every tensor on a page, in both formats.
  for (const char* format : {"safetensors", "gguf"}) {
    CAPTURE(format);
    const auto out = dir / (std::string("a.") + format);
    text.clear();
    REQUIRE(test::run_command(
                synth + out.string() + " --layout aligned --format " + format + " --size 1MiB --tensors 3 --json",
                &text) == 0);
    CHECK(boost::json::parse(text).at("layout").as_string() == "aligned");
    for (const auto& t : open_manifest(out).tensors) CHECK(t.pieces[0].offset % 4096 == 0);
  }
  // A layout and an alignment that contradict each other, or an unknown layout, are usage errors.
  CHECK(test::run_command(synth + st.string() + " --layout packed --alignment 4096 2>/dev/null") == 2);
  CHECK(test::run_command(synth + st.string() + " --layout aligned --alignment 0 2>/dev/null") == 2);
  CHECK(test::run_command(synth + st.string() + " --layout sideways 2>/dev/null") == 2);
}

TEST_CASE("profiled loads on host and null hold their contracts") {
  test::TempDir dir;
  const auto model = synth_model(dir, "m.safetensors", "safetensors", 24 * MiB, 6, 4096);
  const Manifest manifest = open_manifest(model);

  struct Case {
    const char* device;
    std::optional<Placement> placement;
    const char* expect;
  };
  for (const Case& c : {Case{"host", Placement::zero_copy, "zero_copy"}, Case{"host", Placement::direct, "direct"},
                        Case{"host", Placement::staged, "staged"}, Case{"null", std::nullopt, "staged"}}) {
    CAPTURE(c.device);
    CAPTURE(c.expect);
    const auto device = open_device(c.device);
    ProfileOptions options;
    options.load.plan.force = c.placement;
    options.load.plan.staging_budget = 8 * MiB;
    const Report r = profile_load(manifest, *device, options);
    CHECK(r.placement == c.expect);
    CHECK(r.model_bytes == manifest.total_bytes());
    CHECK(r.largest_tensor == manifest.largest_tensor_bytes());
    CHECK(r.tensor_count == 6);
    CHECK(r.samples.size() >= 2);
    CHECK(r.peak.rss >= r.baseline.rss);
    CHECK(r.contract.held);
    INFO(r.contract.verdict);
    if (std::string(c.expect) == "zero_copy") REQUIRE(r.contract.anon_growth_limit);
    if (std::string(c.device) == "null") {
      CHECK(r.contract.bound == r.baseline.rss + 8 * MiB + kFixedOverhead + 6 * kBookkeepingPerTensor);
      CHECK_FALSE(r.phases.empty());
    }
    if (std::string(c.expect) == "direct") CHECK(r.growth.anon >= r.model_bytes / 2);  // it really copied
  }
}

TEST_CASE("every real file in testdata loads zero_copy on the host, verifies, and holds its contract") {
  const auto models = test::real_model_files();
  CHECK(models.size() >= 15);
  const auto device = open_device("host");
  for (const auto& path : models) {
    CAPTURE(path.string());
    const Manifest manifest = open_manifest(path);
    ProfileOptions options;
    options.verify = true;  // throws on any difference from the file
    const Report r = profile_load(manifest, *device, options);
    CHECK(r.inputs.direct_bytes == 0);
    CHECK(r.inputs.staged_bytes == 0);
    CHECK(r.inputs.zero_copy_bytes == r.model_bytes);
    CHECK_MESSAGE(r.contract.held, r.contract.verdict);
  }
}

TEST_CASE("two processes mapping one model zero_copy share its pages: each one's PSS is about half") {
  if (!read_pss_now()) {
    MESSAGE("skipped: no /proc/self/smaps_rollup");
    return;
  }
  test::TempDir dir;
  const auto model = synth_model(dir, "s.safetensors", "safetensors", 64 * MiB, 8, 0);
  const Manifest manifest = open_manifest(model);
  int ready[2], done[2];
  REQUIRE(::pipe(ready) == 0);
  REQUIRE(::pipe(done) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // the other process: load, say so, hold until told
    const auto device = open_device("host");
    const Weights w = load(manifest, *device);
    char c = 'r';
    (void)!::write(ready[1], &c, 1);
    (void)!::read(done[0], &c, 1);
    ::_exit(0);
  }
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  const auto device = open_device("host");
  ProfileOptions options;
  const Report r = profile_load(manifest, *device, options);
  c = 'd';
  (void)!::write(done[1], &c, 1);
  int status = 0;
  ::waitpid(child, &status, 0);
  for (int fd : {ready[0], ready[1], done[0], done[1]}) ::close(fd);
  REQUIRE(r.pss_baseline);
  REQUIRE(r.pss_loaded);
  const double share = static_cast<double>(r.pss_loaded->pss_file - r.pss_baseline->pss_file) /
                       static_cast<double>(manifest.total_bytes());
  MESSAGE("second process's PSS share of the model: ", share);
  // About half. Wide bounds, because under memory pressure the kernel may evict some of the pages
  // and only one process faults them back (those count whole for it until the other touches
  // them); what must not happen is a private copy (share 1) or no mapping at all (share 0).
  CHECK(share > 0.25);  // it did map the model...
  CHECK(share < 0.75);  // ...and pays about half: the pages are the other process's too
  CHECK(r.growth.file >= manifest.total_bytes() * 9 / 10);  // RSS counts them whole
}

TEST_CASE("lwload profile prints the verdict and writes SVG, JSON and CSV") {
  const char* exe = lwload_exe();
  if (!exe) {
    (void)lwload::test::have_exe();  // reports the skip; a failure under LWLOAD_REQUIRE=exe
    return;
  }
  test::TempDir dir;
  const auto model = synth_model(dir, "m.gguf", "gguf", 16 * MiB, 4, 4096);
  std::string out;
  const std::string cmd = std::string(exe) + " profile " + model.string() + " --device host --placement direct" +
                          " --svg " + (dir / "t.svg").string() + " --json " + (dir / "t.json").string() + " --csv " +
                          (dir / "t.csv").string() + " 2>/dev/null";
  REQUIRE(test::run_command(cmd, &out) == 0);
  CHECK(out.find("HELD") != std::string::npos);
  CHECK(out.find("peak - baseline") != std::string::npos);
  CHECK(out.find("largest tensor") != std::string::npos);
  const auto svg = test::read_file(dir / "t.svg");
  check_balanced_tags(std::string(reinterpret_cast<const char*>(svg.data()), svg.size()));
  const auto json_bytes = test::read_file(dir / "t.json");
  const auto json =
      boost::json::parse(std::string(reinterpret_cast<const char*>(json_bytes.data()), json_bytes.size()));
  CHECK(json.at("placement").as_string() == "direct");
  CHECK(json.at("contract").at("held").as_bool());
  CHECK(test::read_file(dir / "t.csv").size() > 40);

  // Staged on null with a tiny budget also holds; a bad option is a usage error.
  REQUIRE(test::run_command(std::string(exe) + " profile " + model.string() + " --device null --budget 4MiB", &out) ==
          0);
  CHECK(out.find("discrete") != std::string::npos);
  CHECK(test::run_command(std::string(exe) + " profile " + model.string() + " --memory sideways 2>/dev/null") == 2);
}

TEST_CASE("lwload profile --compare naive: each loader in its own process, both series, one SVG") {
  const char* exe = lwload_exe();
  if (!exe) {
    (void)lwload::test::have_exe();  // reports the skip; a failure under LWLOAD_REQUIRE=exe
    return;
  }
  test::TempDir dir;
  // Packed, as real writers produce: the layout the README's demo compares on.
  const auto model = synth_model(dir, "m.safetensors", "safetensors", 32 * MiB, 8, 0);
  const auto svg_path = dir / "c.svg";
  std::string out;
  const int status =
      test::run_command(std::string(exe) + " profile " + model.string() + " --device host --compare naive --svg " +
                            svg_path.string() + " --json " + (dir / "c.json").string() + " 2>/dev/null",
                        &out);
  CHECK(status == 0);  // lwload's contract held (the naive one is expected not to)
  const auto bytes = test::read_file(dir / "c.json");
  const auto json = boost::json::parse(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  const auto& series = json.at("series").as_array();
  REQUIRE(series.size() == 2);
  CHECK(series[0].at("label").as_string() == "naive");
  CHECK(std::string(series[1].at("label").as_string()).starts_with("lwload "));
  const std::uint64_t model_bytes = open_manifest(model).total_bytes();
  for (const auto& s : series) {
    const auto& report = s.at("report");
    CAPTURE(boost::json::serialize(s.at("label")));
    CHECK(report.at("model_bytes").to_number<std::uint64_t>() == model_bytes);
    CHECK(report.at("samples").at("ms").as_array().size() >= 2);  // every series carries its samples
    CHECK(report.at("load_ms").to_number<double>() > 0);
  }
  // The naive loader held the whole file and a copy of every tensor: at least the model in
  // anonymous memory (read at its ready point, so no sample timing decides it).
  const auto& naive = series[0].at("report");
  CHECK(naive.at("growth").at("anon").to_number<std::uint64_t>() >= model_bytes);
  CHECK(naive.at("placement").as_string() == "naive");
  CHECK_FALSE(naive.at("contract").at("held").as_bool());
  CHECK(series[1].at("report").at("contract").at("held").as_bool());
  // The summary: a line per loader, the ratios, the one line to remember.
  CHECK(out.find("naive / lwload") != std::string::npos);
  CHECK(out.find("in short: naive: peak +") != std::string::npos);

  // The SVG: well-formed, every loader in the legend and labelled on its curves, phases shaded.
  const auto svg_bytes = test::read_file(svg_path);
  const std::string svg(reinterpret_cast<const char*>(svg_bytes.data()), svg_bytes.size());
  check_balanced_tags(svg);
  CHECK(svg.find("naive: +") != std::string::npos);  // a peak label on the naive curve
  CHECK(svg.find(std::string(series[1].at("label").as_string()) + ": +") != std::string::npos);
  CHECK(svg.find("class=\"phases\"") != std::string::npos);
  CHECK(svg.find("MiB above the baseline") != std::string::npos);
  check_renders(svg_path, {"d62728", "1f77b4"});  // both loaders' colours are on the picture

  // Several loaders at once; unknown ones and --csv (one loader's samples) are usage errors.
  REQUIRE(test::run_command(std::string(exe) + " profile " + model.string() + " --device host --compare naive,direct " +
                                "--placement zero-copy --json - 2>/dev/null",
                            &(out = "")) == 0);
  const auto three = boost::json::parse(out).at("series").as_array();
  REQUIRE(three.size() == 3);
  CHECK(three[1].at("report").at("placement").as_string() == "direct");
  CHECK(three[2].at("report").at("placement").as_string() == "zero_copy");
  CHECK(test::run_command(std::string(exe) + " profile " + model.string() + " --compare sideways 2>/dev/null") == 2);
  CHECK(test::run_command(std::string(exe) + " profile " + model.string() + " --compare naive --csv x 2>/dev/null") ==
        2);
}

TEST_CASE("the single-load SVG renders: its size, not blank") {
  test::TempDir dir;
  const auto path = dir / "r.svg";
  const std::string svg = report_to_svg(sample_report());
  test::write_file(path, svg);
  check_renders(path, {"000000"});  // the title's text (the bands are translucent: blended colours)
}

TEST_CASE("report_from_json reads back what report_to_json wrote") {
  const Report r = sample_report();
  const Report back = report_from_json(report_to_json(r));
  CHECK(back.model == r.model);
  CHECK(back.placement == r.placement);
  CHECK(back.model_bytes == r.model_bytes);
  CHECK(back.peak.anon == r.peak.anon);
  CHECK(back.growth.rss == r.growth.rss);
  CHECK(back.contract.held == r.contract.held);
  CHECK(back.contract.bound == r.contract.bound);
  REQUIRE(back.samples.size() == r.samples.size());
  CHECK(back.samples.back().anon == r.samples.back().anon);
  REQUIRE(back.phases.size() == r.phases.size());
  CHECK(back.phases[1].name == "read");
  CHECK_THROWS_AS(report_from_json("{\"model\": 1}"), Error);
  CHECK_THROWS_AS(report_from_json("[1, 2"), Error);
}

TEST_CASE("lwload bench runs every variant side by side") {
  const char* exe = lwload_exe();
  if (!exe) {
    (void)lwload::test::have_exe();  // reports the skip; a failure under LWLOAD_REQUIRE=exe
    return;
  }
  test::TempDir dir;
  const auto model = synth_model(dir, "m.safetensors", "safetensors", 8 * MiB, 4, 4096);
  for (const char* cache : {"", " --cold"}) {
    CAPTURE(cache);
    std::string out;
    REQUIRE(test::run_command(std::string(exe) + " bench " + model.string() + " --device host --reps 2 --json" + cache,
                              &out) == 0);
    const auto json = boost::json::parse(out).as_object();
    CHECK(json.at("model_bytes").to_number<std::uint64_t>() == 8 * MiB);
    std::vector<std::string> names;
    for (const auto& v : json.at("variants").as_array()) {
      names.emplace_back(v.at("name").as_string());
      if (const auto* err = v.as_object().if_contains("error")) {
        MESSAGE("variant not run: " << err->as_string());  // O_DIRECT refused by this file system
        continue;
      }
      CHECK(v.at("seconds").as_array().size() == 2);
      if (names.back() == "naive read+copy" && json.at("peak_from_kernel_hwm").as_bool())
        CHECK(v.at("peak_growth").to_number<std::uint64_t>() >= 12 * MiB);  // the file and (most of) a copy
      if (const auto* held = v.as_object().if_contains("contract_held")) CHECK(held->as_bool());
    }
    CHECK(names.front() == "naive read+copy");
    CHECK(std::find(names.begin(), names.end(), "host zero_copy") != names.end());
    CHECK(std::find(names.begin(), names.end(), "host direct") != names.end());
    CHECK(std::find(names.begin(), names.end(), "host staged") != names.end());
    if (cache[0]) CHECK(json.at("max_cached_after_eviction").to_number<double>() <= 0.01);
  }
}
