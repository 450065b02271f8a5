// Load options by name, spelled as the CLI spells them without "--" ("placement", "budget", "only",
// ...): the one parser behind both the lwload tool's options and the C API's
// lwload_load_options_set, so the two cannot drift apart.
#pragma once

#include "loading/layer.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lwload/loader.hpp"
#include "lwload/manifest.hpp"

namespace lwload {

// "64MiB", "2GiB", "4096", "1.5GiB" → bytes; throws Error(usage) naming `what` otherwise.
std::uint64_t parse_size(std::string_view text, std::string_view what);

// A switch's text: "1", "true", "yes" → true; "0", "false", "no" → false; anything else (an empty
// text, "on", "maybe") throws Error(usage) naming `what` (the option) and the text. The one spelling
// of a boolean for CLI flags (--verify=no), load and open options and the C API.
bool parse_switch(std::string_view text, std::string_view what);

// "a,b,,c" → {"a", "b", "c"}.
std::vector<std::string> split_names(std::string_view comma_separated);

// Sets the option `name` ("placement", "budget", "slots", "only", "io", "direct-io", "lazy",
// "io-threads"; a leading "--" is accepted) from its text. Switches ("direct-io", "lazy") take
// parse_switch's spellings. Throws Error(usage) naming the option for an unknown name or value.
void set_load_option(LoadOptions& options, std::string_view name, std::string_view value);

// The names set_load_option knows, in the order the help lists them.
std::span<const std::string_view> load_option_names() noexcept;

// The same for opening a manifest: "allow-outside-links" (a switch), "format" (a reader's name),
// "max-tensors" and "max-name-bytes" (the caps on what a header may ask for; sizes as above).
void set_open_option(OpenOptions& options, std::string_view name, std::string_view value);

}  // namespace lwload
