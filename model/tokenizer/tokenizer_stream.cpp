// token_stream: emit the longest prefix of complete characters; keep a valid unfinished tail.
#include "model/tokenizer/tokenizer_stream.hpp"

#include "model/tokenizer/unicode.hpp"

namespace bitnet::model {

namespace {
constexpr std::string_view replacement = "\xEF\xBF\xBD"; // U+FFFD
}

token_stream::token_stream(const tokenizer& tok, decode_options opt)
    : tok_(&tok)
    , opt_(opt) {}

std::string token_stream::push(std::int32_t id) {
    std::string_view piece = tok_->token_to_piece(id, opt_.render_special);
    if (piece.empty())
        return {};
    if (first_ && opt_.strip_leading_space && tok_->kind() == tokenizer_kind::spm &&
        piece.front() == ' ')
        piece.remove_prefix(1);
    first_ = false;
    pending_ += piece;

    std::string out;
    std::size_t i = 0;
    while (i < pending_.size()) {
        std::size_t n = 0;
        const utf8_prefix k = classify_utf8_prefix(std::string_view(pending_).substr(i), n);
        if (k == utf8_prefix::incomplete)
            break; // wait for the next token
        if (k == utf8_prefix::complete)
            out.append(pending_, i, n);
        else
            out += replacement;
        i += n;
    }
    pending_.erase(0, i);
    return out;
}

std::string token_stream::flush() {
    std::string out = pending_.empty() ? std::string() : std::string(replacement);
    pending_.clear();
    return out;
}

void token_stream::reset() noexcept {
    pending_.clear();
    first_ = true;
}

} // namespace bitnet::model
