// Opening what a bitnet-cli subcommand needs from a model file, reporting failures the same way
// everywhere: one line on stderr and exit status 1.
#pragma once

#include "model/tokenizer/tokenizer.hpp"

#include <optional>
#include <string>

namespace bitnet::cli {

/// The tokenizer of the GGUF at `path` (no weights are read), or nullopt after printing why.
[[nodiscard]] std::optional<model::tokenizer> open_tokenizer(const std::string& path);

} // namespace bitnet::cli
