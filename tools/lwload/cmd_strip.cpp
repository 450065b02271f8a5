// lwload strip: an ONNX model's weightless graph (lwload/onnx.hpp) written to a file — every
// TensorProto keeps its name, data_type and dims, and the bytes of each constant of at least
// --min-bytes are referenced where they already are (the model file, or its external data file) as
// external_data, relative to the output's folder: the graph an engine builds before its weights
// arrive (WebNN's weightless graphs), which onnx.load reads (with its external data when the
// referenced files are beside it, as they are when the output is written beside the model).
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli.hpp"
#include "load_options.hpp"
#include "lwload/error.hpp"
#include "lwload/onnx.hpp"

namespace lwload::cli {

int cmd_strip(int argc, char** argv) {
  Args args("strip", "Writes an ONNX model's graph without its weights' bytes: each referenced where it is.", {"MODEL"},
            {{"--output", "GRAPH", "the weightless graph to write (.onnx)", "", "-o"},
             {"--min-bytes", "N", "constants under N bytes stay in the graph (shape inference reads them)", "1024"},
             links_option()});
  if (!args.parse(argc, argv)) return exit_ok;
  const std::string output = args.get("--output");
  if (output.empty()) fail(ErrorCode::usage, "strip: name the graph to write with -o GRAPH");
  const Manifest manifest = open_model(args);
  if (manifest.format != "onnx")
    fail(ErrorCode::usage, "strip: ", manifest.files[0].string(), " is ", manifest.format, ", not ONNX");
  const std::uint64_t min_bytes = args.get_size("--min-bytes");
  const std::filesystem::path folder = std::filesystem::absolute(output).parent_path();
  std::uint64_t referenced = 0, kept = 0;
  const WeightlessGraph graph =
      onnx_weightless_graph(manifest, [&](const OnnxConstant& c) -> std::optional<DataReference> {
        const TensorInfo& t = manifest.tensors[c.tensor];
        // Only bytes stored as the tensor's own elements, in one run, can be referenced as they are.
        if (t.encoding != Encoding::raw || t.pieces.size() != 1 || t.bytes < min_bytes) {
          kept += t.bytes;
          return std::nullopt;
        }
        referenced += t.bytes;
        const Piece& piece = t.pieces[0];
        const std::filesystem::path file = std::filesystem::absolute(manifest.files[piece.file]).lexically_normal();
        return DataReference{file.lexically_relative(folder).generic_string(), piece.offset};
      });
  std::ofstream out(output, std::ios::binary | std::ios::trunc);
  out.write(graph.model.data(), static_cast<std::streamsize>(graph.model.size()));
  out.close();
  if (!out) fail(ErrorCode::io, output, ": cannot write");
  std::cout << output << ": " << graph.model.size() << " bytes; " << graph.left_out.size() << " of "
            << graph.constants.size() << " constants referenced (" << format_bytes(referenced) << "), "
            << format_bytes(kept) << " kept in the graph\n";
  return exit_ok;
}

}  // namespace lwload::cli
