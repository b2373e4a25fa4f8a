// bitnet-cli subcommands: each registers its options on the CLI11 app and runs when selected.
#pragma once

#include <CLI/CLI.hpp>

namespace bitnet::cli {

/// `inspect FILE`: architecture, hyper-parameters, tensor table, tokenizer summary.
void add_inspect(CLI::App& app);
/// `verify FILE`: exit 0 when valid, 1 with one line per violation on stderr.
void add_verify(CLI::App& app);
/// `tokenize -m FILE --jsonl [--bos]` and `detokenize -m FILE --jsonl`: JSON lines in and out.
void add_tokenize(CLI::App& app);
/// `generate -m FILE -p TEXT | --prompt-ids 1,2,3 [-n N --temp T --seed S --threads T --json]`.
void add_generate(CLI::App& app);

} // namespace bitnet::cli
