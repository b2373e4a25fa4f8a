// Tokenizer metadata for synthetic models from a Hugging Face tokenizer.json.
#include "tools/model_synth.hpp"

namespace bitnet::tools {

result<synth_tokenizer> tokenizer_from_hf_json(const std::string& path) {
    return error(errc::unsupported, "tokenizer import is not wired yet: " + path);
}

} // namespace bitnet::tools
