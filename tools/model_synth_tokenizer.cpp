// Tokenizer metadata for synthetic models from a Hugging Face tokenizer.json.
#include "model/tokenizer/tokenizer.hpp"
#include "tools/hf_tokenizer_import.hpp"
#include "tools/model_synth.hpp"

#include <filesystem>

namespace bitnet::tools {

result<synth_tokenizer> tokenizer_from_hf_json(const std::string& path) {
    // The config (BOS/EOS names, add_bos) sits beside the tokenizer: `tokenizer_config.json` in a
    // Hugging Face checkout, or `<name>_config.json` next to a renamed `<name>.json`.
    std::string config;
    if (path.size() > 5 && path.ends_with(".json")) {
        const std::string sibling = path.substr(0, path.size() - 5) + "_config.json";
        if (std::filesystem::exists(sibling))
            config = sibling;
    }
    auto vocab = import_hf_tokenizer_file(path, config);
    if (!vocab)
        return vocab.error();
    // Refuse a vocabulary the engine could not load later, with the tokenizer's own message.
    if (auto check = model::tokenizer::create(*vocab); !check)
        return check.error();
    synth_tokenizer out;
    out.n_vocab = static_cast<std::uint32_t>(vocab->tokens.size());
    out.kvs = model::tokenizer_vocab_to_gguf(*vocab);
    return out;
}

} // namespace bitnet::tools
