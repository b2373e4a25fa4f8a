// bitnet-cli subcommands: each registers its options on the CLI11 app and runs when selected.
#pragma once

#include <CLI/CLI.hpp>

namespace bitnet::cli {

/// `inspect FILE`: architecture, hyper-parameters, tensor table, tokenizer summary.
void add_inspect(CLI::App& app);
/// `verify FILE`: exit 0 when valid, 1 with one line per violation on stderr.
void add_verify(CLI::App& app);

} // namespace bitnet::cli
