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
    out.tokenizer = std::make_shared<const model::tokenizer>(std::move(*tok));
    if (auto tmpl = file->get_string("tokenizer.chat_template")) {
        auto choice = http::recognise_chat_template(*tmpl);
        out.chat = choice.tmpl;
        out.chat_known = choice.known;
    }
    return out;
}

void text_registry::set(const std::string& alias, std::shared_ptr<const model_text> text) {
    std::unique_lock lock(mutex_);
    if (text)
        texts_[alias] = std::move(text);
    else
        texts_.erase(alias);
}

std::shared_ptr<const model_text> text_registry::find(std::string_view alias) const {
    std::shared_lock lock(mutex_);
    auto it = texts_.find(alias);
    return it == texts_.end() ? nullptr : it->second;
}

http::text_codec make_text_codec(std::shared_ptr<const text_registry> models) {
    auto find = [models](std::string_view alias) -> result<std::shared_ptr<const model_text>> {
        auto t = models->find(alias);
        if (!t || !t->tokenizer)
            return error{errc::not_found, "no model '" + std::string(alias) + "'"};
        return t;
    };
    http::text_codec c;
    c.tokenize = [find](std::string_view alias, std::string_view text, bool add_bos,
                        bool parse_special) -> result<std::vector<std::int32_t>> {
        auto m = find(alias);
        if (!m)
            return m.error();
        const auto& tok = *(*m)->tokenizer;
        model::encode_options opt;
        opt.add_bos = add_bos && tok.add_bos() && tok.bos().has_value();
        opt.parse_special = parse_special;
        return tok.encode(text, opt);
    };
    c.detokenize = [find](std::string_view alias,
                          std::span<const std::int32_t> ids) -> result<std::string> {
        auto m = find(alias);
        if (!m)
            return m.error();
        const auto& tok = *(*m)->tokenizer;
        for (auto id : ids)
            if (id < 0 || id >= tok.n_vocab())
                return error{errc::invalid_argument, "token id " + std::to_string(id) +
                                                         " is outside the vocabulary (0.." +
                                                         std::to_string(tok.n_vocab() - 1) + ")"};
        return tok.decode(ids);
    };
    c.piece = [find](std::string_view alias, std::int32_t id) {
        auto m = find(alias);
        if (!m)
            return std::string{};
        // Unused and reserved tokens have no bytes: show their vocabulary name instead.
        const auto& tok = *(*m)->tokenizer;
        auto piece = tok.token_to_piece(id, true);
        return std::string(piece.empty() ? tok.token_text(id) : piece);
    };
    c.chat_template_of = [find](std::string_view alias) {
        auto m = find(alias);
        return m ? (*m)->chat : http::chat_template::bitnet;
    };
    return c;
}

} // namespace bitnet::server
