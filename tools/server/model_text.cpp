#include "model_text.hpp"

#include "model/gguf/gguf_reader.hpp"

namespace bitnet::server {

result<model_text> read_model_text(const std::string& path) {
    // The tokenizer is metadata: the weights are not read here.
    auto file = model::gguf_file::open_metadata(path);
    if (!file)
        return file.error();
    auto vocab = model::read_tokenizer_vocab(*file);
    if (!vocab)
        return vocab.error();
    auto tok = model::tokenizer::create(std::move(*vocab));
    if (!tok)
        return tok.error();
    model_text out;
    out.text.tokenizer = std::make_shared<const model::tokenizer>(std::move(*tok));
    if (auto tmpl = file->get_string("tokenizer.chat_template")) {
        auto choice = model::recognise_chat_template(*tmpl);
        out.text.chat = choice.tmpl;
        out.chat_known = choice.known;
    }
    return out;
}

} // namespace bitnet::server
