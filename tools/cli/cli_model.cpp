#include "cli_model.hpp"

#include "model/gguf/gguf_reader.hpp"

#include <iostream>

namespace bitnet::cli {

std::optional<model::tokenizer> open_tokenizer(const std::string& path) {
    auto file = model::gguf_file::open(path);
    if (!file) {
        std::cerr << path << ": " << file.error() << "\n";
        return std::nullopt;
    }
    auto vocab = model::read_tokenizer_vocab(*file);
    if (!vocab) {
        std::cerr << path << ": " << vocab.error() << "\n";
        return std::nullopt;
    }
    auto tok = model::tokenizer::create(std::move(*vocab));
    if (!tok) {
        std::cerr << path << ": " << tok.error() << "\n";
        return std::nullopt;
    }
    return std::move(*tok);
}

} // namespace bitnet::cli
