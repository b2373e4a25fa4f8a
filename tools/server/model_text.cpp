#include "model_text.hpp"

#include "model/gguf/gguf_reader.hpp"

namespace bitnet::server {

result<model_text> read_model_text(const std::string& path,
                                   const model::chat_template_options& chat) {
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
    auto choice = model::load_chat_template(*file, *tok, chat);
    if (!choice)
        return choice.error();
    model_text out;
    out.text.tokenizer = std::make_shared<const model::tokenizer>(std::move(*tok));
    if (choice->formatter.is_builtin())
        out.text.chat = choice->formatter.builtin_form();
    else
        out.text.formatter = std::move(choice->formatter);
    out.chat_origin = std::move(choice->origin);
    out.chat_notice = std::move(choice->notice);
    return out;
}

} // namespace bitnet::server
