// What the examples' command lines share: the walk over the arguments, and main's error handling
// (the program's name before the message; exit status 2 on bad usage, 1 on any other failure).
#pragma once

#include <exception>
#include <iostream>
#include <string>

#include "lwload/error.hpp"

namespace example {

// Calls `take(arg, value)` for each command-line argument; value() takes the option's value, the
// next argument (bad usage when the option is last).
template <typename Take>
void for_each_argument(int argc, char** argv, Take take) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    take(arg, [&]() -> std::string {
      if (i + 1 >= argc) lwload::fail(lwload::ErrorCode::usage, arg, " needs a value");
      return argv[++i];
    });
  }
}

// main's body: `run` gives the exit status, or throws.
template <typename Run>
int run_main(const char* program, Run run) {
  try {
    return run();
  } catch (const lwload::Error& error) {
    std::cerr << program << ": " << error.what() << "\n";
    return error.code() == lwload::ErrorCode::usage ? 2 : 1;
  } catch (const std::exception& error) {
    std::cerr << program << ": " << error.what() << "\n";
    return 1;
  }
}

}  // namespace example
